/* SPDX-License-Identifier: Apache-2.0 */
/*
 * persist_image.c - `vmm run --restore DIR` (api/snapshot.h): the files
 * are read and every check the format defines passes before any of the VM
 * is touched (docs/snapshot-format.md, "Restore: what is checked"); then
 * the pages are read in parallel straight into guest RAM (absent ones are
 * holes: fresh anonymous memory is already zero) and the state blobs are
 * loaded, VM-wide first, as a migration target loads them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bitmap.h"
#include "clock.h"
#include "persist.h"
#include "snapshot.h"
#include "vm.h"
#include "vm_state.h"

/* Reads exactly len bytes at off; -EIO when the file ends first. */
static int read_at(int fd, void *buf, size_t len, off_t off)
{
	return persist_io_full(fd, false, buf, len, (uint64_t)off);
}

static int open_in(int dir_fd, const char *dir, const char *name, int *fd, struct stat *st,
		   char *err, size_t errlen)
{
	*fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (*fd < 0 && errno == ENOENT) {
		snprintf(err, errlen,
			 "%s holds no snapshot: no %s file (a snapshot that was never completed "
			 "has none)",
			 dir, name);
		return -ENOENT;
	}
	if (*fd < 0 || fstat(*fd, st) < 0) {
		int e = errno;

		snprintf(err, errlen, "%s/%s: %s", dir, name, strerror(e));
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -e;
	}
	if (!S_ISREG(st->st_mode)) {
		snprintf(err, errlen, "%s/%s: not a regular file", dir, name);
		close(*fd);
		*fd = -1;
		return -EINVAL;
	}
	return 0;
}

static int open_memory(struct snapshot_image *img, int dir_fd, char *err, size_t errlen)
{
	uint8_t hb[SNAP_MEM_HEADER_LEN];
	struct snap_mem_header mh;
	struct stat st;
	char e[384] = "";
	int ret = open_in(dir_fd, img->dir, SNAP_MEMORY_FILE, &img->mem_fd, &st, err, errlen);

	if (ret)
		return ret;
	ret = read_at(img->mem_fd, hb,
		      st.st_size < (off_t)sizeof(hb) ? (size_t)st.st_size : sizeof(hb), 0);
	if (!ret)
		ret = snap_mem_header_decode(
		    hb, st.st_size < (off_t)sizeof(hb) ? (size_t)st.st_size : sizeof(hb), &mh, e,
		    sizeof(e));
	if (!ret)
		ret = snap_mem_check(&img->v, &mh, (uint64_t)st.st_size, e, sizeof(e));
	if (ret)
		snprintf(err, errlen, "%s/%s: %s", img->dir, SNAP_MEMORY_FILE,
			 e[0] ? e : strerror(-ret));
	return ret;
}

/* One layer: its state file read and checked, its memory file open and checked. */
static int open_layer(const char *dir, const struct layer_want *want, struct chain_budget *b,
		      struct snapshot_image **out, char *err, size_t errlen)
{
	struct snapshot_image *img = calloc(1, sizeof(*img));
	struct stat st;
	int dir_fd, fd, ret;

	*out = NULL;
	if (!img)
		return -ENOMEM;
	img->mem_fd = -1;
	snprintf(img->dir, sizeof(img->dir), "%s", dir);
	dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the snapshot directory %s: %s", dir,
			 strerror(errno));
		snapshot_image_close(img);
		return ret;
	}
	ret = open_in(dir_fd, img->dir, SNAP_STATE_FILE, &fd, &st, err, errlen);
	if (!ret) {
		ret = persist_state_read(img, fd, (uint64_t)st.st_size, want, b, err, errlen);
		close(fd);
	}
	if (!ret)
		ret = open_memory(img, dir_fd, err, errlen);
	close(dir_fd);
	if (ret) {
		snapshot_image_close(img);
		return ret;
	}
	*out = img;
	return 0;
}

/*
 * A diff layer's parents, down to the full snapshot, each found where the
 * layer above says it was written (PARENT_PATH), and each link checked as
 * it is met (snap_layer_check(): id, generation, layout), within the
 * chain's budgets: nothing waits for the whole chain to be read.
 */
