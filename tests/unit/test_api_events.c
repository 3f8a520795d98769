/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api_events.c - GET /api/v1/vm/events without KVM: the first line of
 * a stream, the limit of 8 streams (a JSON 503, a freed slot serves again),
 * the "snapshot" lines of real snapshots of the fake VM (PUT
 * /api/v1/vm/snapshot: held active in vm_pause(), then failing at their
 * first KVM ioctl, which is all a VM without KVM allows: no snapshot
 * completes here), and the client's decoding of chunked JSON lines
 * (api_stream.c) against a fake server: lines split across chunks, several
 * in one, the last chunk, a malformed chunk size.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/thread.h>
#include <sys/un.h>

#include "api_client.h"
#include "api_events.h"
#include "api_stream.h"
#include "clock.h"
#include "snapshot.h"
#include "test_api_server.h"

static cJSON *next_line(struct api_stream *st)
{
	char err[256];
	cJSON *j;
	int ret = api_stream_next(st, 5000, &j, err, sizeof(err));

	if (ret)
		fail_msg("api_stream_next: %d %s", ret, err);
	return j;
}

static const char *str(const cJSON *j, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, name);

	assert_true(cJSON_IsString(v));
	return v->valuestring;
}

static void test_first_line(void **state)
{
	struct srv *s = srv_start("ev", 1);
	struct api_stream st;
	struct api_response r;
	char err[256];
	cJSON *j;

	(void)state;
	assert_int_equal(
	    api_stream_open(&st, s->path, "/api/v1/vm/events", 5000, &r, err, sizeof(err)), 0);
	j = next_line(&st);
	assert_string_equal(str(j, "type"), "state");
	assert_string_equal(str(j, "vm_state"), "running");
	assert_string_equal(str(j, "state"), "none");
	assert_true(cJSON_GetObjectItemCaseSensitive(j, "timestamp_ms")->valuedouble > 1.0e12);
	/* the progress object's members are there too */
	assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, "sent_bytes")));
	cJSON_Delete(j);
	/* nothing happens: no more lines */
	assert_int_equal(api_stream_next(&st, 300, &j, err, sizeof(err)), -ETIMEDOUT);
	api_stream_close(&st);
	srv_stop(s);
}

static void test_watcher_limit(void **state)
{
	struct srv *s = srv_start("ev", 1);
	struct api_stream st[API_EVENTS_MAX_WATCHERS], extra;
	struct api_response r;
	char err[256];
	uint64_t t0;
	int ret;

	(void)state;
	for (int i = 0; i < API_EVENTS_MAX_WATCHERS; i++) {
		assert_int_equal(api_stream_open(&st[i], s->path, "/api/v1/vm/events", 5000, &r,
						 err, sizeof(err)),
				 0);
		cJSON_Delete(next_line(&st[i]));
	}
	assert_int_equal(
	    api_stream_open(&extra, s->path, "/api/v1/vm/events", 5000, &r, err, sizeof(err)), 503);
	assert_non_null(strstr(api_response_error(&r), "too many event streams: 8 are open"));
	api_response_free(&r);
	/* other requests are still served */
	assert_int_equal(
	    api_client_request(s->path, "GET", "/api/v1/vm", NULL, 5000, &r, err, sizeof(err)), 0);
	assert_int_equal(r.status, 200);
	api_response_free(&r);
	/* a watcher that goes away frees its slot (once the server noticed) */
	api_stream_close(&st[0]);
	t0 = now_ns();
	do {
		ret = api_stream_open(&st[0], s->path, "/api/v1/vm/events", 5000, &r, err,
				      sizeof(err));
		api_response_free(&r);
		if (ret)
			sleep_ms(20);
	} while (ret == 503 && ms_since(t0) < 5000);
	assert_int_equal(ret, 0);
	cJSON_Delete(next_line(&st[0]));
	for (int i = 0; i < API_EVENTS_MAX_WATCHERS; i++)
		api_stream_close(&st[i]);
	srv_stop(s);
}

