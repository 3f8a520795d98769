/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gate.h - inside the gate (gate.c: its thread and the handshake workers;
 * gate_handover.c: starting it and handing its connections over). The
 * contracts of gate_start() and friends are in incoming.h; the locking is
 * gate.c's file comment.
 */
#ifndef VMM_MIGRATION_GATE_H
#define VMM_MIGRATION_GATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "channel.h"
#include "codec.h"
#include "incoming.h"
#include "migration.h"

/*
 * Connections in their handshake (or parked) at once; more are refused.
 * A whole migration (main, up to MIGRATION_MAX_CONNECTIONS data, urgent)
 * always fits, its data connections parked before their main is judged,
 * with as many slots again for strangers.
 */
#define GATE_SLOTS (2 * (MIGRATION_MAX_CONNECTIONS + 2))
#define PARK_MS	   15000u /* a data connection waits this long for its main */

struct gate_conn {
	struct gate *g;
	bool used, running, parked, expired;
	bool served;   /* late: its worker ran the whole exchange (a recover connection) */
	bool evicted;  /* made room for a newer connection when the gate was full */
	bool done;     /* atomic: the worker finished */
	bool hello_ok; /* atomic: the worker read a valid hello (never evicted then) */
	pthread_t thread;
	struct mig_chan c;
	char peer[64];
	uint64_t deadline_ns;
	int ret;
	char err[256];
	struct mig_hello h;
	struct gate_main *m; /* role main: what its worker read */
};

struct gate {
	int lfd;
	int wake[2]; /* workers and gate_stop() write a byte */
	pthread_t thread;
	struct tls_ctx *tls;
	const struct vm_config *local;
	struct incoming_hook hook;
	struct gate_conn slot[GATE_SLOTS];

	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stopping;
	struct gate_main *main; /* judged, not yet taken */
	bool has_session;
	uint64_t session;
	unsigned connections;
	struct mig_chan data[MIG_CONNECTIONS_MAX], urgent;
	uint64_t taken;	   /* data indexes handed over (bit i) */
	bool urgent_taken; /* handed over */
	/*
	 * While gate_wait_data() waits: the source's main connection (else
	 * -1), which the gate thread polls for its close (POLLRDHUP), and
	 * whether it closed. A source that gives up after CAPS closes main
	 * and opens no data connection: the wait ends then, not at its timeout.
	 */
	int watch_fd;
	bool main_gone;

	/*
	 * After the migration was received (gate_late_open): `late` (atomic,
	 * set once; `lt` is read-only after it) and the connections of this
	 * session waiting for gate_take(), under `lock`.
	 */
	bool late;
	struct gate_late lt;
	struct gate_taken queue[GATE_SLOTS];
};

/*
 * gate_late.c: a late connection's worker, after its hello: runs a recover
 * exchange or checks a resume's proof. 0: judge it as usual (queue it).
 */
int gate_late_work(struct gate_conn *gc);
/* The gate thread, under g->lock: queues a late connection for gate_take(); false if full. */
bool gate_late_queue(struct gate *g, struct gate_conn *gc);
/*
 * gate_take(), under g->lock: moves the next queued connection of `roles`
 * (the rules: gate_take in incoming.h) into *out; false if none.
 */
bool gate_late_pick(struct gate *g, uint32_t roles, uint64_t after_ns, uint32_t attempt,
		    struct gate_taken *out);
/* The gate thread, under g->lock: closes queued connections past their time; next deadline. */
uint64_t gate_late_expire(struct gate *g, uint64_t now);
/* Why a late connection is refused, or NULL: it is this session's (gate thread). */
const char *gate_late_refusal(struct gate *g, const struct gate_conn *gc, char *buf, size_t len);

/* The gate thread's function (gate_start creates it). */
void *gate_thread(void *arg);
/* Wakes the gate thread: a worker finished, or the gate stops. Any thread. */
void gate_wake(struct gate *g);

#endif /* VMM_MIGRATION_GATE_H */
