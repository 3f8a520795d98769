/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_virtq.c - the split virtqueue on a fake guest (virtq_driver.h):
 * setting a queue ready, popping good chains (one segment, several readable
 * and writable ones), the copy helpers, 16-bit index wrap-around, pushing
 * (checks, release of used->idx, the VMM dirty bitmap), the notification
 * decisions with and without EVENT_IDX. Malformed chains and rings are
 * test_virtq_refusals.c, the migration blob test_virtq_state.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "virtq_driver.h"

static void test_init(void **state)
{
	struct virtq *q = malloc(sizeof(*q));

	(void)state;
	assert_int_equal(virtq_init(q, 0), -EINVAL);
	assert_int_equal(virtq_init(q, 3), -EINVAL);
	assert_int_equal(virtq_init(q, 48), -EINVAL);
	assert_int_equal(virtq_init(q, 32768), 0);
	assert_int_equal(virtq_init(q, 1), 0);
	assert_int_equal(q->max_size, 1);
	assert_false(q->ready);
	free(q);
}

/* set_ready on d's queue, reset with these registers (features kept); returns its result. */
static int ready_with(struct drv *d, uint16_t size, uint64_t desc, uint64_t avail, uint64_t used,
		      char *err)
{
	uint64_t features = d->q.features;

	virtq_reset(&d->q);
	virtq_set_features(&d->q, features);
	d->q.size = size;
	d->q.desc_gpa = desc;
	d->q.avail_gpa = avail;
	d->q.used_gpa = used;
	err[0] = 0;
	return virtq_set_ready(&d->q, &d->mem, err, 160);
}

static void test_ready_checks(void **state)
{
	struct drv *d = drv_new(16, 0, 0);
	uint64_t top = DRV_RAM;
	char err[160];

	(void)state;
	assert_true(d->q.ready);
	assert_int_equal(virtq_set_ready(&d->q, &d->mem, err, sizeof(err)), -EBUSY);

	/* Size: a power of two in 1..max_size. */
	assert_int_equal(ready_with(d, 0, DRV_DESC, DRV_AVAIL, DRV_USED, err), -EINVAL);
	assert_non_null(strstr(err, "size 0"));
	assert_false(d->q.ready);
	assert_int_equal(ready_with(d, 12, DRV_DESC, DRV_AVAIL, DRV_USED, err), -EINVAL);
	assert_int_equal(ready_with(d, 2 * DRV_MAX, DRV_DESC, DRV_AVAIL, DRV_USED, err), -EINVAL);
	assert_int_equal(ready_with(d, 1, DRV_DESC, DRV_AVAIL, DRV_USED, err), 0);
	assert_int_equal(ready_with(d, DRV_MAX, DRV_DESC, DRV_AVAIL, DRV_USED, err), 0);

	/* Alignment: desc 16, avail 2, used 4. */
	assert_int_equal(ready_with(d, 16, DRV_DESC + 8, DRV_AVAIL, DRV_USED, err), -EINVAL);
	assert_non_null(strstr(err, "descriptor ring"));
	assert_non_null(strstr(err, "aligned"));
	assert_int_equal(ready_with(d, 16, DRV_DESC, DRV_AVAIL + 1, DRV_USED, err), -EINVAL);
	assert_non_null(strstr(err, "avail ring"));
	assert_int_equal(ready_with(d, 16, DRV_DESC, DRV_AVAIL, DRV_USED + 2, err), -EINVAL);
	assert_non_null(strstr(err, "used ring"));
	assert_int_equal(ready_with(d, 16, DRV_DESC, DRV_AVAIL + 2, DRV_USED + 4, err), 0);

	/* Each ring wholly in RAM: ending exactly at the top is fine, one byte more is not. */
	assert_int_equal(ready_with(d, 16, top - 256, DRV_AVAIL, DRV_USED, err), 0);
	assert_int_equal(ready_with(d, 16, top - 240, DRV_AVAIL, DRV_USED, err), -EINVAL);
	assert_non_null(strstr(err, "not guest RAM"));
	assert_int_equal(ready_with(d, 16, DRV_DESC, top - 36, DRV_USED, err), 0);
	assert_int_equal(ready_with(d, 16, DRV_DESC, top - 34, DRV_USED, err), -EINVAL);
	assert_int_equal(ready_with(d, 16, DRV_DESC, DRV_AVAIL, top - 132, err), 0);
	assert_int_equal(ready_with(d, 16, DRV_DESC, DRV_AVAIL, top - 128, err), -EINVAL);
	assert_int_equal(ready_with(d, 16, DRV_DESC, DRV_AVAIL, UINT64_MAX - 3, err), -EINVAL);
	/* With EVENT_IDX the rings have 2 more bytes each (used_event, avail_event). */
	virtq_set_features(&d->q, FEAT(VIRTIO_F_RING_EVENT_IDX));
	assert_int_equal(ready_with(d, 16, DRV_DESC, top - 36, DRV_USED, err), -EINVAL);
	assert_int_equal(ready_with(d, 16, DRV_DESC, DRV_AVAIL, top - 132, err), -EINVAL);
	assert_int_equal(ready_with(d, 16, DRV_DESC, top - 38, top - 136, err), 0);
	drv_free(d);
}

