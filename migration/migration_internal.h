/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migration_internal.h - the source-side engine state shared by the files
 * of migration/. One struct migration per VM (vm->migration), created by
 * migration_start() and owned by the migration thread until it ends.
 *
 * Threads: the event-loop thread (start, cancel, progress), the migration
 * thread (the state machine in source.c), the harvest pool, and one sender
 * thread per data connection. `lock` guards `progress` and `state`; the
 * hot counters are updated with atomics and folded into progress by the
 * migration thread.
 */
#ifndef VMM_MIGRATION_INTERNAL_H
#define VMM_MIGRATION_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "channel.h"
#include "dirtylog.h"
#include "harvest.h"
#include "migration.h"
#include "ratelimit.h"
#include "team.h"

struct vm;

/* Per data connection: its socket, compression context and buffers. */
struct ram_sender {
	struct migration *m;
	unsigned index;
	struct mig_chan chan;
	void *cctx;                          /* ZSTD_CCtx */
	uint32_t zero_idx[MIG_PAGES_MAX];
	uint32_t data_idx[MIG_PAGES_MAX];
	void *zbuf;                          /* compressed batch */
	size_t zcap;
	uint64_t records;                    /* PAGES records sent */
	int error;
};

struct migration {
	struct vm *vm;
	struct migration_params params;
	pthread_t thread;
	bool thread_started;

	pthread_mutex_t lock;
	struct migration_progress progress;
	bool cancel; /* stop now: set on cancel and on any failure, read by every engine thread */
	bool user_cancelled; /* the stop came from migration_cancel() */

	uint64_t session;
	struct mig_chan main;
	struct ram_sender *senders;
	unsigned nsenders;
	struct team send_team;
	struct dirtylog dl;
	struct harvest harvest;
	struct ratelimit rl;
	bool check_residency; /* no swap: a page not resident was never written */
	bool sparse;          /* under half resident: no INITIALLY_SET (source.c) */
	bool first_pass;      /* pass 0: pending may hold never-written pages */
	bool blackout;        /* final pass: vCPUs paused, no CLEAR needed */
	uint64_t sync_seq;    /* SYNC sent at the end of each precopy pass */

	/* live counters (atomics) */
	uint64_t pages_sent;
	uint64_t zero_pages;
	uint64_t skipped_pages;
	uint64_t wire_bytes;
};

/* ram_send.c */
int ram_sender_init(struct ram_sender *s, struct migration *m, unsigned index);
void ram_sender_destroy(struct ram_sender *s);
/* Team function: sender `worker` sends the pending pages of its slots. */
void ram_send_pass(void *arg, unsigned worker);

/* ram_recv.c (target) is declared in ram_recv.h */

/* source.c */
void *migration_thread(void *arg);
bool migration_cancelled(struct migration *m);
void migration_fail(struct migration *m, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* VMM_MIGRATION_INTERNAL_H */
