/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api.c - the control API: JSON <-> structs (api_json.c), and the
 * HTTP layer over a real Unix socket (api_server.c + api_client.c) with a
 * struct vm that has no vCPUs and no migration.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <event2/thread.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_client.h"
#include "api_json.h"
#include "api_server.h"
#include "runtime.h"
#include "test_api_server.h"
#include "vm.h"

/* ---- api_json ---- */

static cJSON *parse(const char *text)
{
	cJSON *j = cJSON_Parse(text);

	assert_non_null(j);
	return j;
}

static void test_resume_body(void **state)
{
	static const struct {
		const char *json;
		const char *msg;
	} bad[] = {
	    {"[]", "must be a JSON object"},
	    {"{}", "'to' is required"},
	    {"{\"to\":1}", "'to' must be a string"},
	    {"{\"to\":\"h\"}", "'to' must be \"host:port\""},
	    {"{\"to\":\"h:70000\"}", "port from 1 to 65535"},
	    {"{\"to\":\"h:1\",\"mode\":\"postcopy\"}", "unknown field 'mode'"},
	};
	char to[256], err[256];
	cJSON *j = parse("{\"to\":\"[fe80::1]:4444\"}");

	(void)state;
	assert_int_equal(api_resume_from_json(j, to, sizeof(to), err, sizeof(err)), 0);
	assert_string_equal(to, "[fe80::1]:4444");
	cJSON_Delete(j);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		j = parse(bad[i].json);
		if (api_resume_from_json(j, to, sizeof(to), err, sizeof(err)) != -EINVAL ||
		    !strstr(err, bad[i].msg))
			fail_msg("%s: got '%s', want '%s'", bad[i].json, err, bad[i].msg);
		cJSON_Delete(j);
	}
}

static void test_state_names(void **state)
{
	(void)state;
	assert_string_equal(migration_state_name(MIGRATION_NONE), "none");
	assert_string_equal(migration_state_name(MIGRATION_SWITCHOVER), "switchover");
	assert_string_equal(migration_state_name(MIGRATION_POSTCOPY_ACTIVE), "postcopy-active");
	assert_string_equal(migration_state_name(MIGRATION_POSTCOPY_PAUSED), "postcopy-paused");
	assert_string_equal(migration_state_name(MIGRATION_COMPLETED), "completed");
	assert_string_equal(migration_state_name(MIGRATION_CANCELLED), "cancelled");
	assert_string_equal(migration_state_name(MIGRATION_AWAITING_RELEASE), "awaiting-release");
	assert_string_equal(migration_state_name(MIGRATION_STATE_COUNT), "unknown");
	/* every state has a name of its own, read back to it */
	for (enum migration_state st = MIGRATION_NONE; st < MIGRATION_STATE_COUNT; st++) {
		enum migration_state back = MIGRATION_NONE;

		assert_string_not_equal(migration_state_name(st), "unknown");
		assert_int_equal(migration_state_from_name(migration_state_name(st), &back), 0);
		assert_int_equal(back, st);
	}
	{
		enum migration_state back = MIGRATION_FAILED;

		assert_int_equal(migration_state_from_name("postcopy", &back), -EINVAL);
		assert_int_equal(back, MIGRATION_FAILED);
	}
}

/* ---- api_json: progress ---- */

