/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_config_caps.c - the input caps of config_load_file() (config.h
 * CONFIG_FILE_MAX, CONFIG_LINE_MAX): a file or a line over its cap, and
 * paths that are no regular file (/dev/zero, a FIFO, a directory), each
 * refused at once with one line naming the file, nothing loaded.
 *
 * The loads that could hang or grow without bound run in a child with an
 * alarm (and, outside ASan, an address-space limit), so a regression fails
 * the test instead of stalling it or eating the machine's memory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bounded_child.h"
#include "config.h"

#define LOAD_TIMEOUT_S 10

struct load_result {
	int rc;
	unsigned vcpus;
	char err[CONFIG_ERR_MAX];
};

#define assert_str(got, want)                                                                      \
	do {                                                                                       \
		if (strcmp((got), (want)))                                                         \
			fail_msg("got \"%s\", want \"%s\"", (got), (want));                        \
	} while (0)

static void load_child(void *arg, void *result)
{
	struct load_result *r = result;
	struct vm_config *cfg = malloc(sizeof(*cfg));

	if (!cfg)
		_exit(3);
	config_defaults(cfg);
	r->rc = config_load_file(cfg, arg, r->err, sizeof(r->err));
	r->vcpus = cfg->vcpus;
}

/* config_load_file(path) in a child, bounded in time and (outside ASan) memory. */
static struct load_result load_bounded(const char *path)
{
	struct load_result r = {0};
	char what[PATH_MAX + 32];

	snprintf(what, sizeof(what), "config_load_file(%s)", path);
	bounded_child_run(what, LOAD_TIMEOUT_S, 512u << 20, load_child, (void *)path, &r,
			  sizeof(r));
	return r;
}

/* A temp file of exactly `size` bytes: `head`, then '#' comment lines. */
static char *write_sized(const char *head, size_t size)
{
	char *path = strdup("/tmp/vmm-test-caps-XXXXXX");
	size_t hl = strlen(head);
	char *buf = malloc(size);
	int fd;

	assert_non_null(path);
	assert_non_null(buf);
	assert_true(hl <= size);
	memcpy(buf, head, hl);
	memset(buf + hl, '#', size - hl);
	for (size_t i = hl + 79; i < size; i += 80)
		buf[i] = '\n';
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, size), (ssize_t)size);
	close(fd);
	free(buf);
	return path;
}

static char *write_text(const char *text, size_t len)
{
	char *path = strdup("/tmp/vmm-test-caps-XXXXXX");
	int fd;

	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	return path;
}

static void test_file_at_cap_loads(void **state)
{
	char *path = write_sized("[vm]\nvcpus = 3\n", CONFIG_FILE_MAX);
	struct load_result r;

	(void)state;
	r = load_bounded(path);
	if (r.rc)
		fail_msg("a file of exactly %d bytes: %s", CONFIG_FILE_MAX, r.err);
	assert_int_equal(r.vcpus, 3);
	unlink(path);
	free(path);
}

static void test_file_over_cap(void **state)
{
	char *path = write_sized("[vm]\nvcpus = 3\n", CONFIG_FILE_MAX + 1);
	char want[CONFIG_ERR_MAX];
	struct load_result r;

	(void)state;
	r = load_bounded(path);
	assert_int_equal(r.rc, -EFBIG);
	snprintf(want, sizeof(want),
		 "%s: cannot read config: the file is %d bytes, the limit is 1 MiB", path,
		 CONFIG_FILE_MAX + 1);
	assert_str(r.err, want);
	assert_int_equal(r.vcpus, 1); /* nothing loaded */
	unlink(path);
	free(path);
}

/* A line of `len` bytes (a comment) between two keys. */
static char *line_file(size_t len, const char *eol)
{
	size_t n = 32 + len;
	char *text = malloc(n + 32);
	char *path;
	int k;

	assert_non_null(text);
	k = snprintf(text, 32, "[vm]\nvcpus = 2\n");
	memset(text + k, ';', len);
	k += (int)len;
	k += snprintf(text + k, 32, "%sname = x\n", eol);
	path = write_text(text, (size_t)k);
	free(text);
	return path;
}

static void test_line_at_cap_loads(void **state)
{
	(void)state;
	for (int crlf = 0; crlf < 2; crlf++) {
		char *path = line_file(CONFIG_LINE_MAX, crlf ? "\r\n" : "\n");
		struct load_result r = load_bounded(path);

		if (r.rc)
			fail_msg("a line of exactly %d bytes: %s", CONFIG_LINE_MAX, r.err);
		assert_int_equal(r.vcpus, 2);
		unlink(path);
		free(path);
	}
}

