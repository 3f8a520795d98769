/* SPDX-License-Identifier: Apache-2.0 */
/*
 * persist.h - inside vmm_persist, the engine that writes and reads
 * snapshots (the public face is api/snapshot.h, the format the pure codec
 * of snapshot/, docs/snapshot-format.md):
 *
 *   persist_take.c     the snapshot thread: pause, state, pages, resume, sync
 *   persist_dir.c      its directory and files, made before the thread starts
 *   persist_state.c    the state file's sections from a VM, and its write
 *   persist_pages.c    guest pages to and from the memory file, by a team
 *   persist_image.c    a restore: open the chain, check, read pages, load the state
 *   persist_state_read.c  one layer's state file read in bounded memory
 *
 * Nothing here keeps global state; each snapshot or image is its own.
 */
#ifndef VMM_PERSIST_H
#define VMM_PERSIST_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "dirtylog.h"
#include "harvest.h"
#include "snap_codec.h"
#include "state_versions.h"

struct cpu_features;
struct guest_mem;
struct vm;

/*
 * One parallel pass over guest RAM against the memory file, in 2 MiB
 * chunks that workers claim in turn. Writing: a page goes to the file when
 * it holds data (skipped when not resident and `skip_absent`: with no swap
 * such a page was never written) and its bit is set in present[slot].
 * With `only` (a live snapshot's later passes), just the pages only[slot]
 * marks are looked at, their dirty log re-armed first (dl), and written
 * when they hold data or were present before (a page that became zero
 * must not keep its old data in the file); those bits are cleared.
 * Reading: each page present[slot] marks is read from the file into RAM.
 * Runs of adjacent pages go in one pwrite/pread.
 */
struct page_io {
	const struct guest_mem *mem;
	int fd;			  /* the memory file */
	const uint64_t *slot_off; /* per slot: where its pages start in the file */
	uint64_t **present;	  /* per slot bitmaps: out when writing, in when reading */
	uint64_t **only;	  /* writing: NULL (every page), or the pages to look at */
	struct dirtylog *dl;	  /* with only: KVM_CLEAR_DIRTY_LOG before a page is read */
	bool writing;
	bool diff; /* with only: every page looked at is present; zero ones stay holes */
	bool skip_absent;
	bool direct;  /* writing: fd is O_DIRECT (small gaps are written too: persist_write.c) */
	bool seccomp; /* the workers install the snapshot filter */
	const bool *cancel; /* atomic, may be NULL: set, the pass stops with -ECANCELED */
	uint64_t *done;	    /* atomic: pages looked at (may be NULL) */
	uint64_t *moved;    /* atomic: pages written or read (may be NULL) */
};

/*
 * Runs the pass on `threads` workers (the caller's thread is one of them);
 * 0 or the first failure, -errno with one line naming the slot and offset.
 */
int page_io_run(struct page_io *io, unsigned threads, char *err, size_t errlen);

/* pwrite or pread of exactly len bytes at off, on short transfers and EINTR; -EIO at EOF. */
int persist_io_full(int fd, bool writing, void *buf, uint64_t len, uint64_t off);

/* The bitmaps for every slot of mem, zeroed; NULL when out of memory. */
uint64_t **page_bitmaps_new(const struct guest_mem *mem);
void page_bitmaps_free(uint64_t **b, const struct guest_mem *mem);

/* A live snapshot's dirty logging (persist_live.c). */
struct persist_live {
	struct dirtylog dl;
	struct harvest h;
	bool dl_on, h_on;
	uint64_t **only; /* the harvest's pending bitmaps, as page_io's `only` */
};

/* Dirty logging on (manual protect, every page protected) and the harvest. */
int live_begin(struct persist_live *l, struct vm *vm, char *err, size_t errlen);
/* When the live passes stop (0: the migration's default, migration_params.h). */
struct live_limits {
	uint64_t downtime_ms; /* the pause the estimate must fit */
	unsigned max_passes;  /* passes after which it pauses anyway */
	uint64_t max_time_ms; /* time after which it pauses anyway */
};

