/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api_events.c - GET /api/v1/vm/events without KVM: the first line of
 * a stream, the limit of 8 streams (a JSON 503, a freed slot serves again),
 * and the client's decoding of chunked JSON lines (api_stream.c) against a
 * fake server: lines split across chunks, several in one, the last chunk,
 * a malformed chunk size.
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

#include "api_events.h"
#include "api_stream.h"
#include "clock.h"
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
	    cmocka_unit_test(test_first_line),
	    cmocka_unit_test(test_watcher_limit),
	    cmocka_unit_test(test_chunked_decoding),
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
