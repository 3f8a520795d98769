/* SPDX-License-Identifier: Apache-2.0 */
/*
 * incoming.h - the target side's state while and after it receives a VM,
 * and the incoming handshake (incoming.c): listen, accept, TLS, hellos,
 * the VM description, the config check, creating the VM.
 *
 * The threads, what each owns and the lock of each field are tabled in
 * docs/architecture.md, "Threads and locks: target"; each struct below
 * states its own rule. Beyond those tables: the fields of a recv_chan not
 * named there are its receiver's own; chans[i].records is stored with
 * release by its receiver and loaded with acquire by main. After
 * migration_incoming_receive() returns, the front end's thread makes the
 * remaining migration_incoming_*() calls, one at a time.
 *
 * No lock is held while another is taken; should two ever nest, the order
 * is drop_lock, main_wlock, urgent_wlock, pc_lock. The stop order and its
 * reasons: postcopy_incoming_stop() (postcopy.c).
 */
#ifndef VMM_MIGRATION_INCOMING_H
#define VMM_MIGRATION_INCOMING_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "channel.h"
#include "codec.h"
#include "config.h"
#include "guest_mem.h"
#include "migration.h"
#include "pc_state.h"
#include "sched_boost.h"
#include "spin_wait.h"
#include "migration_seccomp.h"
#include "test_hooks.h"
#include "test_steps.h"

struct vm;
struct vm_config;
struct incoming_hook;
struct pc_drop;
struct pc_fault;
struct pc_control;
struct gate;
struct tls_ctx;
struct settle;

/* TLS handshake, hello and VM_DESC of one connection, from its accept (gate.c). */
#define HANDSHAKE_TIMEOUT_MS 10000u

struct recv_chan {
	struct incoming *in;
	unsigned index;
	struct mig_chan chan;
	pthread_t thread;
	bool started; /* thread running: set and cleared by whoever starts / joins it */
	int error;
	char err[256];
	uint64_t records;   /* PAGES records applied (atomic: read by main and the watcher) */
	uint64_t pages;	    /* pages in them (atomic: read by migration_incoming_status) */
	uint64_t bytes;	    /* chan.bytes_in after the last record (atomic: the same) */
	bool ended;	    /* CHANNEL_END seen */
	bool done;	    /* the thread is returning (atomic: join_receivers polls it) */
	uint64_t synced;    /* last SYNC applied (under main_wlock) */
	bool urgent;	    /* the urgent connection: any slot, no shards */
	void *dctx;	    /* ZSTD_DCtx */
	uint8_t *buf;	    /* received (compressed) data */
	uint8_t *pages_buf; /* decompressed pages */
};

/*
 * What the front end's thread reads and does while another thread receives
 * (migration_incoming_status / _cancel), all under `lock`, a leaf but for
 * gate_cancel(); main_open says main is the source's connection (a cancel
 * may shut its reading side), chans_open that chans[] exists (its counters
 * may be read); in->gate is read under it too.
 */
struct in_status {
	pthread_mutex_t status_lock;
	int phase; /* enum incoming_phase */
	char listen[80], peer[80], name[64];
	bool cancelled;
	bool told; /* the cancel sent the source its ERROR */
	char cancel_why[200];
	char error[256]; /* INCOMING_FAILED: why (what the source was told) */
	bool main_open, chans_open;
	uint64_t refused;	 /* connections the gate refused */
	char last_refused[240];	 /* the last one's "peer: reason" */
	struct spin_stats waits; /* the blackout's waits for the source (in_switchover's copy) */
	uint64_t end_to_prepared_us;
};

/*
 * The switchover and its commit (settle.c): the receiving thread's, from
 * SWITCHOVER (or POSTCOPY) on, then the settle thread's and the gate
 * workers' (`settle`, under its lock). `boost` is the real-time boost (sched_boost.h) of the
 * thread that receives the last records, loads the state and answers the
 * commit: from SWITCHOVER to the vCPUs running, the VM discarded or the
 * outcome unknown; that thread only.
 */
struct in_switchover {
	struct sched_prev boost;
	pthread_t boost_thread;
	uint64_t end_ns;	    /* END received */
	uint64_t commit_timeout_ms; /* END's: how long the source waits for COMMITTED */
	uint64_t restore_us;
	struct settle *settle; /* the commit's decision and RELEASE */
	/*
	 * The blackout's waits for the source on main (spin_wait.h): from
	 * SWITCHOVER (or POSTCOPY) to COMMIT, each polls up to spin_ns first;
	 * `waits` is copied under status_lock for migration_incoming_status().
	 */
	bool polling;
	pthread_t poll_thread;
	uint64_t spin_ns;
	struct spin_stats waits;
};