struct live_outcome {
	unsigned passes;	    /* made while the guest ran */
	bool converged;		    /* the rest fit the limit (false: a cap made it pause) */
	uint64_t expected_pause_us; /* the last estimate of the pause's writes; 0: none */
};

/*
 * The guest runs: pass 0 over all of RAM (a diff layer's: what the
 * tracking caught since its base), then passes over what it dirtied, until
 * precopy's decision (converge_decide()) says to stop: what is left fits
 * lim->downtime_ms and no longer halves, or a cap is reached. What is
 * pending then stays in l->only for live_final(). io->diff set.
 */
int live_passes(struct persist_live *l, struct page_io *io, unsigned threads,
		const struct live_limits *lim, struct live_outcome *out, char *err, size_t errlen);
/*
 * The vCPUs paused: the last harvest and its pages; `rearm` re-protects
 * them, so that the log goes on tracking for the next diff layer.
 */
int live_final(struct persist_live *l, struct page_io *io, unsigned threads, bool rearm, char *err,
	       size_t errlen);
/*
 * The vCPUs paused, every page just written: the log is harvested, what it
 * caught re-armed and forgotten, so it tracks writes from this moment on.
 */
int live_rearm(struct persist_live *l, char *err, size_t errlen);
/* Dirty logging off, the harvest freed; after a failure too. */
void live_end(struct persist_live *l);

/* What the state file holds besides what the VM can say itself. */
struct persist_state_in {
	struct snap_id id;
	uint64_t created_ns;
	uint8_t *vm_blob; /* vm_state_save() */
	size_t vm_len;
	uint8_t **vcpu_blob; /* vcpu_state_save() per vCPU */
	size_t *vcpu_len;
	uint64_t *const *present; /* per slot, from page_io_run() */
	/* A diff layer: its parent's id, its generation (>= 1), where the parent is. */
	struct snap_id parent;
	uint32_t generation;
	const char *parent_path;
	/* The front end's keys the CONFIG section carries (snapshot_params.desc_host). */
	const struct config_layer *desc_host;
};

/* The memslots as the format describes them; n = mem->nslots. */
void persist_slots(const struct guest_mem *mem, struct mig_slot_desc *out);

/* A feature set as raw words, ascending by (leaf, subleaf, reg); -ENOSPC past the format's cap. */
int persist_cpu_words(const struct cpu_features *f, struct snap_cpu_word *out, uint32_t *n);

/*
 * Builds the state file for vm into a malloc'd buffer (*out, *len): the
 * header, LAYOUT, INDEX, CONFIG, CPU, VM_STATE and a VCPU_STATE per vCPU;
 * *memory_file_len is the memory file's length the header names.
 */
int persist_state_build(struct vm *vm, const struct persist_state_in *in, uint8_t **out,
			size_t *len, uint64_t *memory_file_len, char *err, size_t errlen);

/*
 * Writes data through fd (the file `tmp` in dir_fd, opened empty), fsyncs
 * it, renames it to `name` and fsyncs the directory: `name` is then either
 * absent or whole, whatever crashes when.
 */
int persist_commit_file(int dir_fd, int fd, const char *tmp, const char *name, const void *data,
			size_t len, char *err, size_t errlen);

/* What an O_DIRECT write's buffer, offset and length are multiples of (a page: any device's block).
 */
#define SNAP_DIRECT_BLOCK 4096u

/* The state file while it is written; renamed to SNAP_STATE_FILE when whole. */
#define SNAP_STATE_TMP "state.tmp"

/*
 * persist_dir.c, the front end's thread: creates `dir` (0700) or checks it
 * is empty, and in it the memory file (O_DIRECT with `direct`) and
 * SNAP_STATE_TMP (0600, O_EXCL, no symlinks). 0 with all three fds open;
 * -errno with one line and nothing left open but *dir_fd (-1 when the
 * directory failed).
 */
int persist_create_files(const char *dir, bool direct, int *dir_fd, int *mem_fd, int *state_fd,
			 char *err, size_t errlen);
/* Removes what persist_create_files() made in dir_fd (a snapshot that failed). */
void persist_remove_files(int dir_fd);

