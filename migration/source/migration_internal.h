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
#include "test_hooks.h"

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
	struct test_hooks hooks; /* read once by the front end */
	struct tls_ctx *tls; /* NULL: plain TCP ([migration] tls_* unset) */
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
	bool first_pass_pending; /* no precopy pass was sent yet */

	/* postcopy (postcopy_source.c) */
	bool postcopy;             /* after the postcopy switchover: pushing */
	bool postcopy_all;         /* --no-final-bitmap: every page is stale on the target */
	uint64_t **sent;           /* per slot: pages sent since the switchover (atomic) */
	struct mig_chan urgent;    /* page requests in, requested pages out */
	pthread_t urgent_thread;
	bool urgent_started;
	char resume_to[256];       /* set by migration_resume() */
	bool resume_requested;     /* under lock; cond signals it */
	pthread_cond_t resume_cond;
	uint64_t pages_requested;  /* atomics */
	uint64_t pages_pushed;
	struct test_hook_watch cut_watch; /* TEST_FAULT_CUT_POSTCOPY */
	bool blackout;        /* final pass: vCPUs paused, no CLEAR needed */
	uint64_t sync_seq;    /* SYNC sent at the end of each precopy pass */
	struct mig_ack ack;   /* the target's, at the switchover */

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

/* postcopy_source.c */
/* Postcopy switchover and the rest of the migration; 0 once the target has every page. */
int postcopy_source_run(struct migration *m, uint64_t *t_pause);
/* True when page p of slot i was not yet sent since the switchover; marks it sent. */
bool postcopy_claim_page(struct migration *m, uint32_t slot, uint64_t p);

/* source.c */
void *migration_thread(void *arg);
int send_state(struct migration *m);
int finish_channels(struct migration *m);
int end_data_channels(struct migration *m);
int send_end(struct migration *m);
/* Switchover state, vCPUs paused, blackout flags set; -ESRCH if the VM ended meanwhile. */
int blackout_begin(struct migration *m, uint64_t *t_pause);
/* Downtime from the pause to the target's resume (see struct mig_ack); under m->lock. */
void record_downtime(struct migration *m, uint64_t t_pause, const struct mig_ack *ack);
int wait_ack(struct migration *m, struct mig_ack *ack);
/* Reads the target's next main record, which must be `type` with `len` bytes (or ERROR). */
int wait_reply(struct migration *m, uint32_t type, void *payload, uint32_t len, const char *what);
int connect_all(struct migration *m, uint32_t main_role);
void set_state(struct migration *m, enum migration_state s);
uint64_t now_ms_since(uint64_t t0);
bool migration_cancelled(struct migration *m);
void migration_fail(struct migration *m, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* VMM_MIGRATION_INTERNAL_H */