/*
 * Postcopy's threads and connections (postcopy.c, pc_*.c): set by
 * main at POSTCOPY before the threads start; `on` is atomic; urgent_wlock
 * guards every send on urgent. The shared state the threads work on is
 * struct pc_state (in->pc), with its own lock.
 */
struct in_postcopy {
	bool on; /* atomic: POSTCOPY seen, pages now go in with userfaultfd */
	uint32_t flags;
	/*
	 * The capability probe (incoming_create_vm, main thread): its
	 * userfaultfd, which the arm at POSTCOPY takes (-1: none, or taken),
	 * or why there is none, as CAPS told the source.
	 */
	int uffd_probe;
	char uffd_reason[MIG_CAPS_REASON_MAX + 1];
	struct pc_drop *drop;
	struct pc_fault *fault;
	struct pc_control *ctl;
	struct recv_chan urgent;
	pthread_mutex_t urgent_wlock;
};

struct incoming {
	/* Set by the main thread before any other thread starts; read-only after. */
	struct vm *vm;
	struct test_hooks hooks; /* read once by the front end */
	struct tls_ctx *tls;	 /* NULL: plain TCP */
	uint64_t session;
	uint8_t keys[4][MIG_KEY_LEN]; /* VM_DESC's: the source's decision keys (proof.h) */
	uint32_t peer_minor;	      /* the source's hello: its protocol minor */
	unsigned connections;
	uint32_t shard_pages;
	struct recv_chan *chans;
	uint64_t **written; /* per slot: pages this target has written (precopy) */
	uint32_t nwritten;
	int lfd;	   /* listening socket, kept open for a postcopy resume */
	struct gate *gate; /* from incoming_open() to gate_stop(); NULLed under status_lock */
	/* The gate reports refusals to us (counted in status), we to the caller's hook. */
	struct incoming_hook gate_hook, user_hook;
	int open_lfd; /* the listening socket from incoming_open() (lfd: once received) */
	/* [vm] prealloc: RAM made resident by incoming_open(), until the VM takes it */
	struct guest_mem ram;
	/* Listening on unix:PATH: the socket file, removed at the end if still ours. */
	char *unix_path;
	uint64_t unix_dev, unix_ino;

	struct in_status status;

	struct mig_chan main;
	pthread_mutex_t main_wlock;
	uint64_t sync_acked; /* under main_wlock */

	bool abort; /* atomic: the migration failed, receivers and main stop */
	struct test_hook_watch kill_watch; /* TEST_FAULT_KILL_DURING_PRECOPY */
	uint64_t digest;		   /* the source's digest, when it sent one (verified) */

	struct in_switchover sw;
	struct in_postcopy post;
	struct pc_state pc;
};

/* Initialises a zeroed struct: locks, fds -1, and the test hooks. */
void incoming_init(struct incoming *in, const struct test_hooks *hooks);

/*
 * Checks host's TLS files, listens on `addr` (*lfd) and starts the gate on it,
 * which refuses bad peers (through hook->refused) until the source's main
 * connection comes.
 */
int incoming_open(struct incoming *in, const char *addr, const struct vm_config *local_cfg,
		  const struct migration_host *host, const struct incoming_hook *hook, int *lfd,
		  char *err, size_t errlen);

/*
 * Waits (forever) for the gate's main connection, whose VM description and
 * config the gate checked (merged with this host's settings), creates the
 * VM from it, checks its memslot layout and calls
 * the hook. Then probes for a userfaultfd (uffd_open(): the syscall or
 * /dev/userfaultfd; the fd is kept in in->post.uffd_probe for postcopy) and
 * answers VM_DESC with CAPS, before any data connection is accepted. On
 * success in->vm, in->connections, in->shard_pages, in->session and in->main
 * are set. From the VM on, a failure fails the migration.
 */
int incoming_create_vm(struct incoming *in, const struct vm_config *local_cfg, int console_fd,
		       const struct incoming_hook *hook, char *err, size_t errlen);

/*
 * The gate's data connections and the urgent one (10 s at most; a source
 * that closes main instead fails it at once) into chans[] and urgent.
 */
