/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_harness.c - the migration harness's own pieces, without KVM: child
 * processes and their exit codes, consoles on pipes and files (every line
 * kept, CORRUPTION noted, waits bounded), ports and listeners, and the JSON
 * summary checks, a target whose guest runs on (hx_run_target_lines). The
 * children are /bin/sh one-liners.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "harness_console.h"
#include "harness_json.h"
#include "harness_net.h"
#include "harness_proc.h"
#include "harness_run.h"

static char err[512];

static int sh(struct hx_proc *p, const char *script, const char *out_path, int *fd)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	char *env[] = {"HX_TEST_VALUE=42", NULL};
	struct hx_spawn s = {argv, env, out_path, "/dev/null"};

	return hx_spawn(p, "sh", &s, fd, err, sizeof(err));
}

static void test_exit_codes(void **state)
{
	struct hx_proc p;
	int fd;

	(void)state;
	assert_int_equal(sh(&p, "exit 3", "/dev/null", &fd), 0);
	assert_int_equal(fd, -1);
	assert_int_equal(hx_reap(&p, 10000), 3);
	assert_int_equal(sh(&p, "kill -TERM $$", "/dev/null", &fd), 0);
	assert_int_equal(hx_reap(&p, 10000), 128 + SIGTERM);
	/* a process that outlives its deadline is killed */
	assert_int_equal(sh(&p, "exec sleep 100", "/dev/null", &fd), 0);
	assert_int_equal(hx_wait_exit(&p, 50), -ETIMEDOUT);
	assert_true(hx_running(&p));
	assert_int_equal(hx_reap(&p, 0), 128 + SIGKILL);
	assert_false(hx_running(&p));
	/* a program that cannot run is the spawner's error */
	char *argv[] = {"/nonexistent/vmm", NULL};
	struct hx_spawn s = {argv, NULL, "/dev/null", NULL};

	assert_int_equal(hx_spawn(&p, "x", &s, &fd, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "/nonexistent/vmm"));
}

static void test_pipe_console(void **state)
{
	struct hx_proc p;
	struct hx_console c;
	int fd;

	(void)state;
	assert_int_equal(sh(&p,
			    "echo one; echo \"value $HX_TEST_VALUE\"; sleep 0.2; "
			    "echo 'dirty pass 1 ok'; echo 'dirty pass 3 ok'; "
			    "echo 'vmm-firmware: CORRUPTION at page 7'; printf 'no newline'",
			    NULL, &fd),
			 0);
	assert_int_equal(hx_console_pipe(&c, "sh", fd, err, sizeof(err)), 0);
	/* lines that came before the wait count: nothing is missed */
	assert_int_equal(
	    hx_wait_line(NULL, &c, "dirty pass [0-9]+ ok", 2, 0, 10000, err, sizeof(err)), 0);
	assert_int_equal(hx_wait_line(NULL, &c, "^no newline$", 1, 0, 10000, err, sizeof(err)),
			 0); /* the last line counts once the pipe ends */
	assert_true(c.eof);
	assert_int_equal(c.nlines, 6);
	assert_string_equal(hx_console_line(&c, 1), "value 42"); /* env reached the child */
	assert_string_equal(hx_console_corruption(&c), "vmm-firmware: CORRUPTION at page 7");
	assert_true(c.lines[3].t_ms >= c.lines[1].t_ms + 150); /* stamped when read */
	/* an ended console ends a wait at once */
	assert_int_equal(hx_wait_line(NULL, &c, "never", 1, 0, 60000, err, sizeof(err)), -ENODATA);
	assert_int_equal(hx_wait_line(NULL, &c, "(", 1, 0, 10, err, sizeof(err)), -EINVAL);
	assert_int_equal(hx_reap(&p, 10000), 0);
	hx_console_close(&c);
	hx_console_close(&c); /* twice is harmless */
}

static void test_file_console(void **state)
{
	char path[] = "/tmp/hx-test-XXXXXX";
	struct hx_proc p;
	struct hx_console c;
	uint64_t t0;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(sh(&p, "echo ready; sleep 0.3; echo done", path, &fd), 0);
	assert_int_equal(hx_console_file(&c, "sh", path, &p, err, sizeof(err)), 0);
	assert_int_equal(hx_wait_line(NULL, &c, "^ready$", 1, 0, 10000, err, sizeof(err)), 0);
	/* a bounded wait for a line that is not there yet times out */
	t0 = now_ns();
	assert_int_equal(hx_wait_line(NULL, &c, "^done$", 1, 0, 20, err, sizeof(err)), -ETIMEDOUT);
	assert_true(now_ns() - t0 >= 20000000ull);
	assert_non_null(strstr(err, "0 of 1 lines of sh matched"));
	assert_int_equal(hx_wait_line(NULL, &c, "^done$", 1, 0, 10000, err, sizeof(err)), 0);
	/* the writer gone and the file read: the end */
	assert_int_equal(hx_wait_exit(&p, 10000), 0);
	assert_int_equal(hx_wait_line(NULL, &c, "more", 1, 0, 60000, err, sizeof(err)), -ENODATA);
	assert_null(hx_console_corruption(&c));
	hx_console_close(&c);
	unlink(path);
}