static void test_progress_round_trip(void **state)
{
	struct migration_progress in, out;
	char st[32];
	cJSON *j;

	(void)state;
	memset(&in, 0, sizeof(in));
	in.state = MIGRATION_PRECOPY;
	in.pass = 3;
	in.ram_bytes = 1ULL << 32;
	in.page_size_bytes = 4096;
	migration_params_defaults(&in.params);
	snprintf(in.params.to, sizeof(in.params.to), "10.0.0.2:4444");
	in.params.compress_level = 3;
	in.params.mode = MIGRATION_MODE_POSTCOPY;
	in.params.max_bandwidth = 1 << 30;
	in.sent_bytes = (1ULL << 40) + 5; /* exact below 2^53 */
	in.precopy_bytes = 1ULL << 40;
	in.postcopy_bytes = 5;
	in.remaining_bytes = 4096;
	in.pass_pages = 1000;
	in.pass_done_pages = 999;
	in.throughput_bytes_per_s = 1000000000;
	in.page_rate_pages_per_s = 250000;
	in.dirty_rate_pages_per_s = 12345;
	in.dirty_rate_known = true;
	in.expected_downtime_ms = 42;
	in.pages_sent = 100;
	in.zero_pages = 200;
	in.skipped_pages = 300;
	in.total_ms = 1500;
	in.downtime_ms = 12;
	in.downtime_us = 12345;
	in.blackout_pause_us = 1;
	in.blackout_send_us = 2;
	in.blackout_state_us = 3;
	in.blackout_ack_us = 4;
	in.target_restore_us = 5;
	in.setup_ms = 3;
	in.harvest_last_us = 11;
	in.harvest_final_us = 22;
	in.harvest_total_us = 33;
	in.harvest_threads = 4;
	in.manual_protect = true;
	in.initially_set = false;
	in.converged = 1;
	snprintf(in.switchover_reason, sizeof(in.switchover_reason), MIGRATION_WHY_CONVERGED);
	in.sparse_guest = true;
	in.bitmap_raw_bytes = 32768;
	in.bitmap_bytes = 1234;
	in.bitmap_send_us = 56;
	in.postcopy_pages = 7000;
	in.pages_requested = 123;
	in.pages_pushed = 6877;
	in.all_arrived_ms = 4321;
	in.fault_p50_us = 80;
	in.fault_p99_us = 900;
	in.fault_max_us = (1ULL << 52) + 1;
	in.faults = 150;
	in.resumes = 2;
	snprintf(in.mode_used, sizeof(in.mode_used), "postcopy");
	snprintf(in.error, sizeof(in.error), "no \"error\"");
	snprintf(in.target_postcopy_reason, sizeof(in.target_postcopy_reason),
		 "userfaultfd: the syscall: Operation not permitted");

	j = api_progress_to_json(&in, migration_state_name(MIGRATION_POSTCOPY_ACTIVE));
	assert_non_null(j);
	assert_string_equal(cJSON_GetObjectItem(j, "state")->valuestring, "postcopy-active");
	/* the postcopy members are there under the struct's names */
	{
		static const char *const names[] = {
		    "bitmap_raw_bytes", "bitmap_bytes", "bitmap_send_us", "postcopy_pages",
		    "pages_requested",	"pages_pushed", "all_arrived_ms", "fault_p50_us",
		    "fault_p99_us",	"fault_max_us", "faults",	  "resumes",
		};

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!cJSON_IsNumber(cJSON_GetObjectItem(j, names[i])))
				fail_msg("progress member '%s' missing", names[i]);
		assert_int_equal(cJSON_GetObjectItem(j, "resumes")->valueint, 2);
	}
	assert_int_equal(cJSON_GetObjectItem(j, "pass")->valueint, 3);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "manual_protect")));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "initially_set")));
	/* The target's CAPS: false with its reason; null before it came. */
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "target_postcopy")));
	assert_string_equal(cJSON_GetObjectItem(j, "target_postcopy_reason")->valuestring,
			    "userfaultfd: the syscall: Operation not permitted");
	/* state + every field (the engine may add more: the round trip below checks them) */
	assert_true(cJSON_GetArraySize(j) >= 54);

	assert_int_equal(api_progress_from_json(j, &out, st, sizeof(st)), 0);
	assert_string_equal(st, "postcopy-active");
	assert_int_equal(out.state, MIGRATION_POSTCOPY_ACTIVE); /* from the name */
	out.state = in.state;
	assert_memory_equal(&in, &out, sizeof(in));
	cJSON_Delete(j);
	in.target_postcopy = -1;
	in.dirty_rate_known = false;
	in.converged = -1;
	j = api_progress_to_json(&in, migration_state_name(MIGRATION_SETUP));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "target_postcopy")));
	/* not measured yet, does not apply: null, not a misleading 0 or false */
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "dirty_rate_pages_per_s")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "converged")));
	/* the parameters in effect, under the request's names */
	{
		const cJSON *params = cJSON_GetObjectItem(j, "params");

		assert_string_equal(cJSON_GetObjectItem(params, "compress")->valuestring, "zstd:3");
		assert_string_equal(cJSON_GetObjectItem(params, "mode")->valuestring, "postcopy");
		assert_string_equal(cJSON_GetObjectItem(params, "to")->valuestring,
				    "10.0.0.2:4444");
	}
	assert_int_equal(api_progress_from_json(j, &out, st, sizeof(st)), 0);
	assert_int_equal(out.target_postcopy, -1);
	assert_false(out.dirty_rate_known);
	assert_int_equal(out.converged, -1);
	assert_int_equal(out.params.max_bandwidth, 1 << 30);
	cJSON_Delete(j);

	j = parse("{\"pass\":1}");
	assert_int_equal(api_progress_from_json(j, &out, st, sizeof(st)), -EINVAL);
	cJSON_Delete(j);
}

