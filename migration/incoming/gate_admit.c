/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gate_admit.c - who holds one of the gate's slots (gate.h). A slot is
 * held from the accept until the connection has been judged; a connection
 * that has proven nothing yet is "stalled" and may be evicted for a newer
 * one, as sshd's MaxStartups drops unauthenticated peers:
 *  - it has not sent a valid hello (idle, trickling, another protocol);
 *  - or it sent one and then no complete record after it (a forged hello,
 *    valid-looking, costs an attacker 32 bytes: it must not hold a slot
 *    longer than one that sent nothing);
 *  - or it is a data connection parked until its main connection.
 * A connection's first complete record after the hello (a VM_DESC ends the
 * handshake; a recover's decision and a main-resume's RESUME carry their
 * proofs) is what it must show (c.records_in); until then, and after it,
 * the deadline HANDSHAKE_TIMEOUT_MS from the accept still bounds it.
 *
 * Three bounds choose whom to evict, so that no flood of valid-looking
 * connections keeps the real source out:
 *  - per peer: one address (an IPv6 /64) holds at most GATE_PEER_SLOTS,
 *    half the gate; at its bound its own oldest stalled connection goes;
 *  - per session id: at most GATE_SESSION_SLOTS stalled connections past
 *    their hello carry one session id; beyond, the oldest of them goes
 *    (the real source's connection is the newest of its session);
 *  - a full gate evicts from the peer holding the most slots, its oldest
 *    stalled connection, but never one of the migration in progress (its
 *    session, in a role the gate takes now): those slots are reserved, and
 *    only the two bounds above (their own peer's newer connections, their
 *    own session's) or their deadline end them.
 * Whichever bound picks, a connection whose peer has sent bytes its worker
 * has not read yet goes last: on a loaded host the real source's
 * description may wait for its worker longer than a flood from its own
 * address takes to turn over that address's slots.
 *
 * The gate thread only, which owns the slots (gate.c's locking); a slot's
 * worker-owned fields are read with the atomics gate.h names.
 */
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "gate.h"

void gate_peer_of(int fd, struct gate_peer *from, char *name, size_t len)
{
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);
	char host[NI_MAXHOST], port[NI_MAXSERV];

	memset(from, 0, sizeof(*from));
	snprintf(name, len, "?");
	if (getpeername(fd, (struct sockaddr *)&sa, &sl))
		return;
	if (sa.ss_family == AF_INET) {
		memcpy(from->addr, &((struct sockaddr_in *)&sa)->sin_addr, 4);
		from->len = 4;
	} else if (sa.ss_family == AF_INET6) {
		const uint8_t *a = ((struct sockaddr_in6 *)&sa)->sin6_addr.s6_addr;
		static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

		/* An IPv4 peer on a dual-stack socket is that IPv4 address; IPv6 counts by /64. */
		if (!memcmp(a, v4mapped, sizeof(v4mapped))) {
			memcpy(from->addr, a + 12, 4);
			from->len = 4;
		} else {
			memcpy(from->addr, a, 8);
			from->len = 8;
		}
	} else {
		return; /* a UNIX peer: all of them one (len 0) */
	}
	if (!getnameinfo((struct sockaddr *)&sa, sl, host, sizeof(host), port, sizeof(port),
			 NI_NUMERICHOST | NI_NUMERICSERV))
		snprintf(name, len, sa.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}

static bool same_peer(const struct gate_peer *a, const struct gate_peer *b)
{
	return a->len == b->len && !memcmp(a->addr, b->addr, a->len);
}

static bool has_hello(const struct gate_conn *gc)
{
	return __atomic_load_n(&gc->hello_ok, __ATOMIC_ACQUIRE);
}

/* Holds a slot and has proven nothing yet: may be evicted. */
static bool stalled(const struct gate_conn *gc)
{
	if (!gc->used || gc->evicted)
		return false;
	if (gc->parked)
		return true;
	return gc->running && !__atomic_load_n(&gc->done, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&gc->c.records_in, __ATOMIC_RELAXED) == 0;
}

/* A connection of the migration in progress, in a role the gate takes from it now. */
static bool reserved(struct gate *g, const struct gate_conn *gc)
{
	uint32_t role = gc->h.role;
	bool has;
	uint64_t session;

	if (!has_hello(gc))
		return false;
	if (__atomic_load_n(&g->late, __ATOMIC_ACQUIRE))
		return gc->h.session_id == g->lt.session &&
		       (role == MIG_ROLE_RECOVER ||
			(g->lt.resume && (role == MIG_ROLE_MAIN_RESUME || role == MIG_ROLE_DATA ||
					  role == MIG_ROLE_URGENT)));
	pthread_mutex_lock(&g->lock);
	has = g->has_session;
	session = g->session;
	pthread_mutex_unlock(&g->lock);
	return has && gc->h.session_id == session &&
	       (role == MIG_ROLE_DATA || role == MIG_ROLE_URGENT);
}

static unsigned peer_slots(const struct gate *g, const struct gate_peer *from)
{
	unsigned n = 0;

	for (unsigned i = 0; i < GATE_SLOTS; i++)
		n += g->slot[i].used && same_peer(&g->slot[i].from, from);
	return n;
}

/*
 * Bytes the peer sent that its worker has not read yet: the wait is ours
 * (a worker slow to get a CPU, a description still to be read), not the
 * peer's. A peek from this thread consumes nothing.
 */
static bool unread(const struct gate_conn *gc)
{
	uint8_t b;

	return !gc->parked && recv(gc->c.fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

/*
 * The stalled connection to evict: of peer `from` (any, reserved too), or
 * with from NULL one of the peer holding the most slots, never a reserved
 * one; of those, one with nothing unread before one whose bytes wait for
 * its worker, then the oldest. NULL if none.
 */
static struct gate_conn *victim(struct gate *g, const struct gate_peer *from)
{
	struct gate_conn *best = NULL;
	unsigned best_n = 0;
	bool best_unread = false;

	for (unsigned i = 0; i < GATE_SLOTS; i++) {
		struct gate_conn *gc = &g->slot[i];
		unsigned n;
		bool u;

		if (!stalled(gc) || (from ? !same_peer(&gc->from, from) : reserved(g, gc)))
			continue;
		n = from ? 0 : peer_slots(g, &gc->from);
		u = unread(gc);
		if (!best || n > best_n ||
		    (n == best_n && (best_unread > u ||
				     (best_unread == u && gc->accepted_ns < best->accepted_ns)))) {
			best = gc;
			best_n = n;
			best_unread = u;
		}
	}
	return best;
}

/*
 * Evicts gc: a parked one is refused at once; a worker's socket is shut
 * and the worker joined (it fails at once; one whose record won the race
 * is judged as usual). The slot, if now free.
 */
static struct gate_conn *evict(struct gate *g, struct gate_conn *gc, enum gate_evict why)
{
	gc->evicted = why;
	if (gc->parked) {
		char msg[200];

		snprintf(msg, sizeof(msg), "evicted: waiting for its main connection when %s",
			 why == GATE_EVICT_PEER
			     ? "its address held the most connections one address may"
			 : why == GATE_EVICT_SESSION ? "its session had the most waiting it may"
						     : "the gate was full");
		gate_refuse(g, &gc->c, gc->peer, msg, false);
		gate_slot_clear(gc);
		return gc;
	}
	chan_abort(&gc->c);
	gate_judge(g, gc);
	return gc->used ? NULL : gc;
}

struct gate_conn *gate_admit(struct gate *g, const struct gate_peer *from, char *why, size_t len)
{
	struct gate_conn *gc = NULL, *v;

	/* Finished workers first: their slots may be free already. */
	for (unsigned i = 0; i < GATE_SLOTS; i++)
		if (g->slot[i].running && __atomic_load_n(&g->slot[i].done, __ATOMIC_ACQUIRE))
			gate_judge(g, &g->slot[i]);
	if (peer_slots(g, from) >= GATE_PEER_SLOTS) {
		v = victim(g, from);
		gc = v ? evict(g, v, GATE_EVICT_PEER) : NULL;
		if (!gc) {
			snprintf(why, len,
				 "busy: this address has %u connections in their handshake already",
				 GATE_PEER_SLOTS);
			return NULL;
		}
		return gc;
	}
	for (unsigned i = 0; i < GATE_SLOTS && !gc; i++)
		if (!g->slot[i].used)
			gc = &g->slot[i];
	if (!gc) {
		v = victim(g, NULL);
		gc = v ? evict(g, v, GATE_EVICT_FULL) : NULL;
	}
	if (!gc)
		snprintf(why, len, "busy: too many connections in their handshake");
	return gc;
}

void gate_bound_sessions(struct gate *g)
{
	for (unsigned i = 0; i < GATE_SLOTS; i++) {
		struct gate_conn *gc = &g->slot[i], *oldest = NULL;
		unsigned n = 0;

		if (!stalled(gc) || !has_hello(gc))
			continue;
		for (unsigned j = 0; j < GATE_SLOTS; j++) {
			struct gate_conn *o = &g->slot[j];

			if (!stalled(o) || !has_hello(o) || o->h.session_id != gc->h.session_id)
				continue;
			n++;
			if (!oldest || o->accepted_ns < oldest->accepted_ns)
				oldest = o;
		}
		if (n > GATE_SESSION_SLOTS) {
			evict(g, oldest, GATE_EVICT_SESSION);
			i = (unsigned)-1; /* counted again from the start */
		}
	}
}
