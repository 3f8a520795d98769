/* SPDX-License-Identifier: Apache-2.0 */
/* unix_addr: sockets bound and reached at paths longer than sun_path. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "unix_addr.h"

static char base[512]; /* the mkdtemp() root and 4 levels below it */

static int make_dirs(void **state)
{
	char tmpl[] = "/tmp/vmm-unix-addr-XXXXXX";

	(void)state;
	if (!mkdtemp(tmpl))
		return -1;
	/* 4 levels of 60-character names: far past the 107 bytes of sun_path. */
	snprintf(base, sizeof(base), "%s", tmpl);
	for (int i = 0; i < 4; i++) {
		size_t n = strlen(base);

		snprintf(base + n, sizeof(base) - n, "/%060d", i);
		if (mkdir(base, 0700))
			return -1;
	}
	return 0;
}

static void remove_dirs(void)
{
	char cmd[PATH_MAX + 16];
	char *p = strstr(base, "/vmm-unix-addr-");

	/* rm the mkdtemp() root only */
	if (p && (p = strchr(p + 1, '/')))
		*p = '\0';
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", base);
}

static int drop_dirs(void **state)
{
	(void)state;
	remove_dirs();
	return 0;
}

static void test_short_path_is_direct(void **state)
{
	struct unix_addr ua;

	(void)state;
	assert_int_equal(unix_addr_fill(&ua, "/run/vmm/x.sock"), 0);
	assert_int_equal(ua.dirfd, -1);
	assert_string_equal(ua.sa.sun_path, "/run/vmm/x.sock");
	unix_addr_release(&ua);
}

static void test_long_path_binds_and_connects(void **state)
{
	char path[PATH_MAX];
	struct unix_addr ua;
	struct stat st;
	int lfd, cfd, afd;

	(void)state;
	snprintf(path, sizeof(path), "%s/vm.sock", base);
	assert_true(strlen(path) > sizeof(ua.sa.sun_path));

	assert_int_equal(unix_addr_fill(&ua, path), 0);
	assert_true(ua.dirfd >= 0);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&ua.sa, sizeof(ua.sa)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	unix_addr_release(&ua);
	assert_int_equal(ua.dirfd, -1);
	/* The socket file is where the long path says, not under /proc. */
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));

	assert_int_equal(unix_addr_fill(&ua, path), 0);
	cfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_int_equal(connect(cfd, (struct sockaddr *)&ua.sa, sizeof(ua.sa)), 0);
	unix_addr_release(&ua);
	afd = accept(lfd, NULL, NULL);
	assert_true(afd >= 0);
	assert_int_equal(write(cfd, "x", 1), 1);
	{
		char c = 0;

		assert_int_equal(read(afd, &c, 1), 1);
		assert_int_equal(c, 'x');
	}
	close(afd);
	close(cfd);
	close(lfd);
	unlink(path);
}

static void test_errors(void **state)
{
	char path[PATH_MAX];
	struct unix_addr ua;

	(void)state;
	assert_int_equal(unix_addr_fill(&ua, ""), -ENAMETOOLONG);
	/* A file name that cannot fit even behind /proc/self/fd/N/. */
	snprintf(path, sizeof(path), "%s/%0120d.sock", base, 7);
	assert_int_equal(unix_addr_fill(&ua, path), -ENAMETOOLONG);
	assert_int_equal(ua.dirfd, -1);
	/* A long path whose directory does not exist. */
	snprintf(path, sizeof(path), "%s/missing/vm.sock", base);
	assert_int_equal(unix_addr_fill(&ua, path), -ENOENT);
	assert_int_equal(ua.dirfd, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_short_path_is_direct),
	    cmocka_unit_test(test_long_path_binds_and_connects),
	    cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, make_dirs, drop_dirs);
}