/* ---- snapshots ---- */

struct put {
	const char *path;
	char dir[128];
	pthread_t thread;
	struct api_response r;
	int ret;
};

/* PUT /api/v1/vm/snapshot {"to": dir}: its reply waits for the snapshot's end. */
static void *put_snapshot(void *arg)
{
	struct put *p = arg;
	cJSON *body = cJSON_CreateObject();
	char err[256];

	cJSON_AddStringToObject(body, "to", p->dir);
	p->ret = api_client_request(p->path, "PUT", "/api/v1/vm/snapshot", body, 10000, &p->r, err,
				    sizeof(err));
	cJSON_Delete(body);
	return NULL;
}

/* The next line, a "snapshot" one: its snapshot object (detached; the line is freed). */
static cJSON *next_snapshot(struct api_stream *st, double *ts)
{
	static const char *const members[] = {
	    "state",
	    "dir",
	    "id",
	    "stop",
	    "live",
	    "passes",
	    "converged",
	    "expected_pause_ms",
	    "diff",
	    "generation",
	    "parent",
	    "ram_bytes",
	    "pages_total",
	    "pages_done",
	    "pages_written",
	    "state_bytes",
	    "pause_us",
	    "sync_us",
	    "total_ms",
	    "error",
	};
	cJSON *j = next_line(st), *snap;

	assert_string_equal(str(j, "type"), "snapshot");
	assert_string_equal(str(j, "vm_state"), "running");
	if (ts)
		*ts = cJSON_GetObjectItemCaseSensitive(j, "timestamp_ms")->valuedouble;
	/* the snapshot object, whole, as GET /api/v1/vm/snapshot's reply */
	snap = cJSON_DetachItemFromObjectCaseSensitive(j, "snapshot");
	assert_true(cJSON_IsObject(snap));
	assert_int_equal(cJSON_GetArraySize(snap), sizeof(members) / sizeof(members[0]));
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++)
		assert_non_null(cJSON_GetObjectItemCaseSensitive(snap, members[i]));
	/* none of the progress object's members: a snapshot line is not a migration's */
	assert_null(cJSON_GetObjectItemCaseSensitive(j, "sent_bytes"));
	cJSON_Delete(j);
	return snap;
}

/* Lines of `dir`'s snapshot up to its final one ("active" ones may come first), in `state`. */
static void expect_final(struct api_stream *st, const char *dir, const char *state)
{
	for (int i = 0; i < 100; i++) {
		cJSON *snap = next_snapshot(st, NULL);
		bool active = !strcmp(str(snap, "state"), "active");

		assert_string_equal(str(snap, "dir"), dir);
		if (!active) {
			assert_string_equal(str(snap, "state"), state);
			assert_true(str(snap, "error")[0] != '\0');
		}
		cJSON_Delete(snap);
		if (!active)
			return;
	}
	fail_msg("no final line for the snapshot to %s", dir);
}

/* No line within ms, and the stream still open: nothing more was said, nothing ended. */
static void expect_quiet(struct api_stream *st, int ms)
{
	char err[256];
	cJSON *j = NULL;
	int ret = api_stream_next(st, ms, &j, err, sizeof(err));

	if (ret != -ETIMEDOUT) {
		char *text = j ? cJSON_PrintUnformatted(j) : NULL;

		fail_msg("expected no line, got %d %s %s", ret, ret ? err : "", text ? text : "");
	}
}