int incoming_accept_data(struct incoming *in, char *err, size_t errlen);

/*
 * Takes one resumed postcopy session from the gate (gate_take): main
 * (MAIN_RESUME, its RESUME proof checked on the gate's worker), then every data
 * connection and the urgent one. Connections that do not fit are closed.
 * A half-formed session (the source gave up on a resume) is dropped when a
 * new MAIN_RESUME comes or RESUME_SESSION_MS after its main. -errno only
 * when the gate stops. The control thread, with every receiver joined and
 * every chan closed.
 */
int incoming_accept_resume(struct incoming *in);

/*
 * Whether proof (len bytes) proves the source's decision d (enum
 * mig_decision: COMMIT, RELEASE, ABORT, RESUME) for this session and
 * attempt, bound to c (proof.h). Any thread.
 */
bool incoming_proof_ok(const struct incoming *in, const struct mig_chan *c, unsigned d,
		       uint32_t attempt, const void *proof, uint32_t len);

/*
 * The blackout starts / is over for this target (idempotent): see `boost`;
 * receivers: precopy's data receivers too, for their last pages.
 * The receiving thread (main), which also joins the receivers.
 */
void incoming_boost(struct incoming *in, bool receivers);
void incoming_unboost(struct incoming *in);
/*
 * In the blackout (boosted), the receiving thread's wait for the source's
 * next record on main: polls up to INCOMING_BLACKOUT_POLL_US, counted,
 * before the caller's blocking read. Nothing outside the blackout.
 */
#define INCOMING_BLACKOUT_POLL_US 2000
void incoming_blackout_wait(struct incoming *in);

/* A record on main, under main_wlock. */
int incoming_send_main(struct incoming *in, uint32_t type, const void *a, uint32_t alen,
		       const void *b, uint32_t blen);

/* What the gate took for a main connection; freed with gate_main_free(). */
struct gate_main {
	struct mig_chan chan; /* the source's main connection, secured */
	struct mig_hello hello;
	uint8_t *buf; /* the VM_DESC payload, which v points into */
	struct mig_vm_desc_view v;
	struct vm_config cfg; /* the stream's config with this host's local settings */
	int ram_fd;	      /* a local handover's guest RAM (RAM_FD), else -1 */
};

/*
 * What the gate does once the migration is received (gate_late_open): the
 * same accept, handshake deadline and eviction as before the VM, for the
 * connections that settle or resume it. Hooks run on a handshake worker
 * thread, several at once, and must not block past deadline_ns.
 */
struct gate_late {
	uint64_t session;
	bool resume; /* postcopy: main-resume, data and urgent connections are taken */
	/*
	 * A recover connection of this session, its hello read: the whole
	 * exchange. 0, or -errno with err set: the gate refuses it (reported).
	 */
	int (*recover)(void *opaque, struct mig_chan *c, uint64_t deadline_ns, char *err,
		       size_t errlen);
	/*
	 * A main-resume connection of this session, its hello read (attempt:
	 * the hello's): reads and checks its RESUME proof; the source
	 * resumes. 0 to take it, else -errno with err set (it is refused).
	 */
	int (*resumed)(void *opaque, struct mig_chan *c, uint32_t attempt, uint64_t deadline_ns,
		       char *err, size_t errlen);
	void *opaque;
};

/* A connection the gate hands over after gate_late_open, with its hello. */
struct gate_taken {
	struct mig_chan c;
	struct mig_hello h;
	uint64_t accepted_ns; /* taken in this order: a resume's main before its data */
	uint64_t expires_ns;  /* queued until then; 0: the slot is free */
};

/*
 * Starts the gate thread on lfd (not owned). hook->refused hears each
 * refusal. desc_host: the front end's keys a VM description may carry
 * (migration_host.desc; checked, dropped; NULL or keys NULL: none).
 */
int gate_start(struct gate **out, int lfd, struct tls_ctx *tls, const struct vm_config *local,
	       const struct config_layer *desc_host, const struct incoming_hook *hook, char *err,
	       size_t errlen);
/* Main: waits for the main connection; -ECANCELED once stopped. */
int gate_wait_main(struct gate *g, struct gate_main **out);
/*
 * Main, after gate_wait_main: waits up to timeout_ms for data[0..connections)
 * and urgent of that session and moves what came into data[] and *urgent
 * (the caller's to close, also on -ETIMEDOUT). -EPIPE as soon as the
 * source closes main_fd (its main connection, which the caller keeps
 * open meanwhile) before all came: it gave up.
 */
