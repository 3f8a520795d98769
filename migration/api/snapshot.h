/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot.h - snapshots to a directory and restores from one (the format:
 * docs/snapshot-format.md), the engine's second public face beside
 * migration.h. A snapshot is a migration whose peer is a file: the VM's
 * state blobs and its RAM, with each page at a fixed offset of a sparse
 * memory file, written by several threads.
 *
 * Taking one: snapshot_start() checks the directory and spawns the
 * snapshot thread, which pauses the VM, saves its state, writes every page
 * that holds data, resumes the VM (unless asked to leave it paused), then
 * makes the files durable and writes the state file last, so that a crash
 * never leaves a directory that looks like a complete snapshot. The front
 * end's event loop watches snapshot_done_fd() and reads the outcome with
 * snapshot_get_progress(); snapshot_free() joins the thread.
 *
 * Restoring: snapshot_image_open() reads and checks the state file and the
 * memory file's header (no KVM needed: a corrupt, truncated or foreign
 * snapshot is refused here with one line naming what is wrong); the front
 * end builds a VM from snapshot_image_config() (and the user's --set),
 * then snapshot_image_restore() checks the VM against the snapshot
 * (layout, vCPUs, CPU features), reads the pages in parallel and loads the
 * state. The VM is then started as a booted one would be.
 *
 * Threads: every function here is called from one thread (the front end's
 * event loop, or `vmm run` before the loop starts); the snapshot thread and
 * its page workers are the engine's own.
 */
#ifndef VMM_SNAPSHOT_H
#define VMM_SNAPSHOT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "migration.h"

struct vm;
struct snapshot;
struct snapshot_image;

/* Page workers when the caller asks for 0. */
#define SNAPSHOT_THREADS_DEFAULT 4u
#define SNAPSHOT_THREADS_MAX	 64u

struct snapshot_params {
	char dir[PATH_MAX];
	/* Leave the VM paused when done (the front end then stops it): `vmm snapshot --stop`. */
	bool stop;
	/* The VM was paused by its user: it stays paused afterwards. */
	bool keep_paused;
	/*
	 * `vmm snapshot --live`: copy the pages while the guest runs, pass
	 * after pass over what it dirtied (the dirty log, as a migration's
	 * precopy), and pause only for the last pass and the state. When to
	 * pause is precopy's decision (migration/dirty/converge.h), with the
	 * limits of `limits` that snapshot_live_param() names: once what is
	 * left is expected to take at most downtime_ms and no longer halves
	 * pass to pass, or after max_passes passes or max_time_ms. A limit
	 * left 0: the migration's default (migration_params.h).
	 */
	bool live;
	struct migration_params limits;
	/*
	 * `vmm snapshot --diff`: a layer holding only the pages written since
	 * the last snapshot of this VM, which must have left dirty tracking on
	 * ([snapshot] track_dirty) and which a restore of this layer applies
	 * first. Not with live: the layer is written in the pause.
	 */
	bool diff;
	/* [snapshot] track_dirty: dirty logging stays on after it, for the next diff */
	bool track;
	/*
	 * [snapshot] direct_io: the memory file is written with O_DIRECT (guest
	 * RAM straight to the device, nothing left in the page cache); the file
	 * system must support it.
	 */
	bool direct_io;
	unsigned threads; /* page writers; 0: SNAPSHOT_THREADS_DEFAULT */
	/*
	 * `vmm snapshot --format-version V`: write the state in the form
	 * release V restores (docs/compatibility.md); "": this build's newest.
	 * snapshot_start() refuses a release this build does not know, or a VM
	 * with a component that release cannot express, naming it.
	 */
	char format_version[16];
	/*
	 * The front end's keys the snapshot's config carries ([console] output,
	 * [api] socket: config_format_with()), which a restore takes back.
	 * Copied at snapshot_start(); the struct it points into must outlive
	 * the snapshot. NULL: none.
	 */
	const struct config_layer *desc_host;
};

enum snapshot_state {
	SNAPSHOT_NONE,
	SNAPSHOT_ACTIVE,
	SNAPSHOT_COMPLETED,
	SNAPSHOT_FAILED,
};

/* A snapshot's progress and outcome (docs/api.md, "the snapshot object"). */
struct snapshot_progress {
	enum snapshot_state state;
	char dir[PATH_MAX];
	char id[33];	 /* the snapshot's id (32 hex digits), once written */
	bool stop;	 /* the VM stays paused and is then stopped */
	bool live;	 /* pages copied while the guest ran (--live) */
	unsigned passes; /* live: passes over dirtied pages before the pause */
	bool converged;	 /* live: the rest fit downtime_ms (false: a cap made it pause) */
	uint64_t
	    expected_pause_ms; /* live: what the last decision expected the pause's pages to take */
	bool diff;	       /* a diff layer */
	unsigned generation;   /* 0 full; a diff layer: its parent's + 1 */
	char parent[33];       /* a diff layer's parent's id */
	uint64_t ram_bytes;    /* guest RAM */
	uint64_t pages_total;  /* pages of guest RAM */
	uint64_t pages_done;   /* of which looked at so far */
	uint64_t pages_written; /* of which held data and went to the file */
	uint64_t state_bytes;	/* the state file */
	uint64_t pause_us;	/* the VM paused: state saved and pages written */
	uint64_t sync_us;	/* after the pause: fdatasync, the state file, the rename */
	uint64_t total_ms;	/* start to now, or to the end */
	char error[512];	/* the reason, when failed */
};

/*
 * Checks p (the directory is created when absent, and must then be empty:
 * a snapshot never overwrites another) and starts the snapshot thread.
 * `prev` is this VM's last snapshot (finished) or NULL: a diff layer takes
 * its dirty tracking over; any other snapshot ends it. 0, or -errno with a
 * one-line message: -EINVAL bad parameters, -ENOENT no base for a diff,
 * -EEXIST the directory is not empty, or what mkdir/open said.
 */
int snapshot_start(struct vm *vm, const struct snapshot_params *p, struct snapshot *prev,
		   struct snapshot **out, char *err, size_t errlen);

/*
 * The migration parameters (migration_params.h) a live snapshot takes, as
 * the front end offers them (`vmm snapshot --live --NAME`, the PUT's
 * members): precopy's convergence limits, downtime_ms, max_passes and
 * max_time_ms. Pure; any thread.
 */
bool snapshot_live_param(const struct migration_param *d);

/* Ends s's dirty tracking (a migration takes the log over); the next diff has no base. */
void snapshot_untrack(struct snapshot *s);

/* Readable (an eventfd) once the snapshot thread has finished, whatever the outcome. */
int snapshot_done_fd(const struct snapshot *s);

void snapshot_get_progress(struct snapshot *s, struct snapshot_progress *out);

/* Joins the thread (which has finished, or finishes first) and frees it all. */
void snapshot_free(struct snapshot *s);

/* What a restore reports. */
struct snapshot_restore_stats {
	uint64_t pages_read; /* present pages read into guest RAM */
	uint64_t read_us;    /* reading them, all workers */
	uint64_t state_us;   /* loading the VM and vCPU state */
	uint64_t setup_us;   /* --lazy: bitmaps, RAM emptied, registered, threads started */
	unsigned threads;    /* page readers */
	char id[33];	     /* the snapshot's id */
};

/*
 * Opens DIR: reads the state file (bounded by its header), decodes and
 * checks all of it, opens the memory file and checks its header against
 * the state. 0, or -errno with one line naming what is wrong ("snapshot
 * /x: state file: ..."); -ENOENT when DIR holds no snapshot.
 */
int snapshot_image_open(const char *dir, struct snapshot_image **out, char *err, size_t errlen);

/* The VM's config as the snapshot holds it (INI text, NUL terminated). */
const char *snapshot_image_config(const struct snapshot_image *img);

/*
 * Into vm (created from the snapshot's config, vm_create() without boot
 * setup, vCPUs not started): the checks against the VM and this host,
 * every present page read into guest RAM by `threads` workers (0: the
 * default), then the VM state and each vCPU's. -errno with one line; a
 * failure may leave the VM half restored: destroy it.
 */
int snapshot_image_restore(struct snapshot_image *img, struct vm *vm, unsigned threads,
			   struct snapshot_restore_stats *st, char *err, size_t errlen);

/*
 * The same with --lazy: the checks and the state as above, then guest RAM
 * registered with userfaultfd and two threads started that fill it (a
 * page the guest touches first, then everything else in the background);
 * the vCPUs may start at once. The VM must not have populated its RAM
 * ([vm] prealloc off). *out lives until the vCPUs have ended:
 * snapshot_lazy_free() after vm_join().
 */
struct snapshot_lazy;
int snapshot_image_restore_lazy(struct snapshot_image *img, struct vm *vm,
				struct snapshot_lazy **out, struct snapshot_restore_stats *st,
				char *err, size_t errlen);

struct snapshot_lazy_progress {
	bool done;	       /* every present page is in; RAM is plain memory again */
	bool failed;	       /* a page could not be read: the VM was stopped with why */
	uint64_t pages_total;  /* pages the snapshot holds */
	uint64_t pages_in;     /* of which placed */
	uint64_t faults;       /* of which placed because the guest touched them first */
	uint64_t zero_faults;  /* pages the guest touched that the snapshot holds as zero */
	uint64_t fault_max_us; /* the slowest fault's service */
	uint64_t done_ms;      /* from the start to done */
};

/* Readable (an eventfd) once the restore has ended: done, failed or stopped. */
int snapshot_lazy_done_fd(const struct snapshot_lazy *l);
void snapshot_lazy_get(struct snapshot_lazy *l, struct snapshot_lazy_progress *out);
/* Stops and joins the threads (whatever is left stays missing), closes it all. */
void snapshot_lazy_free(struct snapshot_lazy *l);

void snapshot_image_close(struct snapshot_image *img);

/* "active", "completed", ... */
const char *snapshot_state_name(enum snapshot_state s);

#endif /* VMM_SNAPSHOT_H */