static void test_snapshot_lines(void **state)
{
	struct srv *s = srv_start("evsnap", 1);
	struct api_stream a, b, c;
	struct api_response r;
	struct put one = {0}, two = {0};
	struct snapshot *last;
	char base[64], err[256];
	double t0, t1;
	cJSON *j, *snap;

	(void)state;
	snprintf(base, sizeof(base), "/tmp/vmm-test-evsnapdir-XXXXXX");
	assert_non_null(mkdtemp(base));
	snprintf(one.dir, sizeof(one.dir), "%s/one", base);
	snprintf(two.dir, sizeof(two.dir), "%s/two", base);
	one.path = two.path = s->path;
	/*
	 * The fake VM has no KVM: its first ioctl (the VM state's) fails with
	 * EBADF. One "vCPU" that never parks holds the snapshot in vm_pause(),
	 * active, until the test lets it go.
	 */
	s->vm.vm_fd = -1;
	s->vm.running = 1;
	assert_int_equal(
	    api_stream_open(&a, s->path, "/api/v1/vm/events", 5000, &r, err, sizeof(err)), 0);
	cJSON_Delete(next_line(&a));
	assert_int_equal(pthread_create(&one.thread, NULL, put_snapshot, &one), 0);

	/* its start, then progress lines, API_EVENTS_PROGRESS_MS apart at least */
	snap = next_snapshot(&a, &t0);
	assert_string_equal(str(snap, "state"), "active");
	assert_string_equal(str(snap, "dir"), one.dir);
	assert_string_equal(str(snap, "id"), "");
	cJSON_Delete(snap);
	snap = next_snapshot(&a, &t1);
	assert_string_equal(str(snap, "state"), "active");
	cJSON_Delete(snap);
	assert_true(t1 - t0 >= API_EVENTS_PROGRESS_MS - 2);

	/* a stream opened meanwhile hears of it at once, after its first line */
	assert_int_equal(
	    api_stream_open(&b, s->path, "/api/v1/vm/events", 5000, &r, err, sizeof(err)), 0);
	j = next_line(&b);
	assert_string_equal(str(j, "type"), "state");
	cJSON_Delete(j);
	snap = next_snapshot(&b, NULL);
	assert_string_equal(str(snap, "state"), "active");
	cJSON_Delete(snap);

	/* the VM verbs wait for it; GET tells where it stands */
	assert_int_equal(api_client_request(s->path, "PUT", "/api/v1/vm/pause", NULL, 5000, &r, err,
					    sizeof(err)),
			 0);
	assert_int_equal(r.status, 409);
	assert_string_equal(api_response_error(&r), "cannot pause: a snapshot is being taken");
	api_response_free(&r);
	assert_int_equal(api_client_request(s->path, "GET", "/api/v1/vm/snapshot", NULL, 5000, &r,
					    err, sizeof(err)),
			 0);
	assert_int_equal(r.status, 200);
	assert_string_equal(str(r.json, "state"), "active");
	api_response_free(&r);

	/* let it go: it fails, the PUT gets 500, each stream its final line once */
	pthread_mutex_lock(&s->vm.lock);
	s->vm.paused = 1;
	pthread_cond_broadcast(&s->vm.cond);
	pthread_mutex_unlock(&s->vm.lock);
	pthread_join(one.thread, NULL);
	assert_int_equal(one.ret, 0);
	assert_int_equal(one.r.status, 500);
	assert_non_null(strstr(api_response_error(&one.r), "failed"));
	api_response_free(&one.r);
	s->vm.running = s->vm.paused = 0; /* the snapshot thread is done with them */
	expect_final(&a, one.dir, "failed");
	expect_final(&b, one.dir, "failed");
	expect_quiet(&a, 3 * API_EVENTS_PROGRESS_MS);
	expect_quiet(&b, 1);

	/* the next one starts and fails between two ticks: its final line still comes */
	put_snapshot(&two);
	assert_int_equal(two.ret, 0);
	assert_int_equal(two.r.status, 500);
	api_response_free(&two.r);
	expect_final(&a, two.dir, "failed");
	expect_final(&b, two.dir, "failed");
	expect_quiet(&a, 3 * API_EVENTS_PROGRESS_MS);

	/* a stream opened after it gets no snapshot line: an earlier end is not news */
	assert_int_equal(
	    api_stream_open(&c, s->path, "/api/v1/vm/events", 5000, &r, err, sizeof(err)), 0);
	cJSON_Delete(next_line(&c));
	expect_quiet(&c, 3 * API_EVENTS_TICK_MS);

	api_stream_close(&a);
	api_stream_close(&b);
	api_stream_close(&c);
	/* the PUTs are answered: the loop sets rt.snap no more; freed once it stopped */
	last = s->rt.snap;
	srv_stop(s);
	snapshot_free(last);
	rmdir(one.dir);
	rmdir(two.dir);
	assert_int_equal(rmdir(base), 0);
}