static void test_ports(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int port = hx_free_port(), fd;
	struct hx_proc self = {.pid = getpid(), .name = "self"};

	(void)state;
	assert_true(port > 0 && port < 65536);
	assert_false(hx_listening(NULL, port));
	assert_int_equal(hx_wait_listen(NULL, port, 20, err, sizeof(err)), -ETIMEDOUT);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_port = htons((uint16_t)port);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_false(hx_listening(NULL, port)); /* bound is not listening */
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(hx_wait_listen(NULL, port, 10000, err, sizeof(err)), 0);
	/* found as this process's own socket, in its own namespace */
	assert_true(hx_listening(&self, port));
	close(fd);
	assert_false(hx_listening(NULL, port));
}

static void test_json(void **state)
{
	cJSON *j = cJSON_Parse("{\"state\":\"completed\",\"resumes\":1,\"downtime_us\":625.5,"
			       "\"bitmap_bytes\":40,\"sent_bytes\":322986000000,"
			       "\"converged\":true,\"list\":[1]}");
	char buf[64];

	(void)state;
	assert_non_null(j);
	assert_true(hx_json_num(j, "downtime_us") == 625.5);
	assert_true(hx_json_num(j, "missing") == -1);
	assert_true(hx_json_text(j, "resumes", buf, sizeof(buf)));
	assert_string_equal(buf, "1");
	assert_true(hx_json_text(j, "downtime_us", buf, sizeof(buf)));
	assert_string_equal(buf, "625.5");
	assert_true(hx_json_text(j, "bitmap_bytes", buf, sizeof(buf)));
	assert_string_equal(buf, "40"); /* integers in digits, for the shell's arithmetic */
	assert_true(hx_json_text(j, "sent_bytes", buf, sizeof(buf)));
	assert_string_equal(buf, "322986000000");
	assert_false(hx_json_text(j, "list", buf, sizeof(buf)));
	assert_int_equal(hx_json_expect(j, "state=completed", err, sizeof(err)), 0);
	assert_int_equal(hx_json_expect(j, "resumes=1", err, sizeof(err)), 0);
	assert_int_equal(hx_json_expect(j, "resumes=1.0", err, sizeof(err)), 0);
	assert_int_equal(hx_json_expect(j, "converged=true", err, sizeof(err)), 0);
	assert_int_equal(hx_json_expect(j, "state=failed", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "completed"));
	assert_int_equal(hx_json_expect(j, "resumes=2", err, sizeof(err)), -EINVAL);
	assert_int_equal(hx_json_expect(j, "nokey=1", err, sizeof(err)), -EINVAL);
	assert_int_equal(hx_json_expect(j, "state", err, sizeof(err)), -EINVAL);
	cJSON_Delete(j);
}

/* r's target: a /bin/sh one-liner, its console in a file (as vmm's are). */
static void fake_file_target(struct hx_run *r, const char *script, char *path)
{
	int fd;

	strcpy(path, "/tmp/hx-test-XXXXXX");
	fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	memset(r, 0, sizeof(*r));
	snprintf(r->dst_err, sizeof(r->dst_err), "/dev/null");
	assert_int_equal(sh(&r->dst, script, path, &fd), 0);
	assert_int_equal(hx_console_file(&r->dst_out, "dst", path, &r->dst, err, sizeof(err)), 0);
	hx_watch_add(&r->watch, &r->dst_out);
}

static void end_file_target(struct hx_run *r, char *path)
{
	hx_reap(&r->dst, 0);
	hx_console_close(&r->dst_out);
	unlink(path);
}

