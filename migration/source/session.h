/* SPDX-License-Identifier: Apache-2.0 */
/*
 * session.h - one outgoing migration's shared state (struct migration) and
 * the operations every phase of the source uses: failure and cancel,
 * progress under the lock, the claim bitmap, the blackout (session.c,
 * progress.c); the connections and the records on them (session_io.c).
 * The bottom of migration/source: it calls only the layers below.
 *
 * The threads, what each owns, the locks and the atomics are tabled in
 * docs/architecture.md, "Threads and locks: source"; each struct below
 * states its own rule. Every lock is a leaf. `lock` is never held across
 * blocking I/O: the only syscalls under it are migration_fail's
 * non-blocking peek at `main`, record_downtime's read of the boot id and the
 * cancel's shutdown(2) of every channel. `pc.resume_to` is written under
 * `lock` only in POSTCOPY_PAUSED, while the migration thread waits on
 * `pc.resume_cond`; it reads it after the wait.
 *
 * A failed or cancelled migration ends in migration.c: the migration thread
 * joins every other engine thread, frees their buffers, turns dirty logging
 * off, publishes the final state under `lock`, and only then closes the
 * channels (a completed one keeps them until migration_free()).
 */
#ifndef VMM_MIGRATION_SOURCE_SESSION_H
#define VMM_MIGRATION_SOURCE_SESSION_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "channel.h"
#include "codec.h"
#include "commit_fsm.h"
#include "config.h"
#include "dirtylog.h"
#include "harvest.h"
#include "migration.h"
#include "proof.h"
#include "ratelimit.h"
#include "sched_boost.h"
#include "spin_wait.h"
#include "state_versions.h"
#include "team.h"
#include "test_hooks.h"
#include "test_steps.h"

struct vm;

/* Per data connection: its socket, compression context and buffers (see ram_send.h). */
struct ram_sender {
	struct migration *m;
	unsigned index;
	struct mig_chan chan;
	void *cctx; /* ZSTD_CCtx */
	uint32_t zero_idx[MIG_PAGES_MAX];
	uint32_t data_idx[MIG_PAGES_MAX];
	void *zbuf; /* compressed batch */
	size_t zcap;
	uint64_t records; /* PAGES records sent */
	int error;
};

/*
 * Postcopy (postcopy_switch.c, postcopy_serve.c). The migration thread sets
 * these before the urgent thread starts and between push rounds; `urgent`
 * belongs to the urgent thread once it runs; the resume fields are under
 * `lock` (resume_to: see the top of this file); the counters are atomics.
 */
struct src_postcopy {
	bool active;		/* after the postcopy switchover: pushing */
	bool switching;		/* in the postcopy switchover: END carries no digest */
	bool all_stale;		/* --no-final-bitmap: every page is stale on the target */
	uint64_t **sent;	/* per slot: pages claimed since the switchover (atomic) */
	struct mig_chan urgent; /* page requests in, requested pages out */
	pthread_t urgent_thread;
	bool urgent_started;
	char resume_to[256];   /* set by migration_resume() */
	uint32_t attempt;      /* the migration thread's: resume attempts so far (hello index) */
	bool resume_requested; /* under lock; resume_cond signals it */
	pthread_cond_t resume_cond;
	uint64_t pages_requested; /* atomics */
	uint64_t pages_pushed;
	struct test_hook_watch cut_watch; /* TEST_FAULT_CUT_POSTCOPY */
};

/*
 * The switchover commit and its recovery (commit.c): written under `lock`
 * (the event loop's migration_recover() asks, the migration thread acts),
 * but `ack`, the migration thread's alone.
 */