int gate_wait_data(struct gate *g, unsigned connections, uint64_t timeout_ms, int main_fd,
		   struct mig_chan *data, struct mig_chan *urgent, char *err, size_t errlen);
/*
 * Any thread: makes gate_wait_main / gate_wait_data return at once (a
 * cancel); the gate itself goes on until gate_stop().
 */
void gate_cancel(struct gate *g);
/*
 * The receiving thread, once the migration is received: from now on the
 * gate serves `lt` (recover exchanges on their workers; resume connections
 * queued for gate_take) and refuses the rest.
 */
void gate_late_open(struct gate *g, const struct gate_late *lt);
/*
 * Waits up to timeout_ms (0: until gate_cancel) for a queued late
 * connection of one of `roles` (MIG_CH() bits), which becomes the caller's:
 * the newest main-resume (older attempts are dead: closed, with every
 * connection accepted before it), else the first accepted, so an attempt's
 * connections come together in the order the source opened them. Queued
 * connections accepted before after_ns (before the caller's main) are
 * closed; data and urgent ones are taken only of resume `attempt` (their
 * hello index: MIG_HELLO_ATTEMPT), an older attempt's closed. 0,
 * -ETIMEDOUT or -ECANCELED. One taker at a time (the postcopy
 * control thread).
 */
int gate_take(struct gate *g, uint64_t timeout_ms, uint32_t roles, uint64_t after_ns,
	      uint32_t attempt, struct gate_taken *out);
/* Stops the gate: every pending connection closed, the threads joined; NULL is fine. */
void gate_stop(struct gate *g);

/*
 * gate_main.c, a handshake worker, after the hello of a main connection:
 * reads VM_DESC from c (desc_host's sections checked and dropped) and
 * builds its config with local's prealloc, seccomp and device bindings; a local handover's VM_DESC
 * (no data connection) must come over a UNIX socket, and its RAM_FD is read too (out->ram_fd). *out
 * is set before the first read and is the caller's to free with gate_main_free(), on an error too.
 */
int gate_read_main(struct mig_chan *c, const struct vm_config *local,
		   const struct config_layer *desc_host, struct gate_main **out, char *err,
		   size_t errlen);
void gate_main_free(struct gate_main *m);

/* main_recv.c: what the main connection delivers up to END. */
struct main_states {
	uint8_t *vm;
	uint32_t vm_len;
	uint8_t **vcpu;
	uint32_t *vcpu_len;
	struct mig_end end;
	uint64_t counts[MIG_CONNECTIONS_MAX]; /* PAGES records sent per data connection */
};

int main_states_init(struct main_states *st, unsigned nvcpus);
void main_states_free(struct main_states *st, unsigned nvcpus);
/* Reads the main connection until END (see main_recv.c); the main thread. */
int main_recv(struct incoming *in, struct main_states *st, char *err, size_t errlen);
/* The received blobs into the VM, in the machine's order (vm_load_whole()); the main thread. */
int main_load_state(struct incoming *in, struct main_states *st, char *err, size_t errlen);

/* ram_recv.c: the receivers. */
int recv_chan_init(struct recv_chan *rc, struct incoming *in, unsigned index);
void recv_chan_destroy(struct recv_chan *rc);
/* Starts rc's receiver thread; rc->started tells whether it runs. */
int recv_chan_start(struct recv_chan *rc);
/* Joins rc's thread if it runs (abort its chan first to make it end). */
/*
 * In the blackout (in->sw.polling), the receiving thread polls for rc's
 * thread to return, bounded like main's waits, rather than sleep in
 * pthread_join while it applies its last pages. Nothing outside it.
 */
void recv_chan_poll_done(struct recv_chan *rc);
void recv_chan_join(struct recv_chan *rc);

/*
 * formats.c: CAPS's formats block for a source of protocol minor
 * peer_minor (6.1), written to out (MIG_CAPS_MAX - MIG_CAPS_LEN bytes);
 * returns its length, 0 for a 6.0 source (it gets none). Main thread.
 */
uint32_t incoming_caps_formats(uint32_t peer_minor, uint8_t *out);

#endif /* VMM_MIGRATION_INCOMING_H */