static void test_simple_chain(void **state)
{
	struct drv *d = drv_new(16, 0, 0);

	(void)state;
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_EMPTY);
	assert_int_equal(virtq_avail_pending(&d->q, &d->mem), 0);
	drv_desc(d, 5, DRV_BUF, 100, 0, 0);
	drv_avail(d, 5);
	assert_int_equal(virtq_avail_pending(&d->q, &d->mem), 1);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
	assert_int_equal(d->c.head, 5);
	assert_int_equal(d->c.nseg, 1);
	assert_int_equal(d->c.nread, 1);
	assert_int_equal(d->c.read_len, 100);
	assert_int_equal(d->c.write_len, 0);
	assert_false(d->c.indirect);
	assert_int_equal(d->c.seg[0].gpa, DRV_BUF);
	assert_int_equal(d->c.seg[0].len, 100);
	assert_int_equal(d->c.seg[0].desc, 5);
	assert_false(d->c.seg[0].write);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_EMPTY);
	assert_int_equal(d->q.last_avail_idx, 1);

	assert_int_equal(drv_used_idx(d), 0);
	assert_int_equal(virtq_push(&d->q, &d->mem, 5, 0), 0);
	assert_int_equal(drv_used_idx(d), 1);
	assert_int_equal(d->q.next_used_idx, 1);
	uint32_t id, len;
	drv_used_elem(d, 0, &id, &len);
	assert_int_equal(id, 5);
	assert_int_equal(len, 0);
	drv_free(d);
}

/* 2 readable then 3 writable descriptors, linked out of order: 7 -> 2 -> 9 -> 0 -> 4. */
static void lay_out_rw_chain(struct drv *d)
{
	drv_desc(d, 7, DRV_BUF + 0x0000, 10, VIRTQ_DESC_F_NEXT, 2);
	drv_desc(d, 2, DRV_BUF + 0x1000, 6, VIRTQ_DESC_F_NEXT, 9);
	drv_desc(d, 9, DRV_BUF + 0x2ffc, 8, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 0);
	drv_desc(d, 0, DRV_BUF + 0x5000, 4, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE, 4);
	drv_desc(d, 4, DRV_BUF + 0x6000, 20, VIRTQ_DESC_F_WRITE, 11 /* ignored: no NEXT */);
	drv_avail(d, 7);
}

static void test_multi_segment_chain(void **state)
{
	static const uint16_t order[] = {7, 2, 9, 0, 4};
	struct drv *d = drv_new(16, 0, 0);

	(void)state;
	lay_out_rw_chain(d);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
	assert_int_equal(d->c.head, 7);
	assert_int_equal(d->c.nseg, 5);
	assert_int_equal(d->c.nread, 2);
	assert_int_equal(d->c.read_len, 16);
	assert_int_equal(d->c.write_len, 32);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(d->c.seg[i].desc, order[i]);
		assert_int_equal(d->c.seg[i].write, i >= 2);
	}
	assert_int_equal(d->c.seg[2].gpa, DRV_BUF + 0x2ffc); /* crosses a page: fine */
	drv_free(d);
}

