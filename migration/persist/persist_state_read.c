/* SPDX-License-Identifier: Apache-2.0 */
/*
 * persist_state_read.c - one layer's state file read for a restore in
 * bounded memory, whatever it declares (persist.h, RESTORE_HOLD_MAX): the
 * header first (checked against what its child wants, and charged to the
 * chain's declared total), then the table (every entry checked before a
 * byte of a section is read: snap_state_head()), then each section in file
 * order, checked as it passes (snap_state_section()): kept when the restore
 * uses it later, else read through the chain's one buffer and let go. A
 * file padded with a gigabyte of sections costs a gigabyte of reading, not
 * of memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "persist.h"

_Static_assert(RESTORE_READ_BUF >= MIG_STATE_MAX && RESTORE_READ_BUF >= MIG_VM_DESC_MAX &&
		   RESTORE_READ_BUF >= SNAP_PATH_MAX &&
		   RESTORE_READ_BUF >= SNAP_CPU_HDR_LEN + SNAP_CPU_WORDS_MAX * SNAP_CPU_WORD_LEN,
	       "a read section the restore lets go fits the buffer whole");

static int read_at(int fd, void *buf, uint64_t len, uint64_t off)
{
	return persist_io_full(fd, false, buf, len, off);
}

/* Kept: what a restore uses after the chain is open (a parent's memory only). */
static bool kept(const struct snap_sec *s, bool top)
{
	if (!snap_sec_is_read(s))
		return false;
	return top || s->type == SNAP_SEC_LAYOUT || s->type == SNAP_SEC_INDEX ||
	       s->type == SNAP_SEC_PARENT_PATH;
}

/* The header: what the child wants, the file's length, and the chain's declared total. */
static int read_header(int fd, uint64_t file_len, const struct layer_want *want,
		       const struct chain_budget *b, struct snap_header *h, char *e, size_t elen)
{
	uint8_t hb[SNAP_HEADER_LEN];
	size_t n = file_len < sizeof(hb) ? (size_t)file_len : sizeof(hb);
	int ret = read_at(fd, hb, n, 0);

	if (!ret)
		ret = snap_header_decode(hb, n, h, e, elen);
	if (!ret && want &&
	    (memcmp(&h->id, &want->id, sizeof(h->id)) || h->generation != want->generation)) {
		char a[33], w[33];

		snap_id_hex(&h->id, a);
		snap_id_hex(&want->id, w);
		snprintf(e, elen,
			 "not the parent its child names: snapshot %s generation %u, the child "
			 "wants %s generation %u",
			 a, h->generation, w, want->generation);
		ret = -EPROTO;
	}
	if (!ret && file_len != h->state_len) {
		snprintf(e, elen, "the file is %llu bytes, its header says %llu (%s)",
			 (unsigned long long)file_len, (unsigned long long)h->state_len,
			 file_len < h->state_len ? "truncated" : "trailing bytes");
		ret = -EPROTO;
	}
	if (!ret && b->declared + h->state_len > SNAP_CHAIN_STATE_MAX) {
		snprintf(e, elen,
			 "its header declares %.1f MiB of state, %.1f MiB with the %u layer%s "
			 "above it: a chain's state files declare at most %llu MiB together",
			 h->state_len / 1048576.0, (b->declared + h->state_len) / 1048576.0,
			 b->layers, b->layers == 1 ? "" : "s",
			 (unsigned long long)(SNAP_CHAIN_STATE_MAX >> 20));
		ret = -EPROTO;
	}
	return ret;
}

/* Bytes the kept sections take, each at the next multiple of 8 (as in the file). */
static uint64_t held_len(const struct snap_view *v, bool top)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < v->h.nsections; i++) {
		struct snap_sec s = snap_view_sec(v, i);

		if (kept(&s, top))
			n = (n + SNAP_SEC_ALIGN - 1) / SNAP_SEC_ALIGN * SNAP_SEC_ALIGN + s.len;
	}
	return n;
}

