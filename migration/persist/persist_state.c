/* SPDX-License-Identifier: Apache-2.0 */
/*
 * persist_state.c - a snapshot's state file from a paused VM: the memslot
 * layout, the present-page index, the config, the guest's CPU feature
 * words and the state blobs, laid out and checksummed by the codec
 * (snap_state_encode()); and the write that makes it durable and atomic.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "cpu_features.h"
#include "persist.h"
#include "vm.h"

#define CONFIG_TEXT_MAX (256u << 10)

void persist_slots(const struct guest_mem *mem, struct mig_slot_desc *out)
{
	for (uint32_t i = 0; i < mem->nslots; i++)
		out[i] =
		    (struct mig_slot_desc){.gpa = mem->slots[i].gpa, .size = mem->slots[i].size};
}

static int word_cmp(const void *a, const void *b)
{
	const struct snap_cpu_word *x = a, *y = b;

	if (x->leaf != y->leaf)
		return x->leaf < y->leaf ? -1 : 1;
	if (x->subleaf != y->subleaf)
		return x->subleaf < y->subleaf ? -1 : 1;
	return x->reg < y->reg ? -1 : x->reg > y->reg;
}

int persist_cpu_words(const struct cpu_features *f, struct snap_cpu_word *out, uint32_t *n)
{
	*n = 0;
	for (unsigned i = 0; i < cpu_features_count(); i++) {
		uint32_t leaf, subleaf, w;
		unsigned reg, bit;

		if (!(f->bits[i / 64] >> (i % 64) & 1) ||
		    cpu_features_place(i, &leaf, &subleaf, &reg, &bit))
			continue;
		for (w = 0; w < *n; w++)
			if (out[w].leaf == leaf && out[w].subleaf == subleaf && out[w].reg == reg)
				break;
		if (w == *n) {
			if (*n == SNAP_CPU_WORDS_MAX)
				return -ENOSPC;
			out[(*n)++] = (struct snap_cpu_word){leaf, subleaf, reg, 0};
		}
		out[w].bits |= 1u << bit;
	}
	qsort(out, *n, sizeof(*out), word_cmp);
	return 0;
}

/* The parts the state file is made of; freed by parts_free(). */
struct parts {
	struct mig_slot_desc *slots;
	uint8_t *layout, *index, *cpu;
	char *config;
	uint64_t *npages;
	struct snap_sec_in *secs;
};

static void parts_free(struct parts *p)
{
	free(p->slots);
	free(p->layout);
	free(p->index);
	free(p->cpu);
	free(p->config);
	free(p->npages);
	free(p->secs);
}

static int build_parts(struct vm *vm, const struct persist_state_in *in, struct parts *p,
		       struct snap_header *h, char *err, size_t errlen)
{
	const struct guest_mem *mem = vm_mem(vm);
	struct snap_cpu_word words[SNAP_CPU_WORDS_MAX];
	struct cpu_features guest;
	uint32_t nwords, i, n = 0;
	long long ilen;
	int clen;

