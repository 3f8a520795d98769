/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api_server.h - the control API served on its own event-loop thread
 * for a fake VM (no vCPUs, no migration), shared by the API unit tests.
 * Include after cmocka.h; one server per srv_start(), stopped by srv_stop().
 */
#ifndef VMM_TEST_API_SERVER_H
#define VMM_TEST_API_SERVER_H

#include <event2/event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "api_server.h"
#include "runtime.h"
#include "vm_struct.h" /* white-box: builds or inspects a VM by hand */

struct srv {
	char dir[64];
	char path[108];
	struct vm vm;
	struct runtime rt;
	struct event_base *base;
	struct api_server *api;
	struct event *stop_ev;
	pthread_t thread;
};

/* Runs in the loop: unlike a bare loopbreak, an activated event is not lost
 * when the loop has not started yet. */
static inline void on_stop(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopbreak(arg);
}

static inline void *loop_thread(void *arg)
{
	struct srv *s = arg;

	event_base_dispatch(s->base);
	return NULL;
}

/* A server for a VM named "testvm" with `vcpus` vCPUs, in /tmp/vmm-test-TAG-XXXXXX/run/t.sock. */
static inline struct srv *srv_start(const char *tag, unsigned vcpus)
{
	struct srv *s = calloc(1, sizeof(*s));
	char err[256];

	assert_non_null(s);
	snprintf(s->dir, sizeof(s->dir), "/tmp/vmm-test-%s-XXXXXX", tag);
	assert_non_null(mkdtemp(s->dir));
	/* a directory the server creates itself, 0700 */
	snprintf(s->path, sizeof(s->path), "%s/run/t.sock", s->dir);
	snprintf(s->vm.cfg.name, sizeof(s->vm.cfg.name), "testvm");
	s->vm.cfg.memory = 64 << 20;
	s->vm.cfg.vcpus = vcpus;
	pthread_mutex_init(&s->vm.lock, NULL);
	pthread_cond_init(&s->vm.cond, NULL);
	s->vm.end_fd = eventfd(0, EFD_CLOEXEC);
	assert_true(s->vm.end_fd >= 0);
	s->base = event_base_new();
	assert_non_null(s->base);
	s->rt.vm = &s->vm;
	s->rt.base = s->base;
	if (api_server_start(&s->api, &s->rt, s->path, err, sizeof(err)))
		fail_msg("api_server_start: %s", err);
	s->stop_ev = event_new(s->base, -1, 0, on_stop, s->base);
	assert_non_null(s->stop_ev);
	assert_int_equal(pthread_create(&s->thread, NULL, loop_thread, s), 0);
	return s;
}

static inline void srv_stop(struct srv *s)
{
	char sub[128];

	event_active(s->stop_ev, EV_READ, 0);
	pthread_join(s->thread, NULL);
	api_server_stop(s->api);
	event_free(s->stop_ev);
	event_base_free(s->base);
	close(s->vm.end_fd);
	snprintf(sub, sizeof(sub), "%s/run", s->dir);
	rmdir(sub);
	rmdir(s->dir);
	free(s);
}

#endif /* VMM_TEST_API_SERVER_H */
