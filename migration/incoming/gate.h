/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gate.h - inside the gate (gate.c: its thread and the handshake workers;
 * gate_admit.c: who holds a slot; gate_judge.c: what becomes of a
 * connection; gate_handover.c: starting it and handing its connections
 * over). The contracts of gate_start() and friends are in incoming.h; the
 * locking is gate.c's file comment.
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
/*
 * What one peer address (an IPv4 address, an IPv6 /64, every UNIX peer)
 * may hold of them: half, a whole migration's connections. A peer at its
 * bound makes room by evicting its own oldest stalled connection.
 */
#define GATE_PEER_SLOTS (MIGRATION_MAX_CONNECTIONS + 2)
/* Stalled connections past their hello with one session id; the oldest beyond are evicted. */
#define GATE_SESSION_SLOTS (MIGRATION_MAX_CONNECTIONS + 2)
#define PARK_MS		   15000u /* a data connection waits this long for its main */

/* Whom a connection counts against: its address (IPv6: the /64), or "a UNIX peer". */
struct gate_peer {
	uint8_t addr[16];
	uint8_t len;
};

/* Why a connection was evicted (gate_admit.c); 0: it was not. */
enum gate_evict { GATE_EVICT_NONE, GATE_EVICT_FULL, GATE_EVICT_PEER, GATE_EVICT_SESSION };

struct gate_conn {
	struct gate *g;
	bool used, running, parked, expired;
	bool served; /* late: its worker ran the whole exchange (a recover connection) */
	enum gate_evict evicted; /* made room for a newer connection */
	bool done;		 /* atomic: the worker finished */
	/*
	 * Atomic: the worker read a valid hello (h is set, acquire). Until its
	 * first complete record after the hello (c.records_in) the connection
	 * has proven nothing and may still be evicted (gate_admit.c).
	 */
	bool hello_ok;
	pthread_t thread;
	struct mig_chan c;
	char peer[64];
	struct gate_peer from;
	uint64_t accepted_ns;
	uint64_t deadline_ns; /* accepted_ns + HANDSHAKE_TIMEOUT_MS; parked: the end of its wait */
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
	struct config_layer desc_host; /* base NULL: checked, dropped (gate_start) */
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
/*
 * The gate thread, under g->lock: queues a late connection for gate_take();
 * a full queue drops the connection queued longest ago for it.
 */
void gate_late_queue(struct gate *g, struct gate_conn *gc);
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

/*
 * gate_admit.c, the gate thread: who holds a slot. gate_admit() finds one
 * for a connection accepted from `from`, evicting a stalled connection
 * (one that has proven nothing: no complete record after its hello, or
 * parked) when the peer is at GATE_PEER_SLOTS or the gate is full; NULL
 * with the reason in why when none can go. The connections of the
 * migration in progress (its session and a role it takes now) are evicted
 * for their own peer's newer ones and by gate_bound_sessions() only.
 */
struct gate_conn *gate_admit(struct gate *g, const struct gate_peer *from, char *why, size_t len);
/* Evicts the oldest stalled connections of any session id beyond GATE_SESSION_SLOTS. */
void gate_bound_sessions(struct gate *g);
/* fd's peer: its key and its printable "host:port". */
void gate_peer_of(int fd, struct gate_peer *from, char *name, size_t len);

/*
 * gate_judge.c, the gate thread: a finished (or aborted) worker's
 * connection judged: handed over, parked, queued or refused; a refusal
 * (`fresh`: nothing was read or written on c yet, so a TLS gate may still
 * answer in plain); a slot emptied.
 */
void gate_judge(struct gate *g, struct gate_conn *gc);
void gate_refuse(struct gate *g, struct mig_chan *c, const char *peer, const char *why, bool fresh);
void gate_slot_clear(struct gate_conn *gc);

/* The gate thread's function (gate_start creates it). */
void *gate_thread(void *arg);
/* Wakes the gate thread: a worker finished, or the gate stops. Any thread. */
void gate_wake(struct gate *g);

#endif /* VMM_MIGRATION_GATE_H */