	p->slots = calloc(mem->nslots, sizeof(*p->slots));
	p->layout = calloc(mem->nslots, SNAP_SLOT_LEN);
	p->npages = calloc(mem->nslots, sizeof(*p->npages));
	p->config = malloc(CONFIG_TEXT_MAX);
	p->secs = calloc(7u + vm_nvcpus(vm), sizeof(*p->secs));
	if (!p->slots || !p->layout || !p->npages || !p->config || !p->secs)
		goto nomem;
	persist_slots(mem, p->slots);
	for (i = 0; i < mem->nslots; i++)
		p->npages[i] = mem->slots[i].npages;
	h->memory_file_len = snap_layout_encode(p->layout, p->slots, mem->nslots);
	p->index = malloc(snap_index_len_max(p->npages, mem->nslots));
	if (!p->index)
		goto nomem;
	ilen = snap_index_encode(p->index, snap_index_len_max(p->npages, mem->nslots),
				 (const uint64_t *const *)in->present, p->npages, mem->nslots,
				 SNAP_INDEX_ZSTD);
	if (ilen < 0) {
		snprintf(err, errlen, "encoding the page index: %s", strerror((int)-ilen));
		return (int)ilen;
	}
	/* vm_create() stored the effective feature list: what the guest was given. */
	if (cpu_features_parse(vm_config(vm)->cpu_features, &guest, err, errlen) ||
	    persist_cpu_words(&guest, words, &nwords)) {
		snprintf(err, errlen, "the guest's CPU features do not make feature words");
		return -EINVAL;
	}
	p->cpu = malloc(SNAP_CPU_HDR_LEN + (size_t)nwords * SNAP_CPU_WORD_LEN);
	if (!p->cpu)
		goto nomem;
	snap_cpu_encode(p->cpu, words, nwords);
	/* With the front end's [console] output and [api] socket: the bytes CONFIG always had. */
	clen = config_format_with(vm_config(vm), in->desc_host, p->config, CONFIG_TEXT_MAX);
	if (clen < 0) {
		snprintf(err, errlen, "writing the config: %s", strerror(-clen));
		return clen;
	}
	p->secs[n++] =
	    snap_sec_required(SNAP_SEC_LAYOUT, 0, p->layout, (uint64_t)mem->nslots * SNAP_SLOT_LEN);
	p->secs[n++] = snap_sec_required(SNAP_SEC_INDEX, 0, p->index, (uint64_t)ilen);
	p->secs[n++] = snap_sec_required(SNAP_SEC_CONFIG, 0, p->config, (uint64_t)clen);
	p->secs[n++] =
	    snap_sec_required(SNAP_SEC_CPU, 0, p->cpu, SNAP_CPU_HDR_LEN + (uint64_t)nwords * 16);
	p->secs[n++] = snap_sec_required(SNAP_SEC_VM_STATE, 0, in->vm_blob, in->vm_len);
	for (i = 0; i < vm_nvcpus(vm); i++)
		p->secs[n++] =
		    snap_sec_required(SNAP_SEC_VCPU_STATE, i, in->vcpu_blob[i], in->vcpu_len[i]);
	/* Where a restore of this layer finds its parent; a reader may skip it. */
	if (in->generation) {
		p->secs[n] = snap_sec_required(SNAP_SEC_PARENT_PATH, 0, in->parent_path,
					       strlen(in->parent_path));
		p->secs[n++].sec.flags = 0;
	}
	h->nsections = n;
	return 0;
nomem:
	snprintf(err, errlen, "%s", strerror(ENOMEM));
	return -ENOMEM;
}

int persist_state_build(struct vm *vm, const struct persist_state_in *in, uint8_t **out,
			size_t *len, uint64_t *memory_file_len, char *err, size_t errlen)
{
	struct snap_header h = {.version_major = SNAP_VERSION_MAJOR,
				.version_minor = SNAP_VERSION_MINOR,
				.header_len = SNAP_HEADER_LEN,
				.id = in->id,
				.memory = vm_mem(vm)->size,
				.page_size = MIG_PAGE_SIZE,
				.nslots = vm_mem(vm)->nslots,
				.nvcpus = vm_nvcpus(vm),
				.created_ns = in->created_ns,
				.flags = in->generation ? SNAP_F_DIFF : 0,
				.parent = in->parent,
				.generation = in->generation};
	struct parts p = {0};
	long long r;
	int ret = build_parts(vm, in, &p, &h, err, errlen);

	*out = NULL;
	if (!ret)
		ret = snap_state_plan(&h, p.secs, h.nsections);
	if (!ret) {
		*out = malloc(h.state_len);
		ret = *out ? 0 : -ENOMEM;
	}
	if (!ret) {
		r = snap_state_encode(*out, h.state_len, &h, p.secs, h.nsections);
		ret = r < 0 ? (int)r : 0;
		*len = r < 0 ? 0 : (size_t)r;
	}
	if (ret && !err[0])
		snprintf(err, errlen, "laying out the state file: %s", strerror(-ret));
	if (ret) {
		free(*out);
		*out = NULL;
	}
	*memory_file_len = h.memory_file_len;
	parts_free(&p);
	return ret;
}

int persist_commit_file(int dir_fd, int fd, const char *tmp, const char *name, const void *data,
			size_t len, char *err, size_t errlen)
{
	const uint8_t *b = data;
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, b + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : EIO;

			snprintf(err, errlen, "writing %s: %s", tmp, strerror(e));
			return -e;
		}
		done += (size_t)n;
	}
	if (fsync(fd) < 0 || renameat(dir_fd, tmp, dir_fd, name) < 0) {
		int e = errno;

		snprintf(err, errlen, "making %s durable: %s", name, strerror(e));
		return -e;
	}
	if (fsync(dir_fd) < 0) {
		int e = errno;

		/* Renamed but maybe not durable: no `name` may outlive the failure. */
		unlinkat(dir_fd, name, 0);
		snprintf(err, errlen, "making %s durable: %s", name, strerror(e));
		return -e;
	}
	return 0;
}