/* ---- the client against canned replies ---- */

struct fake {
	char dir[64], path[108];
	int lfd;
	const char *reply;
	pthread_t thread;
};

static void *fake_serve(void *arg)
{
	struct fake *f = arg;
	char buf[1024];
	int fd = accept(f->lfd, NULL, NULL);

	if (fd < 0)
		return NULL;
	if (recv(fd, buf, sizeof(buf), 0) > 0) {
		/* byte by byte: every split the decoder can meet */
		for (const char *p = f->reply; *p; p++)
			if (send(fd, p, 1, MSG_NOSIGNAL) != 1)
				break;
		while (recv(fd, buf, sizeof(buf), 0) > 0) /* until the client closes */
			;
	}
	close(fd);
	return NULL;
}

static void fake_start(struct fake *f, const char *reply)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	snprintf(f->dir, sizeof(f->dir), "/tmp/vmm-test-evfake-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/s.sock", f->dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->path);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->lfd, 4), 0);
	f->reply = reply;
	assert_int_equal(pthread_create(&f->thread, NULL, fake_serve, f), 0);
}

static void fake_stop(struct fake *f)
{
	pthread_join(f->thread, NULL);
	close(f->lfd);
	unlink(f->path);
	rmdir(f->dir);
}

static void test_chunked_decoding(void **state)
{
	static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
				    "Transfer-Encoding: chunked\r\n\r\n"
				    "5\r\n{\"a\":\r\n"		    /* a line over two chunks */
				    "3;ext=1\r\n1}\n\r\n"	    /* with a chunk extension */
				    "f\r\n{\"b\":2}\n{\"c\":3}\r\n" /* two lines in one chunk */
				    "1\r\n\n\r\n" /* ...the second one ends here */
				    "0\r\n\r\n";
	struct fake f;
	struct api_stream st;
	struct api_response r;
	char err[256];
	cJSON *j;

	(void)state;
	fake_start(&f, reply);
	assert_int_equal(api_stream_open(&st, f.path, "/x", 5000, &r, err, sizeof(err)), 0);
	j = next_line(&st);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "a")->valueint, 1);
	cJSON_Delete(j);
	j = next_line(&st);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "b")->valueint, 2);
	cJSON_Delete(j);
	j = next_line(&st);
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "c")->valueint, 3);
	cJSON_Delete(j);
	assert_int_equal(api_stream_next(&st, 5000, &j, err, sizeof(err)), -ENODATA);
	api_stream_close(&st);
	fake_stop(&f);
}

static void test_chunked_malformed(void **state)
{
	static const char reply[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				    "zz\r\n{}\n\r\n";
	struct fake f;
	struct api_stream st;
	struct api_response r;
	char err[256];
	cJSON *j;

	(void)state;
	fake_start(&f, reply);
	assert_int_equal(api_stream_open(&st, f.path, "/x", 5000, &r, err, sizeof(err)), 0);
	assert_int_equal(api_stream_next(&st, 5000, &j, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "not chunked JSON lines"));
	api_stream_close(&st);
	fake_stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_first_line),	      cmocka_unit_test(test_watcher_limit),
	    cmocka_unit_test(test_snapshot_lines),    cmocka_unit_test(test_chunked_decoding),
	    cmocka_unit_test(test_chunked_malformed),
	};

	/*
	 * srv_stop() activates the stop event from this thread while the
	 * loop thread may sleep in epoll_wait with nothing else to wake it:
	 * only a thread-aware base is woken (without this the test hung
	 * once in a while on a loaded host).
	 */
	evthread_use_pthreads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
