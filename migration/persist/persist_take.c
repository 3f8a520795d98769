/* SPDX-License-Identifier: Apache-2.0 */
/*
 * persist_take.c - `vmm snapshot`: the snapshot thread (api/snapshot.h).
 *
 * The front end's thread (snapshot_start) checks the directory and opens
 * every file the snapshot writes, so the snapshot thread opens nothing
 * (its seccomp filter has no open). The thread then:
 *   1. pauses the VM and saves the VM and vCPU state blobs;
 *   2. writes every page that holds data at its fixed offset of the memory
 *      file (page_io_run(): several workers, runs of pages per pwrite);
 *   3. resumes the VM (unless --stop or the user had paused it): the pause
 *      ends here, since the page cache now holds the copy;
 *   4. fdatasyncs the memory file and writes the state file last, through
 *      state.tmp and a rename, so a crash anywhere before leaves no `state`
 *      and so nothing a restore would take for a snapshot.
 * A failure removes what it wrote and resumes the VM, --stop or not: a VM
 * is never stopped without its snapshot.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "host_swap.h"
#include "le.h"
#include "persist.h"
#include "migration_seccomp.h"
#include "snapshot.h"
#include "state_buf.h"
#include "vcpu_state.h"
#include "vm.h"
#include "vm_state.h"

struct snapshot {
	struct vm *vm;
	struct snapshot_params p;
	struct state_form form; /* the state's form: p.format_version's release, or the newest */
	pthread_t thread;
	bool started;
	int done_fd;		       /* eventfd: the thread has finished */
	bool skip_absent;	       /* no swap: pages not resident were never written */
	bool cancel;		       /* atomic: snapshot_free() wants the thread to end now */
	int dir_fd, mem_fd, state_fd;  /* opened by snapshot_start(), the thread's to close */
	pthread_mutex_t lock;	       /* prog's non-atomic fields */
	struct snapshot_progress prog; /* state, id, times, error: under lock */
	uint64_t pages_done, pages_written; /* atomic */
	uint64_t start_ns, end_ns;	    /* end_ns under lock */
	/*
	 * Dirty tracking for the next diff layer: the thread's while it runs,
	 * kept when it completed with p.track, handed to the next snapshot by
	 * snapshot_start() (NULL: no base).
	 */
	struct persist_live *track;
	struct snap_id id;	       /* written: the next layer's parent */
	uint32_t generation;	       /* this one's */
	struct snap_id parent;	       /* a diff layer's */
	char parent_path[PATH_MAX];    /* a diff layer's: where its parent was written */
	struct config_layer desc_host; /* p.desc_host's copy (keys NULL: none) */
};

const char *snapshot_state_name(enum snapshot_state s)
{
	switch (s) {
	case SNAPSHOT_NONE:
		return "none";
	case SNAPSHOT_ACTIVE:
		return "active";
	case SNAPSHOT_COMPLETED:
		return "completed";
	case SNAPSHOT_FAILED:
		return "failed";
	}
	return "unknown";
}

static void drop_track(struct snapshot *s)
{
	if (!s->track)
		return;
	live_end(s->track);
	free(s->track);
	s->track = NULL;
}

static uint64_t wall_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int new_id(struct snap_id *id)
{
	do {
		if (getrandom(id->b, sizeof(id->b), 0) != (ssize_t)sizeof(id->b))
			return -EIO;
	} while (snap_id_is_zero(id));
	return 0;
}

static void free_blobs(struct persist_state_in *in, unsigned nvcpus)
{
	free(in->vm_blob);
	for (unsigned i = 0; in->vcpu_blob && i < nvcpus; i++)
		free(in->vcpu_blob[i]);
	free(in->vcpu_blob);
	free(in->vcpu_len);
}

/*
 * The pages, each mode its way, and the pause. Live: passes while the guest
 * runs, then the last one paused (a diff layer's first pass: what the
 * inherited tracking caught). Diff: the pages the tracking caught, paused. Full: every page,
 * paused. With p.track the log is left re-armed at the pause, so it catches exactly what the guest
 * writes after this snapshot; without, it is switched off.
 */
