/* SPDX-License-Identifier: Apache-2.0 */
/*
 * incoming.h - the target side's state while and after it receives a VM.
 * Owned by the thread that called migration_incoming(); the receiver
 * threads (one per data connection) write guest RAM and their own
 * struct recv_chan only.
 */
#ifndef VMM_MIGRATION_INCOMING_H
#define VMM_MIGRATION_INCOMING_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "channel.h"
#include "test_hooks.h"

struct vm;

struct recv_chan {
	struct incoming *in;
	unsigned index;
	struct mig_chan chan;
	pthread_t thread;
	bool started;
	int error;
	char err[256];
	uint64_t records;     /* PAGES records applied */
	bool ended;           /* CHANNEL_END seen */
	uint64_t synced;      /* last SYNC applied */
	bool urgent;          /* the urgent connection: any slot, no shards */
	void *dctx;           /* ZSTD_DCtx */
	uint8_t *buf;         /* received (compressed) data */
	uint8_t *pages_buf;   /* decompressed pages */
};

struct incoming {
	struct vm *vm;
	struct test_hooks hooks; /* read once by the front end */
	struct test_hook_watch kill_watch; /* TEST_FAULT_KILL_DURING_PRECOPY */
	struct mig_chan main;
	pthread_mutex_t main_wlock; /* receivers send SYNC_ACK on main */
	uint64_t sync_acked;
	struct recv_chan *chans;
	unsigned nchans;
	uint32_t shard_pages;
	uint64_t **written; /* per slot: pages this target has written */
	uint32_t nwritten;
	bool abort;
	uint64_t digest;    /* the source's digest, when it sent one (verified) */
	uint64_t restore_us;
	uint64_t end_ns;    /* END received */
	uint64_t session;
	int lfd;            /* listening socket, kept open for a postcopy resume */
	struct tls_ctx *tls; /* NULL: plain TCP */

	/* postcopy (postcopy_target.c) */
	bool postcopy;           /* POSTCOPY seen: pages now go in with userfaultfd */
	uint32_t postcopy_flags;
	uint32_t nbitmaps;
	uint64_t **missing;      /* per slot: stale pages not yet in place (atomic) */
	uint64_t **stale;        /* per slot: what was stale at the switchover (fixed) */
	uint64_t **requested;    /* per slot: PAGE_REQ sent (atomic) */
	uint64_t missing_left;   /* atomic */
	uint64_t missing_total;
	int uffd;
	bool uffd_ready;         /* stale pages dropped: pushed pages may go in */
	void *bitmap_dctx;       /* ZSTD_DCtx for BITMAP records */
	bool bitmap_ended;       /* BITMAP_END seen */
	/*
	 * The dropper thread drops each slot's stale pages as its BITMAP
	 * arrives, while the main thread goes on reading and loading the state.
	 */
	pthread_t drop_thread;
	bool drop_started;
	pthread_mutex_t drop_lock;
	pthread_cond_t drop_cond;
	uint32_t *drop_queue;    /* slots whose bitmap is in, in arrival order */
	uint32_t drop_cap;       /* 2 x slots: a preliminary and a final round */
	uint32_t drop_queued;    /* under drop_lock */
	uint32_t drop_taken;     /* under drop_lock */
	bool drop_busy;          /* under drop_lock: a slot is being dropped */
	bool drop_closed;        /* under drop_lock: no more slots will come */
	int drop_error;
	uint64_t *bitmap_scratch; /* one slot's expanded BITMAP */
	uint64_t *drop_todo;     /* the dropper's: pages of a slot to drop now */
	bool pre_done;           /* the preliminary round was dropped and ARMED sent */
	struct recv_chan urgent;
	pthread_mutex_t urgent_wlock;
	pthread_t fault_thread, monitor_thread, resume_thread;
	bool fault_started, monitor_started, resume_started;
	int stop_fd;             /* eventfd: stops the fault thread */
	pthread_mutex_t pc_lock; /* paused/complete transitions, latency samples */
	pthread_mutex_t resume_lock; /* resume_thread, resume_started */
	bool paused, complete, finished, stopping;
	uint64_t start_ns;       /* vCPUs resumed on this host */
	uint64_t faults, nrequested, duplicates;
	struct pc_req *reqtab;   /* outstanding requests: when they were sent */
	uint32_t *lat_us;        /* fault service latencies */
	uint64_t nlat, lat_cap;
	unsigned resumes;
	char pause_reason[256];
};

struct pc_req {
	uint64_t key; /* slot << 32 | page, 0 = free (page keys are stored + 1) */
	uint64_t t_ns;
};

/* target.c: the TLS handshake on an accepted connection, when TLS is on (10 s at most). */
int incoming_secure(struct incoming *in, struct mig_chan *c, char *err, size_t errlen);

/* postcopy_target.c */
struct mig_rec_hdr;
/* Main-connection records of a postcopy switchover: POSTCOPY, BITMAP, BITMAP_END. */
int postcopy_target_record(struct incoming *in, const struct mig_rec_hdr *h, char *err,
			   size_t errlen);
/* After END and the state load: waits until every stale page is dropped. */
int postcopy_target_ready(struct incoming *in, char *err, size_t errlen);
/* At the ACK: the guest runs from now on. */
void postcopy_target_started(struct incoming *in);
/* Puts a received page in place (data NULL: a zero page). */
int postcopy_place(struct incoming *in, uint32_t slot, uint64_t page, const void *data);
/* A connection failed during postcopy: wait for the source to resume. */
void postcopy_connection_lost(struct incoming *in, const char *why);
void postcopy_target_stop(struct incoming *in);
struct migration_progress;
void postcopy_target_progress(struct incoming *in, struct migration_progress *out);

/* ram_recv.c */
void *ram_recv_thread(void *arg);
int recv_chan_init(struct recv_chan *rc, struct incoming *in, unsigned index);
void recv_chan_destroy(struct recv_chan *rc);

#endif /* VMM_MIGRATION_INCOMING_H */