struct src_commit {
	bool committed;		  /* COMMIT is going out: never resume on our own */
	bool unconfirmed;	  /* postcopy: no COMMITTED, the serve starts paused */
	bool resumed_once;	  /* a postcopy resume reached the target */
	bool recover_requested;	  /* migration_recover() asked */
	bool recover_resume_here; /* the operator's decision, not the target's */
	char recover_to[256];
	struct test_hook_watch stop_watch; /* TEST_STEP_SOURCE_{FIRST_PASS,POSTCOPY_LATE} */
	struct mig_committed ack;	   /* the target's, at the switchover */
	/* PREPARED's: the target's keys for its operator's RUN and DISCARD (DECIDED). */
	uint8_t target_keys[2][MIG_KEY_LEN];
	/* The commit's state (commit_fsm.h): every decision of commit.c steps it. */
	struct commit_fsm fsm;
};

/*
 * The sending phase under way, for the live progress (progress.c): a
 * precopy pass, the final pass, or the postcopy push. Under `lock`; written
 * by the migration thread, read by migration_get_progress().
 */
struct src_clock {
	uint64_t t_start_ns;	  /* the migration's start */
	uint64_t phase_t0_ns;	  /* 0: no phase being sent */
	uint64_t phase_todo;	  /* pages it has to send */
	uint64_t phase_done0;	  /* done_pages() when it began */
	uint64_t phase_wire0;	  /* wire_bytes when it began */
	uint64_t last_harvest_ns; /* for the dirty rate */
	bool phase_since_harvest; /* a sending phase ended since the last harvest */
	uint64_t postcopy_wire0;  /* wire_bytes at the postcopy switchover */
	uint64_t commit_us;	  /* the commit's round trips, as the last decision took them */
	bool postcopy_started;	  /* postcopy_wire0 is set */
};

/*
 * --converge throttle (throttle_apply.c): the migration thread's, from the
 * first decision of precopy to its end, but `slept0` and `slept_live`,
 * which are under `lock` (the progress reader sums the sleep live).
 */
struct src_throttle {
	unsigned level;			  /* the level set, 0: off */
	unsigned vcpus;			  /* vCPUs it slows */
	bool sampled;			  /* the vCPU times below are set */
	uint64_t t_ns;			  /* when they were read */
	uint64_t cpu[CONFIG_MAX_VCPUS];	  /* each vCPU's CPU time then */
	uint64_t slept[CONFIG_MAX_VCPUS]; /* ... and its throttle's sleep */
	uint64_t slept0;		  /* all vCPUs' throttle sleep at the start */
	bool slept_live;		  /* between throttle_begin() and throttle_end() */
};

/*
 * The blackout's real-time boost (sched_boost.h) of the migration thread
 * and the send and harvest teams: migration thread only, from
 * blackout_begin() to blackout_end().
 */
struct src_boost {
	struct sched_prev self;
	struct sched_prev send[MIGRATION_MAX_CONNECTIONS];
	struct sched_prev harvest[MIGRATION_MAX_HARVEST_THREADS];
	bool on;
	/* The waits for the target on `main` in this blackout (commit.c) and their bound. */
	struct spin_stats waits;
	uint64_t spin_ns;
};

struct migration {
	struct vm *vm;
	struct migration_params params;
	struct test_hooks hooks; /* read once by the front end */
	struct tls_ctx *tls;	 /* NULL: plain TCP ([migration] tls_* unset) */
	/* The front end's keys VM_DESC carries (migration_host.desc); keys NULL: none. */
	struct config_layer desc_host;
	pthread_t thread;
	bool thread_started;

	pthread_mutex_t lock;
	struct migration_progress progress;
	int error;	     /* first failure's -errno; its message is progress.error */
	bool cancel;	     /* stop now: set on cancel and on any failure (atomic) */
	bool user_cancelled; /* the stop came from migration_cancel() */