static int pages_and_pause(struct snapshot *s, struct persist_state_in *in, struct page_io *io,
			   char *err, size_t errlen)
{
	struct vm *vm = s->vm;
	uint64_t t0;
	int ret = 0;

	io->diff = s->p.diff;
	if (!s->track && (s->p.live || s->p.track)) {
		s->track = calloc(1, sizeof(*s->track));
		ret = s->track ? live_begin(s->track, vm, err, errlen) : -ENOMEM;
	}
	if (!ret && s->p.live) {
		const struct live_limits lim = {.downtime_ms = s->p.limits.downtime_ms,
						.max_passes = s->p.limits.max_passes,
						.max_time_ms = s->p.limits.max_time_ms};
		struct live_outcome o;

		ret = live_passes(s->track, io, s->p.threads, &lim, &o, err, errlen);
		pthread_mutex_lock(&s->lock);
		s->prog.passes = o.passes;
		s->prog.converged = o.converged;
		s->prog.expected_pause_ms = o.expected_pause_us / 1000;
		pthread_mutex_unlock(&s->lock);
	}
	if (ret)
		return ret;
	t0 = now_ns();
	vm_pause(vm);
	/* A stopping VM does not park its vCPUs: what would be saved is not one moment. */
	if (vm_stopping(vm)) {
		snprintf(err, errlen, "the VM stopped during the snapshot");
		return -ECANCELED;
	}
	ret = persist_save_blobs(vm, &s->form, in, err, errlen);
	if (!ret && (s->p.live || s->p.diff))
		ret = live_final(s->track, io, s->p.threads, s->p.track, err, errlen);
	else if (!ret)
		ret = page_io_run(io, s->p.threads, err, errlen);
	if (!ret && s->p.track && !s->p.live && !s->p.diff)
		ret = live_rearm(s->track, err, errlen);
	/* A failed snapshot never stops the VM: it runs on as before. */
	if (!s->p.keep_paused && (ret || !s->p.stop))
		vm_resume(vm);
	pthread_mutex_lock(&s->lock);
	s->prog.pause_us = (now_ns() - t0) / 1000;
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* Steps 1-3: paused from here to the resume; returns with the VM as the caller wants it. */
static int paused_part(struct snapshot *s, struct persist_state_in *in, char *err, size_t errlen)
{
	struct vm *vm = s->vm;
	const struct guest_mem *ram = vm_mem(vm);
	struct page_io io = {.mem = ram,
			     .fd = s->mem_fd,
			     .present = (uint64_t **)in->present,
			     .writing = true,
			     .skip_absent = s->skip_absent,
			     .direct = s->p.direct_io,
			     .seccomp = vm_config(vm)->seccomp,
			     .cancel = &s->cancel,
			     .done = &s->pages_done,
			     .moved = &s->pages_written};
	uint64_t *slot_off = NULL, file_len;
	struct mig_slot_desc *slots = calloc(ram->nslots, sizeof(*slots));
	uint8_t *layout = calloc(ram->nslots, SNAP_SLOT_LEN);
	int ret = -ENOMEM;

	slot_off = calloc(ram->nslots, sizeof(*slot_off));
	if (!slots || !layout || !slot_off) {
		snprintf(err, errlen, "%s", strerror(ENOMEM));
		goto out;
	}
	persist_slots(ram, slots);
	file_len = snap_layout_encode(layout, slots, ram->nslots);
	/* Each LAYOUT entry is gpa, size, file_offset (docs/snapshot-format.md). */
	for (uint32_t i = 0; i < ram->nslots; i++)
		slot_off[i] = le_get64(layout + i * SNAP_SLOT_LEN + 16);
	io.slot_off = slot_off;
	/*
	 * The file at its length before a page is written: every write then
	 * lands inside it, and none has to move its end (an inode update, in
	 * the journal, per write). Sparse: this allocates nothing.
	 */
	if (ftruncate(s->mem_fd, (off_t)file_len) < 0) {
		ret = -errno;
		snprintf(err, errlen, "sizing the memory file: %s", strerror(errno));
		goto out;
	}
	ret = pages_and_pause(s, in, &io, err, errlen);
out:
	free(slots);
	free(layout);
	free(slot_off);
	return ret;
}

/*
 * The memory file's header at offset 0. With O_DIRECT the write must be a
 * whole aligned block: the header and zeros (which read as the hole they
 * replace).
 */
static int write_mem_header(int fd, const uint8_t hb[SNAP_MEM_HEADER_LEN], bool direct)
{
	uint8_t *block = NULL;
	int ret;

	if (!direct)
		return persist_io_full(fd, true, (void *)hb, SNAP_MEM_HEADER_LEN, 0);
	block = aligned_alloc(SNAP_DIRECT_BLOCK, SNAP_DIRECT_BLOCK);
	if (!block)
		return -ENOMEM;
	memset(block, 0, SNAP_DIRECT_BLOCK);
	memcpy(block, hb, SNAP_MEM_HEADER_LEN);
	ret = persist_io_full(fd, true, block, SNAP_DIRECT_BLOCK, 0);
	free(block);
	return ret;
}

/* Step 4 and the memory header: the snapshot becomes whole, or is removed. */
static int take(struct snapshot *s, char *err, size_t errlen)
{
	struct vm *vm = s->vm;
	const struct guest_mem *ram = vm_mem(vm);
	struct persist_state_in in = {.created_ns = wall_clock_ns()};
	struct snap_mem_header mh = {.version_major = SNAP_VERSION_MAJOR,
				     .version_minor = SNAP_VERSION_MINOR};
	uint8_t mhb[SNAP_MEM_HEADER_LEN], *state = NULL;
	uint64_t **present = page_bitmaps_new(ram), t1;
	size_t state_len = 0;
	int ret = present ? new_id(&in.id) : -ENOMEM;

	if (ret) {
		snprintf(err, errlen, "%s", strerror(-ret));
		goto out;
	}
	in.present = present;
	in.parent = s->parent;
	in.generation = s->generation;
	in.parent_path = s->p.diff ? s->parent_path : NULL;
	in.desc_host = &s->desc_host;
	ret = paused_part(s, &in, err, errlen);
	if (ret)
		goto out;
	t1 = now_ns();
	ret = persist_state_build(vm, &in, &state, &state_len, &mh.file_len, err, errlen);
	if (ret)
		goto out;
	mh.id = in.id;
	snap_mem_header_encode(mhb, &mh);
	ret = write_mem_header(s->mem_fd, mhb, s->p.direct_io);
	if (!ret && fdatasync(s->mem_fd) < 0)
		ret = -errno;
	if (ret) {
		snprintf(err, errlen, "writing the memory file: %s", strerror(-ret));
		goto out;
	}
	ret = persist_commit_file(s->dir_fd, s->state_fd, SNAP_STATE_TMP, SNAP_STATE_FILE, state,
				  state_len, err, errlen);
	if (!ret) {
		s->id = in.id;
		pthread_mutex_lock(&s->lock);
		s->prog.sync_us = (now_ns() - t1) / 1000;
		s->prog.state_bytes = state_len;
		snap_id_hex(&in.id, s->prog.id);
		pthread_mutex_unlock(&s->lock);
	}
out:
	if (ret) {
		unlinkat(s->dir_fd, SNAP_STATE_TMP, 0);
		unlinkat(s->dir_fd, SNAP_MEMORY_FILE, 0);
	}
	/*
	 * Tracking goes on only from a snapshot that exists: after a failure
	 * its harvest has taken bits that no layer holds. Not after --stop.
	 */
	if (ret || !s->p.track || s->p.stop)
		drop_track(s);
	free(state);
	free_blobs(&in, vm_nvcpus(vm));
	page_bitmaps_free(present, ram);
	return ret;
}

static void *snapshot_main(void *arg)
{
	struct snapshot *s = arg;
	char err[sizeof(s->prog.error)] = "";
	uint64_t one = 1;
	int ret;

	seccomp_thread_enter_or_stop(SECCOMP_THREAD_SNAPSHOT, vm_config(s->vm)->seccomp);
	ret = take(s, err, sizeof(err));
	close(s->mem_fd);
	close(s->state_fd);
	close(s->dir_fd);
	s->mem_fd = s->state_fd = s->dir_fd = -1;
	pthread_mutex_lock(&s->lock);
	s->prog.state = ret ? SNAPSHOT_FAILED : SNAPSHOT_COMPLETED;
	if (ret)
		snprintf(s->prog.error, sizeof(s->prog.error), "%s", err[0] ? err : strerror(-ret));
	s->end_ns = now_ns();
	pthread_mutex_unlock(&s->lock);
	if (write(s->done_fd, &one, sizeof(one)) < 0) {
		/* an eventfd write fails only on overflow: it is readable then */
	}
	return NULL;
}

/* A diff layer needs the last snapshot's tracking, and room in the chain. */
static int check_base(const struct snapshot_params *p, const struct snapshot *prev, char *err,
		      size_t errlen)
{
	if (!p->diff)
		return 0;
	if (!prev || !prev->track) {
		snprintf(err, errlen,
			 "no base for --diff: the last snapshot of this VM left no dirty tracking "
			 "(set [snapshot] track_dirty = true and take a full snapshot first; a "
			 "failed snapshot or a migration ends the tracking)");
		return -ENOENT;
	}
	if (prev->generation + 1 > SNAP_LAYERS_MAX) {
		snprintf(err, errlen, "%u diff layers on one base already: take a full snapshot",
			 SNAP_LAYERS_MAX);
		return -EINVAL;
	}
	return 0;
}

int snapshot_start(struct vm *vm, const struct snapshot_params *p, struct snapshot *prev,
		   struct snapshot **out, char *err, size_t errlen)
{
	struct snapshot *s;
	struct state_form form;
	int ret;

	*out = NULL;
	if (!p->dir[0] || p->threads > SNAPSHOT_THREADS_MAX) {
		snprintf(err, errlen,
			 !p->dir[0] ? "no directory to write the snapshot to"
				    : "threads: at most %u",
			 SNAPSHOT_THREADS_MAX);
		return -EINVAL;
	}
	ret = check_base(p, prev, err, errlen);
	if (!ret)
		ret = persist_choose_form(vm, p, &form, err, errlen);
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->vm = vm;
	s->p = *p;
	if (p->desc_host)
		s->desc_host = *p->desc_host;
	s->p.desc_host = NULL; /* the caller's layer: only the copy is kept */
	s->form = form;
	s->p.threads = p->threads ? p->threads : SNAPSHOT_THREADS_DEFAULT;
	s->mem_fd = s->state_fd = s->dir_fd = -1;
	s->skip_absent = !host_has_swap(); /* here: the thread may not open /proc/swaps */
	s->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_init(&s->lock, NULL);
	s->start_ns = now_ns();
	s->prog = (struct snapshot_progress){.state = SNAPSHOT_ACTIVE,
					     .stop = p->stop,
					     .live = p->live,
					     .diff = p->diff,
					     .generation = p->diff ? prev->generation + 1 : 0,
					     .ram_bytes = vm_mem(vm)->size,
					     .pages_total = vm_mem(vm)->size / GUEST_PAGE_SIZE};
	snprintf(s->prog.dir, sizeof(s->prog.dir), "%s", p->dir);
	if (p->diff) {
		s->parent = prev->id;
		s->generation = prev->generation + 1;
		snprintf(s->parent_path, sizeof(s->parent_path), "%s", prev->p.dir);
		snap_id_hex(&prev->id, s->prog.parent);
	}
	ret = s->done_fd < 0 ? -errno
			     : persist_create_files(p->dir, p->direct_io, &s->dir_fd, &s->mem_fd,
						    &s->state_fd, err, errlen);
	if (!ret) {
		/* A diff layer carries the tracking on; any other snapshot starts afresh. */
		if (p->diff) {
			s->track = prev->track;
			prev->track = NULL;
		} else if (prev) {
			drop_track(prev);
		}
		ret = -pthread_create(&s->thread, NULL, snapshot_main, s);
		s->started = !ret;
		if (ret && p->diff) {
			prev->track = s->track; /* nothing happened: the base keeps it */
			s->track = NULL;
		}
		if (ret) {
			snprintf(err, errlen, "cannot start the snapshot thread: %s",
				 strerror(-ret));
			persist_remove_files(s->dir_fd);
		}
	}
	if (ret) {
		if (!err[0])
			snprintf(err, errlen, "%s", strerror(-ret));
		snapshot_free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void snapshot_untrack(struct snapshot *s)
{
	if (s)
		drop_track(s);
}

int snapshot_done_fd(const struct snapshot *s)
{
	return s->done_fd;
}

void snapshot_get_progress(struct snapshot *s, struct snapshot_progress *out)
{
	pthread_mutex_lock(&s->lock);
	*out = s->prog;
	out->total_ms = ((s->end_ns ? s->end_ns : now_ns()) - s->start_ns) / 1000000;
	pthread_mutex_unlock(&s->lock);
	out->pages_done = __atomic_load_n(&s->pages_done, __ATOMIC_RELAXED);
	out->pages_written = __atomic_load_n(&s->pages_written, __ATOMIC_RELAXED);
}

void snapshot_free(struct snapshot *s)
{
	if (!s)
		return;
	/* The VM is going (SIGTERM, its end): a snapshot still running fails at its next chunk. */
	__atomic_store_n(&s->cancel, true, __ATOMIC_RELEASE);
	if (s->started)
		pthread_join(s->thread, NULL);
	drop_track(s);
	if (s->mem_fd >= 0)
		close(s->mem_fd);
	if (s->state_fd >= 0)
		close(s->state_fd);
	if (s->dir_fd >= 0)
		close(s->dir_fd);
	if (s->done_fd >= 0)
		close(s->done_fd);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