/*
 * The progress object has exactly MIGRATION_PROGRESS's named rows (the OWN
 * ones too, with every one of them present: params, a known dirty rate, a
 * switchover's converged), the plain ones in the list's order after
 * "state": an OWN row with a name must be written by hand, and nothing is
 * written that the list does not name.
 */
static void test_progress_members(void **state)
{
#define NAME_PLAIN(name, ...)	     #name,
#define NAME_OWN(name, type, f, dim) #name,
#define NAME_NONE(name, type, f, dim)
	static const char *const all[] = {
	    MIGRATION_PROGRESS(NAME_PLAIN, NAME_PLAIN, NAME_PLAIN, NAME_PLAIN, NAME_OWN)};
	static const char *const plain[] = {
	    MIGRATION_PROGRESS(NAME_PLAIN, NAME_PLAIN, NAME_PLAIN, NAME_PLAIN, NAME_NONE)};
#undef NAME_PLAIN
#undef NAME_OWN
#undef NAME_NONE
	struct migration_progress p;
	const cJSON *m;
	size_t named = 0, i = 0;
	cJSON *j;

	(void)state;
	memset(&p, 0, sizeof(p));
	migration_params_defaults(&p.params);
	snprintf(p.params.to, sizeof(p.params.to), "10.0.0.2:4444");
	p.dirty_rate_known = true;
	p.converged = 1;
	snprintf(p.switchover_reason, sizeof(p.switchover_reason), MIGRATION_WHY_CONVERGED);
	j = api_progress_to_json(&p, migration_state_name(p.state));
	assert_non_null(j);
	for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++) {
		if (!all[k][0])
			continue; /* not in JSON (throttle_log, dirty_rate_known) */
		named++;
		if (!cJSON_HasObjectItem(j, all[k]))
			fail_msg("progress member '%s' missing", all[k]);
	}
	assert_int_equal(cJSON_GetArraySize(j), named);
	cJSON_ArrayForEach(m, j)
	{
		if (i < sizeof(plain) / sizeof(plain[0]) && !strcmp(m->string, plain[i]))
			i++;
	}
	assert_int_equal(i, sizeof(plain) / sizeof(plain[0])); /* in the list's order */
	assert_string_equal(j->child->string, "state");
	cJSON_Delete(j);
}

/* ---- socket path ---- */

