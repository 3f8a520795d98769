/* SPDX-License-Identifier: Apache-2.0 */
/*
 * virtq_state.c - a virtqueue's migration blob (layout in virtq.h and
 * docs/state-format.md "VIRTQ"): encode, and a load that checks every field
 * before it changes the queue, so a refused blob leaves the target's queue
 * as it was.
 */
#include "state_buf.h"
#include "virtq.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "le.h"

#define FLAG_READY  0x01
#define FLAG_BROKEN 0x02

size_t virtq_save(const struct virtq *q, uint8_t *buf)
{
	memset(buf, 0, VIRTQ_STATE_SIZE);
	le_put16(buf, VIRTQ_STATE_VERSION);
	le_put16(buf + 2, q->size);
	buf[4] = (uint8_t)((q->ready ? FLAG_READY : 0) | (q->broken ? FLAG_BROKEN : 0));
	le_put16(buf + 6, q->last_avail_idx);
	le_put64(buf + 8, q->features);
	le_put64(buf + 16, q->desc_gpa);
	le_put64(buf + 24, q->avail_gpa);
	le_put64(buf + 32, q->used_gpa);
	le_put16(buf + 40, q->next_used_idx);
	return VIRTQ_STATE_SIZE;
}

/* A refusal of this blob: one line, prefixed with what it is (state_fail). */
#define bad(err, errlen, ...) state_fail(-EINVAL, err, errlen, "virtqueue state: " __VA_ARGS__)

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

int virtq_load(struct virtq *q, const struct guest_mem *mem, const uint8_t *buf, size_t len,
	       char *err, size_t errlen)
{
	struct virtq t;
	uint16_t version, inflight;
	uint8_t flags;
	int ret;

	if (len != VIRTQ_STATE_SIZE)
		return bad(err, errlen, "%zu bytes, %u expected", len, VIRTQ_STATE_SIZE);
	version = le_get16(buf);
	if (version != VIRTQ_STATE_VERSION)
		return bad(err, errlen, "version %u, this vmm reads version %u", version,
			   VIRTQ_STATE_VERSION);
	flags = buf[4];
	if (flags & ~(FLAG_READY | FLAG_BROKEN))
		return bad(err, errlen, "flags 0x%02x has unknown bits set", flags);
	if (buf[5] || !all_zero(buf + 42, VIRTQ_STATE_SIZE - 42))
		return bad(err, errlen, "reserved bytes are not zero");

	/* Decoded into a copy of the queue's header: q changes only once all is checked. */
	memcpy(&t, q, offsetof(struct virtq, seen));
	t.size = le_get16(buf + 2);
	t.ready = flags & FLAG_READY;
	t.broken = flags & FLAG_BROKEN;
	t.last_avail_idx = le_get16(buf + 6);
	t.features = le_get64(buf + 8);
	t.desc_gpa = le_get64(buf + 16);
	t.avail_gpa = le_get64(buf + 24);
	t.used_gpa = le_get64(buf + 32);
	t.next_used_idx = le_get16(buf + 40);
	t.why = t.broken ? "the driver broke the queue before the migration" : NULL;

	if (t.size > t.max_size)
		return bad(err, errlen, "size %u, this device's queue holds at most %u", t.size,
			   t.max_size);
	if (t.broken && !t.ready)
		return bad(err, errlen, "broken but not ready");
	if (t.ready) {
		char why[160];

		ret = virtq_check_layout(&t, mem, why, sizeof(why));
		if (ret)
			return bad(err, errlen, "%s", why);
		inflight = (uint16_t)(t.last_avail_idx - t.next_used_idx);
		if (inflight > t.size)
			return bad(
			    err, errlen,
			    "%u chains in flight (last_avail_idx %u, used idx %u) in a queue "
			    "of %u",
			    inflight, t.last_avail_idx, t.next_used_idx, t.size);
	} else if (t.last_avail_idx || t.next_used_idx) {
		return bad(err, errlen, "indexes %u/%u on a queue that is not ready",
			   t.last_avail_idx, t.next_used_idx);
	}
	memcpy(q, &t, offsetof(struct virtq, seen));
	return 0;
}
