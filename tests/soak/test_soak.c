/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_soak.c - the soak's pieces that need no KVM (`unit.test_soak`): the
 * flatness verdict over the per-hop counts, the heartbeat scan that tells
 * a guest that went on from one that restarted, and the /proc counts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <stdio.h>
#include <unistd.h>

#include "soak_hop.h"
#include "soak_node.h"
#include "soak_report.h"

static const struct soak_counts boot = {15, 4, 68 * 1024};

static struct soak_row row(int hop, long fds, long threads, long rss_kb, bool ok)
{
	struct soak_row r = {.hop = hop,
			     .from = "A",
			     .to = "B",
			     .postcopy = hop % 2 == 0,
			     .total_ms = 100,
			     .downtime_ms = 1,
			     .hop_ms = 1000,
			     .have_counts = ok,
			     .c = {fds, threads, rss_kb},
			     .counts_stable = true,
			     .passes = hop * 2,
			     .ok = ok};

	if (!ok)
		snprintf(r.why, sizeof(r.why), "a test failure");
	return r;
}

/* Runs hops rows through a report with the default slack; its verdict. */
static bool verdict(const struct soak_row *rows, int n, int asked)
{
	struct soak_report r = {.slack = {0, 0, 32 * 1024}};

	soak_report_start(&r, &boot);
	for (int i = 0; i < n; i++)
		soak_report_row(&r, &rows[i]);
	return soak_report_end(&r, asked);
}

static void test_flat_passes(void **state)
{
	struct soak_row rows[6];

	(void)state;
	/* precopy and postcopy targets may differ; each mode stays the same */
	for (int i = 0; i < 6; i++)
		rows[i] = row(i + 1, i % 2 ? 16 : 15, 4, 72 * 1024 + (i % 3) * 300, true);
	assert_true(verdict(rows, 6, 6));
}

static void test_growing_fds_fail(void **state)
{
	struct soak_row rows[6];

	(void)state;
	for (int i = 0; i < 6; i++)
		rows[i] = row(i + 1, 15 + (i >= 4 && i % 2 == 0), 4, 72 * 1024, true);
	assert_false(verdict(rows, 6, 6));
}

static void test_growing_threads_fail(void **state)
{
	struct soak_row rows[4];

	(void)state;
	for (int i = 0; i < 4; i++)
		rows[i] = row(i + 1, 15, 4 + i / 2, 72 * 1024, true);
	assert_false(verdict(rows, 4, 4));
}

static void test_rss_slack(void **state)
{
	struct soak_row rows[4];

	(void)state;
	for (int i = 0; i < 4; i++)
		rows[i] = row(i + 1, 15, 4, 72 * 1024 + i * 10 * 1024, true); /* +20 MiB per mode */
	assert_true(verdict(rows, 4, 4));
	for (int i = 0; i < 4; i++)
		rows[i] = row(i + 1, 15, 4, 72 * 1024 + i * 20 * 1024, true); /* +40 MiB */
	assert_false(verdict(rows, 4, 4));
}

static void test_failed_or_missing_hops_fail(void **state)
{
	struct soak_row rows[4];

	(void)state;
	for (int i = 0; i < 4; i++)
		rows[i] = row(i + 1, 15, 4, 72 * 1024, i != 2);
	assert_false(verdict(rows, 4, 4));
	for (int i = 0; i < 4; i++)
		rows[i] = row(i + 1, 15, 4, 72 * 1024, true);
	assert_false(verdict(rows, 3, 4)); /* stopped early */
	assert_false(verdict(rows, 0, 4)); /* no counts at all */
}

static void test_heartbeat_scan(void **state)
{
	char path[] = "/tmp/test_soak.XXXXXX", err[256];
	struct hx_console c;
	size_t n;
	int fd = mkstemp(path);
	static const char text[] =
	    "vmm-firmware: dirty working set 64 MiB\n"
	    "ok (16384 pages, 2 vCPUs)\n" /* the tail of a line cut at switchover */
	    "vmm-firmware: dirty pass 12 ok (16384 pages, 2 vCPUs)\n"
	    "vmm-firmware: dirty pass 13 ok (16384 pages, 2 vCPUs)\n"
	    "something else\n";

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
	close(fd);
	assert_int_equal(hx_console_file(&c, "test", path, NULL, err, sizeof(err)), 0);
	hx_console_pump(&c);
	assert_int_equal(soak_last_pass(&c, 0, &n), 13);
	assert_int_equal(n, 2);
	assert_int_equal(soak_last_pass(&c, 3, &n), 13);
	assert_int_equal(n, 1);
	assert_int_equal(soak_last_pass(&c, 4, &n), -1);
	assert_int_equal(n, 0);
	hx_console_close(&c);
	unlink(path);
}

static void test_counts_of_self(void **state)
{
	struct soak_counts c;
	int fd = dup(0);

	(void)state;
	assert_int_equal(soak_counts_read(getpid(), &c), 0);
	assert_true(c.fds >= 2);
	assert_int_equal(c.threads, 1);
	assert_true(c.rss_kb > 0);
	{
		struct soak_counts after;

		close(fd);
		assert_int_equal(soak_counts_read(getpid(), &after), 0);
		assert_int_equal(after.fds, c.fds - 1); /* it counts what the process holds */
	}
	assert_true(soak_counts_read(0x3fffffff, &c) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_flat_passes),
	    cmocka_unit_test(test_growing_fds_fail),
	    cmocka_unit_test(test_growing_threads_fail),
	    cmocka_unit_test(test_rss_slack),
	    cmocka_unit_test(test_failed_or_missing_hops_fail),
	    cmocka_unit_test(test_heartbeat_scan),
	    cmocka_unit_test(test_counts_of_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