static int open_chain(struct snapshot_image *top, struct chain_budget *b, char *err, size_t errlen)
{
	struct snapshot_image *l = top;
	char path[PATH_MAX], e[512] = "";
	int ret;

	while (l->v.h.flags & SNAP_F_DIFF) {
		struct layer_want want = {.id = l->v.h.parent, .generation = l->v.h.generation - 1};

		/* Absolute: never resolved against this process's working directory. */
		if (!l->v.parent_path || !l->v.parent_path_len ||
		    l->v.parent_path_len >= sizeof(path) || l->v.parent_path[0] != '/' ||
		    b->layers > SNAP_LAYERS_MAX) {
			snprintf(err, errlen,
				 "%s: a diff layer that does not say where its parent is (an "
				 "absolute path)",
				 l->dir);
			return -EPROTO;
		}
		memcpy(path, l->v.parent_path, l->v.parent_path_len);
		path[l->v.parent_path_len] = '\0';
		ret = open_layer(path, &want, b, &l->parent, e, sizeof(e));
		if (ret) {
			snprintf(err, errlen, "%s is a diff layer whose parent cannot be read: %s",
				 l->dir, e);
			return ret;
		}
		/* The layer's number in the chain is its generation: the base's is 0. */
		ret = snap_layer_check(&l->parent->v, &l->v, l->v.h.generation, e, sizeof(e));
		if (ret) {
			snprintf(err, errlen, "%s: %s", top->dir, e);
			return ret;
		}
		l = l->parent;
	}
	return 0;
}

int snapshot_image_open(const char *dir, struct snapshot_image **out, char *err, size_t errlen)
{
	struct chain_budget b = {.buf = malloc(RESTORE_READ_BUF)};
	struct snapshot_image *img = NULL;
	int ret = b.buf ? open_layer(dir, NULL, &b, &img, err, errlen) : -ENOMEM;

	*out = NULL;
	if (!ret)
		ret = open_chain(img, &b, err, errlen);
	free(b.buf);
	if (!ret) {
		img->config = malloc(img->v.config_len + 1u);
		ret = img->config ? 0 : -ENOMEM;
	}
	if (ret) {
		if (ret == -ENOMEM && !err[0])
			snprintf(err, errlen, "%s", strerror(ENOMEM));
		snapshot_image_close(img);
		return ret;
	}
	/* CONFIG, CPU and the state come from the top layer; memory from all of them. */
	memcpy(img->config, img->v.config, img->v.config_len);
	img->config[img->v.config_len] = '\0';
	*out = img;
	return 0;
}

const char *snapshot_image_config(const struct snapshot_image *img)
{
	return img->config;
}

/*
 * The snapshot against the VM built from its config and this host's CPU:
 * the memory layout (the machine's check, the one a migration target
 * makes of its source's), then the vCPUs and the CPU features.
 */
int image_check_vm(struct snapshot_image *img, struct vm *vm, char *err, size_t errlen)
{
	struct snap_cpu_word words[SNAP_CPU_WORDS_MAX];
	struct mem_slot_shape *slots =
	    calloc(img->v.h.nslots ? img->v.h.nslots : 1, sizeof(*slots));
	struct snap_host host = {.nvcpus = vm_nvcpus(vm), .cpu = words};
	char e[512] = "";
	int ret;

	if (!slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < img->v.h.nslots; i++) {
		struct snap_slot s = snap_view_slot(&img->v, i);

		slots[i] = (struct mem_slot_shape){.gpa = s.gpa, .size = s.size};
	}
	ret = guest_mem_layout_check(vm_mem(vm), slots, img->v.h.nslots, "the snapshot", e,
				     sizeof(e));
	free(slots);
	if (ret) {
		snprintf(err, errlen, "%s: snapshot: memory layout differs: %s", img->dir, e);
		return ret;
	}
	ret = persist_cpu_words(vm_host_features(vm), words, &host.ncpu);
	if (!ret)
		ret = snap_restore_check(&img->v, &host, e, sizeof(e));
	if (ret)
		snprintf(err, errlen, "%s: %s", img->dir, e[0] ? e : strerror(-ret));
	return ret;
}

