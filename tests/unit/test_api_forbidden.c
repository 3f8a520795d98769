/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api_forbidden.c - the API's 403 for a peer that is neither the
 * VMM's uid nor root: its text names root once, also when the VMM itself
 * runs as root (issue 24, finding 7: "only uid 0 and root may use this
 * socket").
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <event2/thread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_client.h"
#include "api_routes.h"
#include "test_api_server.h"

#define ROOT_TEXT "permission denied: only root (uid 0) may use this socket"

#define assert_str(got, want)                                                                      \
	do {                                                                                       \
		if (strcmp((got), (want)))                                                         \
			fail_msg("got \"%s\", want \"%s\"", (got), (want));                        \
	} while (0)

static void test_text_root_owner(void **state)
{
	char buf[128];

	(void)state;
	api_forbidden_text(buf, sizeof(buf), 0);
	assert_str(buf, ROOT_TEXT);
}

static void test_text_user_owner(void **state)
{
	char buf[128];

	(void)state;
	api_forbidden_text(buf, sizeof(buf), 1000);
	assert_str(buf, "permission denied: only uid 1000 and root may use this socket");
}

/* The reply itself: a server running as root, a client of uid 65534. */
static void test_reply_as_root(void **state)
{
	struct srv *s;
	char sub[128];
	int p[2], wstatus;
	char got[256] = "";
	ssize_t n;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip(); /* needs a second uid, and root's own server */
	s = srv_start("forbidden", 1);
	snprintf(sub, sizeof(sub), "%s/run", s->dir);
	assert_int_equal(chmod(s->dir, 0711), 0);
	assert_int_equal(chmod(sub, 0711), 0);
	assert_int_equal(chmod(s->path, 0666), 0);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct api_response r;
		char err[256];

		close(p[0]);
		if (setgid(65534) || setuid(65534))
			_exit(3);
		if (api_client_request(s->path, "GET", "/api/v1/vm", NULL, 5000, &r, err,
				       sizeof(err)))
			_exit(4);
		if (r.status != 403)
			_exit(5);
		n = write(p[1], api_response_error(&r), strlen(api_response_error(&r)));
		_exit(n > 0 ? 0 : 6);
	}
	close(p[1]);
	n = read(p[0], got, sizeof(got) - 1);
	close(p[0]);
	assert_int_equal(waitpid(pid, &wstatus, 0), pid);
	assert_true(WIFEXITED(wstatus));
	assert_int_equal(WEXITSTATUS(wstatus), 0);
	assert_true(n > 0);
	got[n] = '\0';
	assert_str(got, ROOT_TEXT);
	srv_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_text_root_owner),
	    cmocka_unit_test(test_text_user_owner),
	    cmocka_unit_test(test_reply_as_root),
	};

	evthread_use_pthreads(); /* srv_stop() wakes the loop from this thread */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