static void test_line_over_cap(void **state)
{
	char *path = line_file(CONFIG_LINE_MAX + 1, "\n");
	char want[CONFIG_ERR_MAX];
	struct load_result r;

	(void)state;
	r = load_bounded(path);
	assert_int_equal(r.rc, -EINVAL);
	snprintf(want, sizeof(want), "%s:3: line is %d bytes long, the limit is %d bytes", path,
		 CONFIG_LINE_MAX + 1, CONFIG_LINE_MAX);
	assert_str(r.err, want);
	assert_int_equal(r.vcpus, 1); /* the copy is not committed */
	unlink(path);
	free(path);
}

/* The longest value a config holds, a PATH_MAX - 1 byte path, is well within a line. */
static void test_longest_path_fits(void **state)
{
	char *text = malloc(PATH_MAX + 64);
	char *path;
	struct load_result r;
	int k;

	(void)state;
	assert_non_null(text);
	k = snprintf(text, 64, "[firmware]\npath = /");
	memset(text + k, 'a', PATH_MAX - 2);
	k += PATH_MAX - 2;
	k += snprintf(text + k, 64, " ; the longest path\n");
	path = write_text(text, (size_t)k);
	r = load_bounded(path);
	if (r.rc)
		fail_msg("a PATH_MAX - 1 byte path: %s", r.err);
	unlink(path);
	free(path);
	free(text);
}

/* NULs with no newline (a sparse or binary file): a long line, not a hang or a parse. */
static void test_nul_bytes_no_newline(void **state)
{
	size_t n = 4 * CONFIG_LINE_MAX;
	char *zeros = calloc(1, n);
	char *path, want[CONFIG_ERR_MAX];
	struct load_result r;

	(void)state;
	assert_non_null(zeros);
	path = write_text(zeros, n);
	r = load_bounded(path);
	assert_int_equal(r.rc, -EINVAL);
	snprintf(want, sizeof(want), "%s:1: line is %zu bytes long, the limit is %d bytes", path, n,
		 CONFIG_LINE_MAX);
	assert_str(r.err, want);
	unlink(path);
	free(path);
	free(zeros);
}

static void test_string_line_over_cap(void **state)
{
	size_t n = CONFIG_LINE_MAX + 1;
	char *text = malloc(n + 16);
	struct vm_config *cfg = malloc(sizeof(*cfg));
	char err[CONFIG_ERR_MAX], want[CONFIG_ERR_MAX];

	(void)state;
	assert_non_null(text);
	assert_non_null(cfg);
	config_defaults(cfg);
	memcpy(text, "[vm]\n", 5);
	memset(text + 5, '#', n);
	text[5 + n] = '\0';
	assert_int_equal(config_load_string(cfg, text, "migration stream", err, sizeof(err)),
			 -EINVAL);
	snprintf(want, sizeof(want),
		 "migration stream:2: line is %zu bytes long, the limit is %d bytes", n,
		 CONFIG_LINE_MAX);
	assert_str(err, want);
	free(text);
	free(cfg);
}

static void test_dev_zero(void **state)
{
	struct load_result r;

	(void)state;
	r = load_bounded("/dev/zero");
	assert_int_equal(r.rc, -EINVAL);
	assert_str(r.err, "/dev/zero: cannot read config: not a regular file (a device)");
}

static void test_fifo(void **state)
{
	char dir[] = "/tmp/vmm-test-caps-XXXXXX", path[64], want[128];
	struct load_result r;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/fifo.cfg", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	/* nobody writes: opening it must not wait for a writer */
	r = load_bounded(path);
	assert_int_equal(r.rc, -EINVAL);
	snprintf(want, sizeof(want), "%s: cannot read config: not a regular file (a FIFO or pipe)",
		 path);
	assert_str(r.err, want);
	unlink(path);
	rmdir(dir);
}

static void test_directory(void **state)
{
	struct load_result r;

	(void)state;
	r = load_bounded("/tmp");
	assert_int_equal(r.rc, -EISDIR);
	assert_str(r.err, "/tmp: cannot read config: Is a directory");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_file_at_cap_loads),
	    cmocka_unit_test(test_file_over_cap),
	    cmocka_unit_test(test_line_at_cap_loads),
	    cmocka_unit_test(test_line_over_cap),
	    cmocka_unit_test(test_longest_path_fits),
	    cmocka_unit_test(test_nul_bytes_no_newline),
	    cmocka_unit_test(test_string_line_over_cap),
	    cmocka_unit_test(test_dev_zero),
	    cmocka_unit_test(test_fifo),
	    cmocka_unit_test(test_directory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