static void test_default_socket_path(void **state)
{
	char buf[108], want[64];
	char *old = getenv("VMM_RUN_DIR") ? strdup(getenv("VMM_RUN_DIR")) : NULL;
	char long_name[120];

	(void)state;
	setenv("VMM_RUN_DIR", "/x/y", 1);
	assert_int_equal(api_default_socket_path("vm1", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/x/y/vm1.sock");
	assert_int_equal(api_default_socket_path("", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(api_default_socket_path("a/b", buf, sizeof(buf)), -EINVAL);
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	assert_int_equal(api_default_socket_path(long_name, buf, sizeof(buf)), -ENAMETOOLONG);
	unsetenv("VMM_RUN_DIR");
	assert_int_equal(api_default_socket_path("vm1", buf, sizeof(buf)), 0);
	if (geteuid() == 0) {
		assert_string_equal(buf, "/run/vmm/vm1.sock");
	} else if (getenv("XDG_RUNTIME_DIR") && *getenv("XDG_RUNTIME_DIR")) {
		snprintf(want, sizeof(want), "%s/vmm/vm1.sock", getenv("XDG_RUNTIME_DIR"));
		assert_string_equal(buf, want);
	} else {
		snprintf(want, sizeof(want), "/tmp/vmm-%u/vm1.sock", (unsigned)geteuid());
		assert_string_equal(buf, want);
	}
	if (old)
		setenv("VMM_RUN_DIR", old, 1);
	free(old);
}

/* ---- the HTTP layer over a socket ---- */

static struct api_response call(struct srv *s, const char *method, const char *uri,
				const char *body)
{
	struct api_response r;
	char err[256];

	if (api_client_request_raw(s->path, method, uri, body, body ? strlen(body) : 0, 5000, &r,
				   err, sizeof(err)))
		fail_msg("%s %s: %s", method, uri, err);
	return r;
}

static void expect_error(struct srv *s, const char *method, const char *uri, const char *body,
			 int status, const char *msg)
{
	struct api_response r = call(s, method, uri, body);

	if (r.status != status || !strstr(api_response_error(&r), msg))
		fail_msg("%s %s: got %d '%s', want %d '%s'", method, uri, r.status, r.text, status,
			 msg);
	api_response_free(&r);
}

static void test_http_get_vm(void **state)
{
	struct srv *s = srv_start("api", 2);
	struct api_response r;
	struct stat st;
	const cJSON *mig;

	(void)state;
	assert_int_equal(stat(s->path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	*strrchr(s->path, '/') = '\0';
	assert_int_equal(stat(s->path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	strcat(s->path, "/t.sock");

	r = call(s, "GET", "/api/v1/vm", NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(r.json);
	assert_string_equal(cJSON_GetObjectItem(r.json, "name")->valuestring, "testvm");
	assert_string_equal(cJSON_GetObjectItem(r.json, "state")->valuestring, "running");
	assert_int_equal(cJSON_GetObjectItem(r.json, "memory")->valuedouble, 64 << 20);
	assert_int_equal(cJSON_GetObjectItem(r.json, "vcpus")->valueint, 2);
	assert_int_equal(cJSON_GetObjectItem(r.json, "pid")->valueint, getpid());
	assert_true(cJSON_IsString(cJSON_GetObjectItem(r.json, "firmware")));
	assert_string_equal(cJSON_GetObjectItem(r.json, "initrd")->valuestring, "");
	assert_null(cJSON_GetObjectItem(r.json, "end_reason")); /* only once it ends */
	mig = cJSON_GetObjectItem(r.json, "migration");
	assert_true(cJSON_IsObject(mig));
	assert_true(cJSON_IsString(cJSON_GetObjectItem(mig, "state")));
	api_response_free(&r);

	r = call(s, "GET", "/api/v1/vm/migrate", NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(cJSON_GetObjectItem(r.json, "sent_bytes"));
	api_response_free(&r);
	srv_stop(s);
}

static void test_http_errors(void **state)
{
	struct srv *s = srv_start("api", 2);
	char *big, want[256];

	(void)state;
	expect_error(s, "GET", "/api/v1/nope", NULL, 404, "unknown path '/api/v1/nope'");
	expect_error(s, "GET", "/", NULL, 404, "unknown path");
	expect_error(s, "PUT", "/api/v1/vm", "{}", 405, "use GET");
	expect_error(s, "DELETE", "/api/v1/vm/migrate", NULL, 405, "use PUT, GET");
	expect_error(s, "GET", "/api/v1/vm/pause", NULL, 405, "use PUT");
	expect_error(s, "PUT", "/api/v1/vm/migrate", "{bad", 400, "not valid JSON");
	expect_error(s, "PUT", "/api/v1/vm/migrate", NULL, 400, "body is required");
	expect_error(s, "PUT", "/api/v1/vm/migrate", "{}", 400, "'to' is required");
	/* a value out of the parameter table's range: 400 with the table's message */
	migration_param_refusal(migration_param_find("connections"), want, sizeof(want));
	expect_error(s, "PUT", "/api/v1/vm/migrate", "{\"to\":\"h:1\",\"connections\":99}", 400,
		     want);
	expect_error(s, "PUT", "/api/v1/vm/migrate/cancel", NULL, 409, "no migration is running");
	migration_param_refusal(migration_param_find("postcopy_after"), want, sizeof(want));
	expect_error(s, "PUT", "/api/v1/vm/migrate", "{\"to\":\"h:1\",\"postcopy_after\":2000}",
		     400, want);
	migration_param_refusal(migration_param_find("clear_chunk_pages"), want, sizeof(want));
	expect_error(s, "PUT", "/api/v1/vm/migrate", "{\"to\":\"h:1\",\"clear_chunk_pages\":192}",
		     400, want);
	expect_error(s, "PUT", "/api/v1/vm/migrate", "{\"to\":\"h:1\",\"no_final_bitmap\":0}", 400,
		     "'no_final_bitmap' must be true or false");
	expect_error(s, "GET", "/api/v1/vm/migrate/resume", NULL, 405, "use PUT");
	/* larger than API_MAX_BODY: refused before any handler, in JSON */
	big = malloc(API_MAX_BODY + 1024);
	assert_non_null(big);
	memset(big, ' ', API_MAX_BODY + 1023);
	big[API_MAX_BODY + 1023] = '\0';
	{
		struct api_response r = call(s, "PUT", "/api/v1/vm/migrate", big);

		assert_int_equal(r.status, 413);
		assert_string_equal(api_response_error(&r),
				    "the request body is larger than 65536 bytes");
		api_response_free(&r);
	}
	free(big);

	/* the server still serves after all that */
	expect_error(s, "GET", "/api/v1/nope", NULL, 404, "unknown path");
	srv_stop(s);
}

/*
 * A live snapshot's limits are the migration's parameters of the same
 * names, checked by the migration's rule, and only with "live".
 */
static void test_http_snapshot_limits(void **state)
{
	struct srv *s = srv_start("api", 2);
	char want[256];

	(void)state;
	expect_error(s, "PUT", "/api/v1/vm/snapshot", "{\"to\":\"/tmp/s\",\"downtime_ms\":5}", 400,
		     "'downtime_ms' goes with 'live'");
	migration_param_refusal(migration_param_find("max_passes"), want, sizeof(want));
	expect_error(s, "PUT", "/api/v1/vm/snapshot",
		     "{\"to\":\"/tmp/s\",\"live\":true,\"max_passes\":0}", 400, want);
	migration_param_refusal(migration_param_find("max_time_ms"), want, sizeof(want));
	expect_error(s, "PUT", "/api/v1/vm/snapshot",
		     "{\"to\":\"/tmp/s\",\"live\":true,\"max_time_ms\":\"1s\"}", 400, want);
	/* a migration parameter a snapshot does not take */
	expect_error(s, "PUT", "/api/v1/vm/snapshot",
		     "{\"to\":\"/tmp/s\",\"live\":true,\"connections\":2}", 400,
		     "unknown field 'connections' (expected to, stop, live, diff, threads, "
		     "format_version, downtime_ms, max_passes, max_time_ms)");
	srv_stop(s);
}

/* A --restore-wait process's restore, faked: /good brings the test's VM, anything else is refused.
 */
static int restored_lazy = -2;

static int fake_restore(struct runtime *rt, const char *dir, int lazy, struct runtime_restore *out,
			char *err, size_t errlen)
{
	struct srv *s = rt->restore_arg;

	if (strcmp(dir, "/good")) {
		snprintf(err, errlen, "%s holds no snapshot", dir);
		return -ENOENT;
	}
	restored_lazy = lazy;
	rt->vm = &s->vm;
	snprintf(out->id, sizeof(out->id), "%032x", 7);
	snprintf(out->name, sizeof(out->name), "testvm");
	out->lazy = true;
	out->restore_us = 1234;
	return 0;
}

/*
 * vmm run --restore-wait: with no VM, the API answers GET /vm, refuses
 * what needs a VM, refuses a bad restore and waits on, then takes one
 * restore; the VM's API from then on.
 */
static void test_http_restore_wait(void **state)
{
	struct srv *s = srv_start("api", 2);
	struct api_response r;

	(void)state;
	s->rt.vm = NULL;
	s->rt.restore = fake_restore;
	s->rt.restore_arg = s;
	r = call(s, "GET", "/api/v1/vm", NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.text, "\"state\":\"waiting-restore\""));
	api_response_free(&r);
	expect_error(s, "PUT", "/api/v1/vm/pause", NULL, 409,
		     "cannot PUT /api/v1/vm/pause: no VM here yet (this process waits for PUT "
		     "/api/v1/vm/restore)");
	expect_error(s, "GET", "/api/v1/vm/events", NULL, 409, "no VM here yet");
	expect_error(s, "PUT", "/api/v1/vm/restore", "{\"from\":\"rel\"}", 400,
		     "'from' must be an absolute directory path");
	expect_error(s, "PUT", "/api/v1/vm/restore", "{\"from\":\"/x\",\"to\":1}", 400,
		     "unknown field 'to' (expected from, lazy)");
	expect_error(s, "PUT", "/api/v1/vm/restore", "{\"from\":\"/bad\"}", 400,
		     "cannot restore /bad: /bad holds no snapshot");
	r = call(s, "GET", "/api/v1/vm", NULL); /* refused, it waits on */
	assert_non_null(strstr(r.text, "\"state\":\"waiting-restore\""));
	api_response_free(&r);
	r = call(s, "PUT", "/api/v1/vm/restore", "{\"from\":\"/good\",\"lazy\":false}");
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.text, "\"state\":\"running\""));
	assert_non_null(strstr(r.text, "\"from\":\"/good\",\"name\":\"testvm\""));
	assert_non_null(strstr(r.text, "\"restore_us\":1234"));
	assert_int_equal(restored_lazy, 0);
	api_response_free(&r);
	expect_error(s, "PUT", "/api/v1/vm/restore", "{\"from\":\"/good\"}", 409,
		     "a VM runs in this process already");
	r = call(s, "GET", "/api/v1/vm", NULL);
	assert_non_null(strstr(r.text, "\"name\":\"testvm\""));
	api_response_free(&r);
	srv_stop(s);
}

static void test_http_migrate_resume(void **state)
{
	struct srv *s = srv_start("api", 2);
	struct api_response r;

	(void)state;
	/* a bad or missing "to" is refused before the engine is asked */
	expect_error(s, "PUT", "/api/v1/vm/migrate/resume", NULL, 400, "body is required");
	expect_error(s, "PUT", "/api/v1/vm/migrate/resume", "{bad", 400, "not valid JSON");
	expect_error(s, "PUT", "/api/v1/vm/migrate/resume", "{}", 400, "'to' is required");
	expect_error(s, "PUT", "/api/v1/vm/migrate/resume", "{\"to\":\"nohost\"}", 400,
		     "'to' must be \"host:port\"");
	expect_error(s, "PUT", "/api/v1/vm/migrate/resume", "{\"to\":\"h:1\",\"x\":1}", 400,
		     "unknown field 'x'");
	/* the engine: no postcopy migration is paused (none was even started) */
	r = call(s, "PUT", "/api/v1/vm/migrate/resume", "{\"to\":\"127.0.0.1:1\"}");
	if (r.status != 409 || !strstr(api_response_error(&r), "cannot resume the migration: "))
		fail_msg("resume with nothing paused: got %d '%s', want 409", r.status, r.text);
	api_response_free(&r);
	/* nothing changed */
	r = call(s, "GET", "/api/v1/vm", NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(cJSON_GetObjectItem(r.json, "state")->valuestring, "running");
	api_response_free(&r);
	srv_stop(s);
}

static void test_http_pause_resume(void **state)
{
	struct srv *s = srv_start("api", 2);
	struct api_response r;

	(void)state;
	r = call(s, "PUT", "/api/v1/vm/pause", NULL);
	assert_int_equal(r.status, 200);
	api_response_free(&r);
	r = call(s, "GET", "/api/v1/vm", NULL);
	assert_string_equal(cJSON_GetObjectItem(r.json, "state")->valuestring, "paused");
	api_response_free(&r);
	expect_error(s, "PUT", "/api/v1/vm/migrate", "{\"to\":\"h:1\"}", 409, "paused");
	r = call(s, "PUT", "/api/v1/vm/resume", NULL);
	assert_int_equal(r.status, 200);
	api_response_free(&r);
	r = call(s, "GET", "/api/v1/vm", NULL);
	assert_string_equal(cJSON_GetObjectItem(r.json, "state")->valuestring, "running");
	api_response_free(&r);
	srv_stop(s);
}

static void test_http_shutdown(void **state)
{
	struct srv *s = srv_start("api", 2);
	struct api_response r;
	uint64_t v;

	(void)state;
	r = call(s, "PUT", "/api/v1/vm/shutdown", NULL);
	assert_int_equal(r.status, 202);
	api_response_free(&r);
	/* the stop request follows the reply: end_fd becomes readable */
	assert_int_equal(read(s->vm.end_fd, &v, sizeof(v)), sizeof(v));
	assert_int_equal(s->vm.end_reason, VM_END_GUEST_EXIT);
	assert_int_equal(s->vm.end_status, 0);
	assert_string_equal(s->vm.end_message, "shut down through the API");
	srv_stop(s);
}

/* A guest that powers off: the API names the reason while the VM ends. */
static void test_http_end_reason(void **state)
{
	struct srv *s = srv_start("api", 2);
	struct api_response r;

	(void)state;
	vm_request_stop(&s->vm, VM_END_GUEST_POWEROFF, 0, "guest powered off (test)");
	r = call(s, "GET", "/api/v1/vm", NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(cJSON_GetObjectItem(r.json, "state")->valuestring, "stopping");
	assert_string_equal(cJSON_GetObjectItem(r.json, "end_reason")->valuestring,
			    "guest-poweroff");
	assert_string_equal(cJSON_GetObjectItem(r.json, "end_message")->valuestring,
			    "guest powered off (test)");
	api_response_free(&r);
	assert_string_equal(vm_end_reason_name(VM_END_GUEST_RESET), "guest-reset");
	srv_stop(s);
}

static void test_socket_ownership(void **state)
{
	struct srv *s = srv_start("api", 2);
	struct api_server *other;
	struct api_response r;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char err[256], moved[108];
	struct stat st;
	int fd;

	(void)state;
	/* a live socket is not taken over */
	assert_int_equal(api_server_start(&other, &s->rt, s->path, err, sizeof(err)), -EADDRINUSE);
	assert_non_null(strstr(err, "another process"));

	/* rename: the same server answers on the new path */
	snprintf(moved, sizeof(moved), "%s/run/moved.sock", s->dir);
	assert_int_equal(api_server_rename(s->api, moved, err, sizeof(err)), 0);
	assert_string_equal(api_server_path(s->api), moved);
	assert_int_equal(access(s->path, F_OK), -1);
	snprintf(s->path, sizeof(s->path), "%s", moved);
	r = call(s, "GET", "/api/v1/vm", NULL);
	assert_int_equal(r.status, 200);
	api_response_free(&r);

	/* someone else (a migration target) now owns the path: stop leaves it */
	assert_int_equal(unlink(moved), 0);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	memcpy(sa.sun_path, moved, strlen(moved));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	srv_stop(s);
	assert_int_equal(stat(moved, &st), 0); /* still there */
	assert_true(S_ISSOCK(st.st_mode));
	unlink(moved);
	close(fd);
	*strrchr(moved, '/') = '\0';
	rmdir(moved);
	*strrchr(moved, '/') = '\0';
	rmdir(moved);
}

static void test_stale_socket_and_stop_unlinks(void **state)
{
	struct srv *s = srv_start("api", 2);
	char path[108], err[256];
	struct event_base *base = event_base_new();
	struct api_server *api;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	(void)state;
	/* a socket file nobody listens on is replaced */
	snprintf(path, sizeof(path), "%s/run/stale.sock", s->dir);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	memcpy(sa.sun_path, path, strlen(path));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	struct runtime rt = {.vm = &s->vm, .base = base};

	assert_int_equal(api_server_start(&api, &rt, path, err, sizeof(err)), 0);
	api_server_stop(api);
	assert_int_equal(access(path, F_OK), -1); /* ours: unlinked */

	/* a regular file is not */
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(api_server_start(&api, &rt, path, err, sizeof(err)), -EEXIST);
	unlink(path);
	event_base_free(base);
	srv_stop(s);
}

static void test_client_no_socket(void **state)
{
	struct api_response r;
	char err[256];

	(void)state;
	assert_int_equal(api_client_request("/tmp/vmm-test-api-does-not-exist.sock", "GET",
					    "/api/v1/vm", NULL, 1000, &r, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "/tmp/vmm-test-api-does-not-exist.sock"));
}

/* Another uid is refused with 403 even when the socket mode would let it in. */
static void test_peer_cred(void **state)
{
	struct srv *s;
	pid_t pid;
	int wstatus;
	char sub[128];

	(void)state;
	if (geteuid() != 0)
		skip(); /* needs a second uid */
	s = srv_start("api", 2);
	snprintf(sub, sizeof(sub), "%s/run", s->dir);
	assert_int_equal(chmod(s->dir, 0711), 0);
	assert_int_equal(chmod(sub, 0711), 0);
	assert_int_equal(chmod(s->path, 0666), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct api_response r;
		char err[256];

		if (setgid(65534) || setuid(65534))
			_exit(3);
		if (api_client_request(s->path, "GET", "/api/v1/vm", NULL, 5000, &r, err,
				       sizeof(err)))
			_exit(4);
		_exit(r.status == 403 && strstr(api_response_error(&r), "permission denied") ? 0
											     : 5);
	}
	assert_int_equal(waitpid(pid, &wstatus, 0), pid);
	assert_true(WIFEXITED(wstatus));
	assert_int_equal(WEXITSTATUS(wstatus), 0);
	srv_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_resume_body),
	    cmocka_unit_test(test_state_names),
	    cmocka_unit_test(test_progress_round_trip),
	    cmocka_unit_test(test_progress_members),
	    cmocka_unit_test(test_default_socket_path),
	    cmocka_unit_test(test_http_get_vm),
	    cmocka_unit_test(test_http_errors),
	    cmocka_unit_test(test_http_snapshot_limits),
	    cmocka_unit_test(test_http_restore_wait),
	    cmocka_unit_test(test_http_migrate_resume),
	    cmocka_unit_test(test_http_pause_resume),
	    cmocka_unit_test(test_http_shutdown),
	    cmocka_unit_test(test_http_end_reason),
	    cmocka_unit_test(test_socket_ownership),
	    cmocka_unit_test(test_stale_socket_and_stop_unlinks),
	    cmocka_unit_test(test_client_no_socket),
	    cmocka_unit_test(test_peer_cred),
	};

	/* the tests stop the loop from the main thread */
	evthread_use_pthreads();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