	/* precopy and the pages: the migration thread's, the senders' per sender */
	uint64_t session;
	/*
	 * The source's decision keys (proof.h): the migration thread's, but
	 * for the event loop's read of nothing; a decision this side will
	 * never take is forgotten (commit.c).
	 */
	struct mig_keys keys;
	struct mig_chan main;
	struct ram_sender *senders;
	unsigned connections;
	struct team send_team;
	struct dirtylog dl;
	struct harvest harvest;
	struct ratelimit rl;
	bool check_residency;	 /* no swap: a page not resident was never written */
	bool sparse;		 /* under half resident: no INITIALLY_SET (setup.c) */
	bool first_pass;	 /* pass 0: pending may hold never-written pages */
	bool first_pass_pending; /* no precopy pass was sent yet */
	unsigned pass;		 /* precopy passes harvested (progress.pass's value) */
	bool blackout;		 /* final pass: vCPUs paused, no CLEAR needed */
	uint64_t sync_seq;	 /* SYNC sent at the end of each precopy pass */
	uint64_t sync_wait_ns; /* the last pass: senders done to SYNC_ACK (a round trip and more) */
	/* The target's CAPS (setup.c), migration thread only; progress has a copy. */
	bool target_postcopy; /* it can arm userfaultfd: postcopy is possible */
	/* From CAPS too (formats.c): the target's protocol minor, the state form to write. */
	uint32_t target_minor;
	struct state_form form;

	/* live counters (atomics) */
	uint64_t pages_sent;
	uint64_t zero_pages;
	uint64_t skipped_pages;
	uint64_t wire_bytes; /* every byte written on every connection (chan total_out) */

	struct src_postcopy pc;
	struct src_commit commit;
	struct src_clock clock;
	struct src_boost boost;
	struct src_throttle throttle;
};

/* ---- session.c: lifetime, failure, progress, claims, blackout ---- */

/*
 * Fills a zeroed struct migration for `vm` (locks, closed channels, rate
 * limit, SETUP progress, a random session id). Event loop, before the
 * migration thread exists. Cannot fail.
 */
void session_init(struct migration *m, struct vm *vm, const struct migration_params *p,
		  const struct test_hooks *hooks);
/*
 * Frees what session_init() and the phases allocated, and m itself. Every
 * engine thread must be gone and every sender destroyed (ram_sender_destroy).
 * Whatever the end of the migration released already is NULL or closed.
 */
void session_destroy(struct migration *m);

/* Progress state, under the lock. Migration thread. */
void set_state(struct migration *m, enum migration_state s);
/* True once any thread failed or the user cancelled. Any thread. */
bool migration_cancelled(struct migration *m);
/*
 * Records the failure (the first one wins: its -errno in `error`, its
 * message, or the target's ERROR text when one is waiting on `main`, in
 * progress.error), then stops every engine thread at its next check and
 * unblocks their I/O. Any thread; takes the lock.
 */
