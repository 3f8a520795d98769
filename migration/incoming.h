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
	uint64_t pages;
	bool ended;           /* CHANNEL_END seen */
	uint64_t end_records; /* what CHANNEL_END announced */
	uint64_t synced;      /* last SYNC applied */
	void *dctx;           /* ZSTD_DCtx */
	uint8_t *buf;         /* received (compressed) data */
	uint8_t *pages_buf;   /* decompressed pages */
};

struct incoming {
	struct vm *vm;
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
	uint64_t receive_ms;
	uint64_t restore_us;
	uint64_t end_ns;    /* END received */
	uint64_t joined_ns; /* every data connection finished */
	uint64_t returned_ns;
};

/* ram_recv.c */
void *ram_recv_thread(void *arg);
int recv_chan_init(struct recv_chan *rc, struct incoming *in, unsigned index);
void recv_chan_destroy(struct recv_chan *rc);

#endif /* VMM_MIGRATION_INCOMING_H */