static void test_copy_helpers(void **state)
{
	struct drv *d = drv_new(16, 0, 0);
	uint8_t buf[64], out[40];

	(void)state;
	lay_out_rw_chain(d);
	memcpy(drv_host(d, DRV_BUF, 10), "0123456789", 10);
	memcpy(drv_host(d, DRV_BUF + 0x1000, 6), "abcdef", 6);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);

	/* Reads gather across segments, from any offset, up to what there is. */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(virtq_chain_read(&d->c, &d->mem, 0, buf, sizeof(buf)), 16);
	assert_memory_equal(buf, "0123456789abcdef", 16);
	assert_int_equal(virtq_chain_read(&d->c, &d->mem, 8, buf, 4), 4);
	assert_memory_equal(buf, "89ab", 4);
	assert_int_equal(virtq_chain_read(&d->c, &d->mem, 10, buf, 3), 3);
	assert_memory_equal(buf, "abc", 3);
	assert_int_equal(virtq_chain_read(&d->c, &d->mem, 16, buf, 4), 0);
	assert_int_equal(virtq_chain_read(&d->c, &d->mem, 1000, buf, 4), 0);

	/* Writes scatter into the writable ones only (8 + 4 + 20 bytes), marking them dirty. */
	for (int i = 0; i < 40; i++)
		out[i] = (uint8_t)('A' + i);
	drv_clear_dirty(d);
	assert_int_equal(virtq_chain_write(&d->c, &d->mem, 2, out, sizeof(out)), 30);
	assert_memory_equal(drv_host(d, DRV_BUF + 0x2ffe, 6), out, 6);
	assert_memory_equal(drv_host(d, DRV_BUF + 0x5000, 4), out + 6, 4);
	assert_memory_equal(drv_host(d, DRV_BUF + 0x6000, 20), out + 10, 20);
	assert_memory_equal(drv_host(d, DRV_BUF, 10), "0123456789", 10); /* readable untouched */
	assert_true(drv_dirty(d, DRV_BUF + 0x2000));
	assert_true(drv_dirty(d, DRV_BUF + 0x3000));
	assert_true(drv_dirty(d, DRV_BUF + 0x5000));
	assert_true(drv_dirty(d, DRV_BUF + 0x6000));
	assert_false(drv_dirty(d, DRV_BUF + 0x4000));
	assert_false(drv_dirty(d, DRV_BUF)); /* reading marks nothing */
	assert_int_equal(virtq_chain_write(&d->c, &d->mem, 32, out, 1), 0);
	assert_int_equal(virtq_chain_write(&d->c, &d->mem, 31, out, 5), 1);
	assert_int_equal(*drv_host(d, DRV_BUF + 0x6013, 1), 'A');

	/* A chain that was not popped (segment outside RAM): -EFAULT, not a crash. */
	d->c.seg[0].gpa = DRV_RAM - 4;
	assert_int_equal(virtq_chain_read(&d->c, &d->mem, 0, buf, 16), -EFAULT);
	d->c.seg[4].gpa = DRV_RAM;
	assert_int_equal(virtq_chain_write(&d->c, &d->mem, 12, out, 1), -EFAULT);
	drv_free(d);
}

/* Pops and pushes one request per index from `start`, across the 16-bit wrap. */
static void test_index_wrap(void **state)
{
	struct drv *d = drv_new(4, 0, 65533);
	uint32_t id, len;

	(void)state;
	for (uint16_t k = 0; k < 4; k++) {
		drv_desc(d, k, DRV_BUF + 0x100u * k, 16 + k, VIRTQ_DESC_F_WRITE, 0);
		drv_avail(d, k);
	}
	assert_int_equal(virtq_avail_pending(&d->q, &d->mem), 4);
	assert_int_equal(d->avail_idx, 1);
	for (uint16_t k = 0; k < 4; k++) {
		assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
		assert_int_equal(d->c.head, k);
		assert_int_equal(d->c.write_len, 16 + k);
		assert_int_equal(virtq_push(&d->q, &d->mem, d->c.head, 100 + k), 0);
	}
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_EMPTY);
	assert_int_equal(d->q.last_avail_idx, 1);
	assert_int_equal(d->q.next_used_idx, 1);
	assert_int_equal(drv_used_idx(d), 1);
	/* Used index 65533 is slot 1 of 4; 65535 slot 3; 0 slot 0. */
	for (uint16_t k = 0; k < 4; k++) {
		drv_used_elem(d, (uint16_t)(65533 + k), &id, &len);
		assert_int_equal(id, k);
		assert_int_equal(len, 100 + k);
	}
	drv_free(d);
}