int image_present(struct snapshot_image *img, const struct guest_mem *mem, uint64_t ***present,
		  uint64_t **off, uint64_t *npresent, char *err, size_t errlen)
{
	char e[384] = "";
	int ret = 0;

	*present = page_bitmaps_new(mem);
	*off = calloc(mem->nslots ? mem->nslots : 1, sizeof(**off));
	*npresent = 0;
	if (!*present || !*off)
		ret = -ENOMEM;
	for (uint32_t s = 0; !ret && s < mem->nslots; s++) {
		(*off)[s] = snap_view_slot(&img->v, s).file_offset;
		ret = snap_index_bitmap(&img->v, s, (*present)[s],
					bitmap_words(mem->slots[s].npages), e, sizeof(e));
		if (!ret)
			*npresent += snap_view_index_ent(&img->v, s).present;
	}
	if (ret) {
		snprintf(err, errlen, "%s: %s", img->dir, e[0] ? e : strerror(-ret));
		page_bitmaps_free(*present, mem);
		free(*off);
		*present = NULL;
		*off = NULL;
	}
	return ret;
}

static int read_pages(struct snapshot_image *img, struct vm *vm, unsigned threads,
		      struct snapshot_restore_stats *st, char *err, size_t errlen)
{
	const struct guest_mem *mem = vm_mem(vm);
	uint64_t **present, *off, npresent, t0 = now_ns();
	char e[384] = "";
	int ret = image_present(img, mem, &present, &off, &npresent, err, errlen);
	struct page_io io = {.mem = mem,
			     .fd = img->mem_fd,
			     .present = present,
			     .slot_off = off,
			     .seccomp = vm_config(vm)->seccomp,
			     .moved = &st->pages_read};

	if (ret)
		return ret;
	ret = page_io_run(&io, threads, e, sizeof(e));
	st->read_us += (now_ns() - t0) / 1000;
	if (ret)
		snprintf(err, errlen, "%s: %s", img->dir, e[0] ? e : strerror(-ret));
	page_bitmaps_free(present, mem);
	free(off);
	return ret;
}

/* vCPU i's blob, from the top layer's VCPU_STATE section. */
static void image_vcpu_blob(const void *opaque, unsigned i, const void **blob, size_t *len)
{
	const struct snapshot_image *img = opaque;
	const uint8_t *b;
	uint32_t n;

	snap_view_vcpu(&img->v, i, &b, &n);
	*blob = b;
	*len = n;
}

/* In the machine's order (vm_load_whole()), as a migration target loads them. */
int image_load_state(struct snapshot_image *img, struct vm *vm, char *err, size_t errlen)
{
	char e[384];
	int failed, ret = vm_load_whole(vm, img->v.vm_state, img->v.vm_state_len, image_vcpu_blob,
					img, &failed, e, sizeof(e));

	if (ret && failed == VM_WHOLE_VM)
		snprintf(err, errlen, "%s: VM state: %s", img->dir, e);
	else if (ret)
		snprintf(err, errlen, "%s: vCPU %d's state: %s", img->dir, failed, e);
	return ret;
}

int snapshot_image_restore(struct snapshot_image *img, struct vm *vm, unsigned threads,
			   struct snapshot_restore_stats *st, char *err, size_t errlen)
{
	uint64_t t0;
	int ret;

	memset(st, 0, sizeof(*st));
	st->threads = threads ? threads : SNAPSHOT_THREADS_DEFAULT;
	snap_id_hex(&img->v.h.id, st->id);
	ret = image_check_vm(img, vm, err, errlen);
	/* Base first: each layer's pages replace what the layers below put there. */
	for (uint32_t depth = image_depth(img); !ret && depth-- > 0;) {
		struct snapshot_image *l = img;

		for (uint32_t d = 0; d < depth; d++)
			l = l->parent;
		ret = read_pages(l, vm, st->threads, st, err, errlen);
	}
	if (ret)
		return ret;
	t0 = now_ns();
	ret = image_load_state(img, vm, err, errlen);
	st->state_us = (now_ns() - t0) / 1000;
	return ret;
}

uint32_t image_depth(const struct snapshot_image *img)
{
	uint32_t n = 0;

	for (; img; img = img->parent)
		n++;
	return n;
}

void snapshot_image_close(struct snapshot_image *img)
{
	if (!img)
		return;
	snapshot_image_close(img->parent);
	if (img->mem_fd >= 0)
		close(img->mem_fd);
	free(img->head);
	free(img->held);
	free(img->config);
	free(img);
}