/*
 * An open snapshot (api/snapshot.h): its state file decoded, its memory
 * file open. What the view points at is in head and held: a diff chain's
 * lower layers keep only LAYOUT, INDEX and PARENT_PATH (CONFIG, CPU and
 * the state blobs are the top layer's: their view fields are NULL).
 */
struct snapshot_image {
	char dir[PATH_MAX];
	uint8_t *head; /* the header and the section table */
	uint8_t *held; /* the sections kept, each at the next multiple of 8 */
	struct snap_view v;
	int mem_fd;
	char *config;		       /* NUL-terminated copy of CONFIG (the top layer's) */
	struct snapshot_image *parent; /* a diff layer's, down to the full snapshot */
};

/*
 * What a restore holds of a chain's state files, whatever their headers
 * declare: the sections it keeps (every layer's header, table, LAYOUT,
 * INDEX and PARENT_PATH; the top layer's CONFIG, CPU and state blobs), at
 * most RESTORE_HOLD_MAX together, and one buffer of RESTORE_READ_BUF that
 * everything else streams through to have its CRC and structure checked.
 * On top of that come the page bitmaps (a bit per page of guest RAM per
 * layer). The files together declare at most SNAP_CHAIN_STATE_MAX.
 */
#define RESTORE_HOLD_MAX (128ull << 20)
#define RESTORE_READ_BUF (1u << 20) /* >= every read section but LAYOUT's and INDEX's max */

/* A chain's budgets, charged layer by layer before the bytes are read. */
struct chain_budget {
	uint64_t declared; /* state_len of the layers met so far */
	uint64_t held;	   /* bytes kept so far */
	uint32_t layers;
	uint8_t *buf; /* RESTORE_READ_BUF bytes, for every layer */
};

/*
 * What a parent layer must be, checked on its header before the rest of
 * its state is read: a loop of PARENT_PATHs, or a path to another VM's
 * snapshot, is refused at 128 bytes, not after a gigabyte.
 */
struct layer_want {
	struct snap_id id;
	uint32_t generation;
};

/*
 * Reads img's state file (fd, of file_len bytes; img->dir names it in
 * messages): the top layer (want NULL) keeps all it reads, a parent only
 * what a restore needs of it. 0 with img->v, head and held set; -errno with
 * "DIR/state: ..." in err.
 */
int persist_state_read(struct snapshot_image *img, int fd, uint64_t file_len,
		       const struct layer_want *want, struct chain_budget *b, char *err,
		       size_t errlen);

/* Layers in the chain: 1 for a full snapshot. */
uint32_t image_depth(const struct snapshot_image *img);

/*
 * The restore's steps (persist_image.c), for the eager and the lazy
 * restore: the layout (the machine's guest_mem_layout_check()), vCPUs and
 * CPU features before any page is read; the state last, in the machine's
 * order (vm_load_whole()).
 */
int image_check_vm(struct snapshot_image *img, struct vm *vm, char *err, size_t errlen);
/* Per slot: the present bitmap and where its pages start; *npresent in all. */
int image_present(struct snapshot_image *img, const struct guest_mem *mem, uint64_t ***present,
		  uint64_t **off, uint64_t *npresent, char *err, size_t errlen);
int image_load_state(struct snapshot_image *img, struct vm *vm, char *err, size_t errlen);

/*
 * persist_form.c: the form of a snapshot's state blobs: p->format_version's
 * release (which must express every component vm has), or this build's
 * newest. 0, or -ENOENT / -EPROTONOSUPPORT with err naming what is wrong.
 * Before the VM pauses: the control thread.
 */
struct snapshot_params;
int persist_choose_form(struct vm *vm, const struct snapshot_params *p, struct state_form *f,
			char *err, size_t errlen);
/*
 * persist_form.c: the paused VM's state blobs in form f into in (its
 * vm_blob, vcpu_blob[], lengths): the machine's whole save
 * (vm_save_whole()), handed over to the state file's sections. The
 * snapshot thread, VM paused and vCPUs stopped; the caller frees them
 * whatever happens.
 */
int persist_save_blobs(struct vm *vm, const struct state_form *f, struct persist_state_in *in,
		       char *err, size_t errlen);

#endif /* VMM_PERSIST_H */