void migration_fail(struct migration *m, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The first failure's -errno, or 0. Any thread; takes the lock. */
int migration_error(struct migration *m);
/*
 * chan_abort() on every connection: blocked I/O returns at once. An engine
 * thread, or the event loop under `lock` while the state is not final.
 */
void session_abort_channels(struct migration *m);

/* ---- progress.c: what migration_get_progress() reports, live ---- */

/* Folds the live counters into progress, under the lock. Migration thread. */
void update_live(struct migration *m, uint64_t t_start);
/*
 * One harvest round, for pass `pass`; records its timing and the dirty
 * rate in progress, and the pages it found as that pass's (none sent yet).
 * Fails the migration on error. Migration thread, no send round running.
 */
int harvest_pass(struct migration *m, unsigned pass, struct harvest_stats *st);
/*
 * A sending phase begins: `todo` pages from now (a precopy pass's harvest,
 * the final pass, the postcopy push's stale pages). While it runs, the
 * progress's remaining bytes, pass percentage, throughput, page rate and
 * expected downtime are computed at each read. Migration thread.
 */
void progress_phase_begin(struct migration *m, uint64_t todo);
/*
 * The phase ended: its throughput and page rate become the progress's
 * until the next one (a short phase keeps the previous, longer one's
 * rates: it measures latency, not bandwidth). Migration thread.
 */
void progress_phase_end(struct migration *m);
/* The VM runs on the target from now: later bytes are postcopy_bytes. Migration thread. */
void progress_postcopy_begin(struct migration *m);
/* The precopy decision: converged (1/0/-1) and why (MIGRATION_WHY_*). Migration thread. */
void progress_switchover_reason(struct migration *m, int converged, const char *why);
/*
 * COMMIT's proof made for main (outside the blackout), then switchover
 * state, vCPUs paused, blackout flags set; *t_pause = when the pause
 * began. -ECANCELED if a cancel came first, -ESRCH if the VM ended
 * meanwhile (then *t_pause is set and the caller resumes the vCPUs),
 * another -errno (migration failed, not paused) if the proof could not be
 * made. Migration thread.
 */
int blackout_begin(struct migration *m, uint64_t *t_pause);
/*
 * The blackout is over (the VM runs on the target, or again here, or the
 * migration failed): the threads blackout_begin() boosted go back to their
 * priority. Migration thread; nothing when nothing was boosted.
 */
void blackout_end(struct migration *m);
/*
 * The blackout's waits for the target on `main`: polls up to the blackout's
 * bound (blackout_poll_us, at most the downtime limit; none on a 1-CPU
 * host), counted, before the caller's blocking wait (spin_wait.h).
 * Migration thread, between blackout_begin() and the end of the commit.
 */
void blackout_wait_main(struct migration *m);
/* The blackout's wait counts into the progress; `lock` held. */
void blackout_record_waits(struct migration *m);
/* Downtime from the pause to the target's resume (see struct mig_committed); `lock` held. */
void record_downtime(struct migration *m, uint64_t t_pause, const struct mig_committed *ack);

/* The claim bitmap `sent`, one bit per guest page: migration thread, before the push. */
int claim_init(struct migration *m);
/* True when page p of slot i was not claimed yet; claims it. Senders, urgent thread. */
bool claim_page(struct migration *m, uint32_t slot, uint64_t p);
/* Unclaims the pages set in `mask`, word w of slot i (lost in flight). Migration thread. */
void claim_forget(struct migration *m, uint32_t slot, uint64_t w, uint64_t mask);

/* ---- throttle_apply.c: --converge throttle (throttle.h has the policy) ---- */

/* All vCPUs' sleep for their throttle since they were created, ns. Any thread, no lock. */
uint64_t throttle_slept_now(struct vm *vm);
/* Reads the vCPUs' times as the baseline (the first decision of precopy). Migration thread. */
void throttle_begin(struct migration *m);
/*
 * After a decision to keep going (pass `pass`, the last real pass sent at
 * send_rate pages/s): the level and the vCPUs from what they did since the
 * last call, set on the VM when they change, the change recorded. 0, or
 * -errno with the migration failed (a vCPU that cannot be throttled).
 * Migration thread; the first call is also throttle_begin().
 */
int throttle_after_pass(struct migration *m, unsigned pass, uint64_t send_rate);
/*
 * Every vCPU back to full speed, the sleep's total frozen in the progress,
 * the change to 0 recorded (if the level was not 0). Migration thread, as
 * precopy ends however it ends; nothing if throttle_begin() never ran.
 */
void throttle_end(struct migration *m, unsigned pass);

/* ---- session_io.c: the connections and the records on them ---- */

/*
 * Sends a record whose payload pieces (a, b) are already encoded with the
 * codec, after checking its header against the record table for the
 * channel's role, source to target: every length the source sends is
 * bounded where the target bounds it. 0, -EPROTO (err names the rule), or
 * the channel's error (err = chan_strerror()). The thread owning c's
 * sending direction.
 */
int send_rec(struct mig_chan *c, uint32_t type, const void *a, uint32_t alen, const void *b,
	     uint32_t blen, char *err, size_t errlen);

/*
 * The one PAGES encoder of the source (ram_send.c's batches, the urgent
 * thread's answers): the record header and the PAGES header, encoded into
 * out; returns the record's payload length. The index arrays and the page
 * data follow as they are (zero copy; the wire's uint32 arrays are the
 * host's on the little-endian hosts protocol.h asserts). No table check:
 * a batch of at most MIG_PAGES_MAX pages, compressed into at most
 * MIG_PAGES_DATA_MAX bytes, is within it by construction. Any thread.
 */
#define PAGES_FRAME_LEN (MIG_REC_HDR_LEN + MIG_PAGES_HDR_LEN)
uint32_t pages_frame(uint8_t out[PAGES_FRAME_LEN], const struct mig_pages_hdr *ph);

/* TCP to `to`, then the TLS handshake when the VM's config names key files. */
int session_connect(struct migration *m, struct mig_chan *c, const char *to, char *err,
		    size_t errlen);
/*
 * Why a send on main failed, for the message: a plaintext source whose
 * target wants TLS is dropped as soon as the target reads it, which shows
 * here as a reset or a broken pipe; anything else is `what`. Any thread.
 */
const char *main_send_error(const struct migration *m, int ret, const char *what);
/*
 * Connects `main` to the destination (params.to, or resume_to for
 * MIG_ROLE_MAIN_RESUME), TLS when configured, and sends its hello.
 * Migration thread; fails the migration on error.
 */
int connect_main(struct migration *m, uint32_t role);
/*
 * Then the data connections and the urgent one, each with its hello, to
 * the same destination as connect_main(m, main_role). Same contract.
 */
int connect_data(struct migration *m, uint32_t main_role);
/*
 * VM_STATE and every VCPU_STATE on `main`, saved first and then sent in one
 * write; the vCPUs are paused. Migration thread, which may run it while a
 * send round is under way (send_pass_start): it touches only `main` and the
 * VM's state, nothing a sender owns.
 */
int send_state(struct migration *m);
/* CHANNEL_END on every data connection: what each carried. Migration thread, no round. */
int end_data_channels(struct migration *m);
/* END on `main`, with the PAGES records sent on each data connection. Migration thread. */
int send_end(struct migration *m);
/* end_data_channels() then send_end(). */
int finish_channels(struct migration *m);

/*
 * The largest reply wait_reply() takes: every target-to-source record on
 * `main` is at most an ERROR's size or a 6.1 CAPS with its formats block
 * (the larger), except a resume's BITMAP records, which read_missing()
 * (postcopy_serve.c) reads itself.
 */
#define REPLY_MAX (MIG_CAPS_MAX > MIG_ERROR_MAX ? MIG_CAPS_MAX : MIG_ERROR_MAX)
/*
 * Reads the target's next record on `main`, which must be `type` (a record
 * whose table limit is at most REPLY_MAX): its header bounded by the record
 * table alone, each type by its own limit (the error names the record and
 * the limit); then the payload into buf, *len its length. An ERROR fails
 * with the target's message; any other type with "expected ...", before its
 * payload is read; an I/O error with "what: ...". The caller decodes buf.
 * Migration thread.
 */
int wait_reply(struct migration *m, uint32_t type, uint8_t buf[REPLY_MAX], uint32_t *len,
	       const char *what);
/*
 * One send round on every data connection (the senders' team); outside
 * the blackout it ends with SYNC and waits for the target's SYNC_ACK.
 * Migration thread.
 */
int send_pass(struct migration *m);
/*
 * send_pass() in two halves, so that the blackout's state goes out on
 * `main` while the senders send the last pages: send_pass_start() begins
 * the round and returns; send_pass_finish() waits for it and returns what
 * send_pass() would. Every start is followed by its finish, whatever
 * happened in between (a failure aborts the channels, so the round ends
 * soon). Migration thread.
 */
void send_pass_start(struct migration *m);
int send_pass_finish(struct migration *m);

#endif /* VMM_MIGRATION_SOURCE_SESSION_H */