/* 70000 requests through a queue of 2: both indexes wrap, ring slots alternate. */
static void test_long_run(void **state)
{
	struct drv *d = drv_new(2, 0, 0);
	uint32_t id, len;

	(void)state;
	drv_desc(d, 0, DRV_BUF, 8, 0, 0);
	drv_desc(d, 1, DRV_BUF + 8, 8, VIRTQ_DESC_F_WRITE, 0);
	for (uint32_t k = 0; k < 70000; k++) {
		drv_avail(d, (uint16_t)(k & 1));
		assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
		assert_int_equal(d->c.head, k & 1);
		assert_int_equal(virtq_push(&d->q, &d->mem, d->c.head, k), 0);
		drv_used_elem(d, (uint16_t)k, &id, &len);
		assert_int_equal(id, k & 1);
		assert_int_equal(len, k);
	}
	assert_int_equal(drv_used_idx(d), (uint16_t)70000);
	assert_int_equal(d->q.last_avail_idx, (uint16_t)70000);
	drv_free(d);
}

static void test_push_checks(void **state)
{
	struct drv *d = drv_new(8, 0, 0);

	(void)state;
	/* Nothing taken yet: a push would publish a head the driver never gave. */
	assert_int_equal(virtq_push(&d->q, &d->mem, 0, 0), -EINVAL);
	drv_desc(d, 3, DRV_BUF, 8, 0, 0);
	drv_avail(d, 3);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
	assert_int_equal(virtq_push(&d->q, &d->mem, 8, 0), -EINVAL);
	assert_int_equal(drv_used_idx(d), 0);
	d->q.broken = true;
	assert_int_equal(virtq_push(&d->q, &d->mem, 3, 0), -EIO);
	d->q.broken = false;
	assert_int_equal(virtq_push(&d->q, &d->mem, 3, 0), 0);
	assert_int_equal(virtq_push(&d->q, &d->mem, 3, 0), -EINVAL);
	virtq_reset(&d->q);
	assert_int_equal(virtq_push(&d->q, &d->mem, 3, 0), -EIO);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_EMPTY);
	drv_free(d);
}

/* The used ring's page is dirty in the VMM bitmap after a push; the driver's are not. */
static void test_push_marks_dirty(void **state)
{
	struct drv *d = drv_new(DRV_MAX, FEAT(VIRTIO_F_RING_EVENT_IDX), 0);
	uint64_t used_elem_page;

	(void)state;
	for (uint16_t k = 0; k < 600; k++) {
		drv_desc(d, k, DRV_BUF, 8, 0, 0);
		drv_avail(d, k);
		assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
		if (k < 599)
			assert_int_equal(virtq_push(&d->q, &d->mem, k, 0), 0);
	}
	drv_clear_dirty(d);
	/* Element 599 sits at used + 4 + 8 * 599 = used + 0x12bc: the ring's second page. */
	used_elem_page = DRV_USED + 4 + 8 * 599;
	assert_int_equal(virtq_push(&d->q, &d->mem, 599, 0), 0);
	assert_true(drv_dirty(d, DRV_USED));	   /* idx */
	assert_true(drv_dirty(d, used_elem_page)); /* the element */
	assert_false(drv_dirty(d, DRV_USED + 0x2000));
	assert_false(drv_dirty(d, DRV_AVAIL));
	assert_false(drv_dirty(d, DRV_DESC));
	assert_false(drv_dirty(d, DRV_BUF));

	/* avail_event: the used ring's last bytes (used + 4 + 8 * 1024 = used + 0x2004). */
	drv_clear_dirty(d);
	assert_int_equal(virtq_set_avail_event(&d->q, &d->mem), 0);
	assert_int_equal(le_get16(drv_host(d, DRV_USED + 0x2004, 2)), 600);
	assert_true(drv_dirty(d, DRV_USED + 0x2004));
	assert_false(drv_dirty(d, DRV_USED));
	drv_free(d);
}