/* Every section in file order: kept ones into img->held, the others through b->buf. */
static int stream(struct snapshot_image *img, int fd, struct snap_decoder *d, bool top,
		  struct chain_budget *b, char *e, size_t elen)
{
	uint64_t at = 0;

	for (uint32_t i = 0; i < img->v.h.nsections; i++) {
		struct snap_sec s = snap_view_sec(&img->v, i);
		uint8_t pad[SNAP_SEC_ALIGN];
		uint8_t *payload = NULL;
		uint32_t crc = 0;
		int ret = read_at(fd, pad, s.offset - d->end, d->end); /* < 8: snap_state_head() */

		if (!ret && kept(&s, top)) {
			at = (at + SNAP_SEC_ALIGN - 1) / SNAP_SEC_ALIGN * SNAP_SEC_ALIGN;
			payload = img->held + at;
			at += s.len;
		} else if (!ret && snap_sec_is_read(&s)) {
			payload = b->buf; /* a parent's blob: checked, then let go */
		}
		if (!ret && payload) {
			ret = read_at(fd, payload, s.len, s.offset);
			crc = crc32c(0, payload, s.len);
		}
		for (uint64_t o = 0, n; !ret && !payload && o < s.len; o += n) {
			n = s.len - o < RESTORE_READ_BUF ? s.len - o : RESTORE_READ_BUF;
			ret = read_at(fd, b->buf, n, s.offset + o);
			crc = crc32c(crc, b->buf, n);
		}
		if (!ret)
			ret = snap_state_section(d, pad, crc, payload, e, elen);
		if (ret)
			return ret;
	}
	return snap_state_finish(d, e, elen);
}

int persist_state_read(struct snapshot_image *img, int fd, uint64_t file_len,
		       const struct layer_want *want, struct chain_budget *b, char *err,
		       size_t errlen)
{
	struct snap_header h;
	struct snap_decoder d;
	uint64_t hlen = 0, hold = 0;
	char e[384] = "";
	int ret = read_header(fd, file_len, want, b, &h, e, sizeof(e));

	if (!ret) {
		hlen = SNAP_HEADER_LEN + (uint64_t)h.nsections * SNAP_SEC_LEN;
		img->head = malloc(hlen);
		ret = img->head ? read_at(fd, img->head, hlen, 0) : -ENOMEM;
	}
	if (!ret)
		ret = snap_state_head(&d, &img->v, img->head, hlen, file_len, NULL, e, sizeof(e));
	if (!ret) {
		hold = hlen + held_len(&img->v, !want);
		if (b->held + hold > RESTORE_HOLD_MAX) {
			snprintf(e, sizeof(e),
				 "a restore would hold %.1f MiB of this chain's state (its LAYOUT, "
				 "INDEX and the top layer's blobs), at most %llu MiB",
				 (b->held + hold) / 1048576.0,
				 (unsigned long long)(RESTORE_HOLD_MAX >> 20));
			ret = -EPROTO;
		}
	}
	if (!ret) {
		img->held = malloc(hold - hlen ? hold - hlen : 1);
		ret = img->held ? stream(img, fd, &d, !want, b, e, sizeof(e)) : -ENOMEM;
	}
	if (!ret && want) {
		/* A parent's CONFIG, CPU and blobs passed through b->buf: checked, not kept. */
		img->v.config = NULL;
		img->v.config_len = 0;
		img->v.cpu = NULL;
		img->v.ncpu = 0;
		img->v.vm_state = NULL;
		img->v.vm_state_len = 0;
		img->v.vcpus = NULL;
	}
	if (!ret) {
		b->declared += h.state_len;
		b->held += hold;
		b->layers++;
	}
	if (ret)
		snprintf(err, errlen, "%s/%s: %s", img->dir, SNAP_STATE_FILE,
			 e[0] ? e : strerror(-ret));
	return ret;
}