static void test_target_lines_file(void **state)
{
	char path[32];
	struct hx_run r;

	(void)state;
	/* A guest that runs on, its console a file: N passes, then the SIGTERM that ends it. */
	fake_file_target(
	    &r, "i=0; while :; do i=$((i+1)); echo \"dirty pass $i ok\"; sleep 0.05; done", path);
	assert_int_equal(
	    hx_run_target_lines(&r, "dirty pass [0-9]+ ok", 3, 10000, err, sizeof(err)), 0);
	assert_false(hx_running(&r.dst));
	end_file_target(&r, path);
	/* One that printed its lines and exited did not run on: that fails, by name. */
	fake_file_target(&r, "echo 'dirty pass 1 ok'; echo 'dirty pass 2 ok'; exit 0", path);
	assert_int_equal(hx_wait_exit(&r.dst, 10000), 0);
	assert_int_equal(
	    hx_run_target_lines(&r, "dirty pass [0-9]+ ok", 2, 10000, err, sizeof(err)), -ESRCH);
	assert_non_null(strstr(err, "the target exited"));
	end_file_target(&r, path);
}

static void test_argv(void **state)
{
	struct hx_argv a = {0};
	char *more[] = {"--set", "vm.name=x", NULL};

	(void)state;
	hx_argv_split(&a, "  ip netns  exec ns1 ");
	hx_argv_add(&a, "vmm");
	hx_argv_addv(&a, more);
	hx_argv_addv(&a, NULL);
	hx_argv_addf(&a, "127.0.0.1:%d", 7000);
	assert_int_equal(a.n, 8);
	assert_string_equal(a.v[0], "ip");
	assert_string_equal(a.v[3], "ns1");
	assert_string_equal(a.v[4], "vmm");
	assert_string_equal(a.v[7], "127.0.0.1:7000");
	assert_null(a.v[8]);
	assert_false(a.overflow);
	for (int i = 0; i < HX_ARGV_MAX; i++)
		hx_argv_add(&a, "x");
	assert_true(a.overflow);
	hx_argv_free(&a);
}

/* r's target: a /bin/sh one-liner, its console on a pipe. */
static void fake_target(struct hx_run *r, const char *script)
{
	int fd;

	memset(r, 0, sizeof(*r));
	snprintf(r->dst_err, sizeof(r->dst_err), "/dev/null");
	assert_int_equal(sh(&r->dst, script, NULL, &fd), 0);
	assert_int_equal(hx_console_pipe(&r->dst_out, "dst", fd, err, sizeof(err)), 0);
	hx_watch_add(&r->watch, &r->dst_out);
}

static void test_target_lines(void **state)
{
	struct hx_run r;

	(void)state;
	/* Two passes verified, the guest runs on: SIGTERM ends it, and that is a pass. */
	fake_target(&r, "echo 'blk: pass 3 ok'; sleep 0.1; echo 'blk: pass 4 ok'; exec sleep 60");
	assert_int_equal(hx_run_target_lines(&r, "blk: pass [0-9]+ ok", 2, 10000, err, sizeof(err)),
			 0);
	assert_false(hx_running(&r.dst));
	hx_console_close(&r.dst_out);
	/* A guest that found a corruption (and stopped): that is the message. */
	fake_target(&r, "echo 'blk: pass 3 ok'; echo 'vmm-firmware: blk: CORRUPTION at block 9'");
	assert_int_equal(hx_run_target_lines(&r, "blk: pass [0-9]+ ok", 2, 10000, err, sizeof(err)),
			 -EIO);
	assert_non_null(strstr(err, "CORRUPTION at block 9"));
	hx_reap(&r.dst, 10000);
	hx_console_close(&r.dst_out);
	/* A target that ends too soon, and one that runs on without the lines. */
	fake_target(&r, "echo 'blk: pass 3 ok'");
	assert_int_equal(hx_run_target_lines(&r, "blk: pass [0-9]+ ok", 2, 10000, err, sizeof(err)),
			 -ENODATA);
	assert_non_null(strstr(err, "ended before 2 lines"));
	hx_reap(&r.dst, 10000);
	hx_console_close(&r.dst_out);
	fake_target(&r, "echo 'blk: pass 3 ok'; exec sleep 60");
	assert_int_equal(hx_run_target_lines(&r, "blk: pass [0-9]+ ok", 2, 300, err, sizeof(err)),
			 -ETIMEDOUT);
	hx_signal(&r.dst, SIGKILL);
	hx_reap(&r.dst, 10000);
	hx_console_close(&r.dst_out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exit_codes),	 cmocka_unit_test(test_pipe_console),
	    cmocka_unit_test(test_file_console), cmocka_unit_test(test_ports),
	    cmocka_unit_test(test_json),	 cmocka_unit_test(test_argv),
	    cmocka_unit_test(test_target_lines), cmocka_unit_test(test_target_lines_file),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