static void test_set_avail_event(void **state)
{
	struct drv *d = drv_new(8, 0, 0);

	(void)state;
	assert_int_equal(virtq_set_avail_event(&d->q, &d->mem), -EINVAL); /* no EVENT_IDX */
	drv_free(d);
	d = drv_new(8, FEAT(VIRTIO_F_RING_EVENT_IDX), 65535);
	drv_desc(d, 0, DRV_BUF, 8, 0, 0);
	drv_avail(d, 0);
	assert_int_equal(virtq_pop(&d->q, &d->mem, &d->c), VIRTQ_POP_CHAIN);
	assert_int_equal(virtq_set_avail_event(&d->q, &d->mem), 0);
	assert_int_equal(le_get16(drv_host(d, DRV_USED + 4 + 8 * 8, 2)), 0);
	virtq_reset(&d->q);
	assert_int_equal(virtq_set_avail_event(&d->q, &d->mem), -EIO);
	drv_free(d);
}

static void test_notify_flags(void **state)
{
	struct drv *d = drv_new(8, 0, 0);

	(void)state;
	assert_true(virtq_should_notify(&d->q, &d->mem, 0, 1));
	assert_false(virtq_should_notify(&d->q, &d->mem, 1, 1)); /* nothing published */
	le_put16(drv_host(d, DRV_AVAIL, 2), VIRTQ_AVAIL_F_NO_INTERRUPT);
	assert_false(virtq_should_notify(&d->q, &d->mem, 0, 1));
	assert_false(virtq_should_notify(&d->q, &d->mem, 65535, 3));
	/* used_event is not read without EVENT_IDX. */
	le_put16(drv_host(d, DRV_AVAIL, 2), 0);
	le_put16(drv_host(d, DRV_AVAIL + 4 + 2 * 8, 2), 100);
	assert_true(virtq_should_notify(&d->q, &d->mem, 0, 1));
	virtq_reset(&d->q);
	assert_false(virtq_should_notify(&d->q, &d->mem, 0, 1));
	drv_free(d);
}

/* EVENT_IDX: interrupt when used_event is in [old, new), in 16-bit arithmetic. */
static void test_notify_event_idx(void **state)
{
	static const struct {
		uint16_t used_event, old, new_used;
		bool notify;
	} rows[] = {
	    {0, 0, 1, true},		/* the driver waits for entry 0: it is published */
	    {0, 1, 2, false},		/* it was published before: already notified */
	    {1, 0, 1, false},		/* it waits for entry 1, not yet published */
	    {1, 0, 2, true},		/* published as the second of two */
	    {5, 0, 5, false},		/* [0, 5) does not hold 5 */
	    {5, 0, 6, true},		/* [0, 6) does */
	    {4, 5, 9, false},		/* event behind the window */
	    {65535, 65534, 0, true},	/* across the wrap: window {65534, 65535} */
	    {0, 65534, 1, true},	/* window {65534, 65535, 0} */
	    {1, 65534, 1, false},	/* 1 not yet published */
	    {65533, 65534, 2, false},	/* event just behind a wrapped window */
	    {10, 10, 10, false},	/* nothing published */
	    {(uint16_t)-1, 0, 0, false} /* same, another event */
	};
	struct drv *d = drv_new(8, FEAT(VIRTIO_F_RING_EVENT_IDX), 0);
	uint8_t *used_event = drv_host(d, DRV_AVAIL + 4 + 2 * 8, 2);

	(void)state;
	/* NO_INTERRUPT is ignored with EVENT_IDX. */
	le_put16(drv_host(d, DRV_AVAIL, 2), VIRTQ_AVAIL_F_NO_INTERRUPT);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		le_put16(used_event, rows[i].used_event);
		if (virtq_should_notify(&d->q, &d->mem, rows[i].old, rows[i].new_used) !=
		    rows[i].notify)
			fail_msg("row %zu: used_event %u, [%u, %u): expected %d", i,
				 rows[i].used_event, rows[i].old, rows[i].new_used, rows[i].notify);
	}
	drv_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_init),
	    cmocka_unit_test(test_ready_checks),
	    cmocka_unit_test(test_simple_chain),
	    cmocka_unit_test(test_multi_segment_chain),
	    cmocka_unit_test(test_copy_helpers),
	    cmocka_unit_test(test_index_wrap),
	    cmocka_unit_test(test_long_run),
	    cmocka_unit_test(test_push_checks),
	    cmocka_unit_test(test_push_marks_dirty),
	    cmocka_unit_test(test_set_avail_event),
	    cmocka_unit_test(test_notify_flags),
	    cmocka_unit_test(test_notify_event_idx),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
