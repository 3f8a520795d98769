/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ram_send.h - the sender threads: one per data connection, each sending
 * the pending pages of its chunks of every memslot (see ram_send.c for the
 * clear-then-read order that makes this safe while the guest runs).
 *
 * ram_send_pass() is the send team's function (team_init in setup.c): it
 * runs on sender `worker` for one round, started by send_pass() on the
 * migration thread, and never overlaps a harvest. It reads the phase flags
 * of struct migration (blackout, first_pass, pc.active, pc.all_stale) as the
 * migration thread set them before the round, and in postcopy claims every
 * page (claim_page) before it goes out.
 */
#ifndef VMM_MIGRATION_SOURCE_RAM_SEND_H
#define VMM_MIGRATION_SOURCE_RAM_SEND_H

#include "session.h"

/* Event loop, in migration_start(): the zstd context and buffers of sender `index`. */
int ram_sender_init(struct ram_sender *s, struct migration *m, unsigned index);
/*
 * Frees the zstd context and the compressed-batch buffer; the connection
 * stays (the event loop may still abort it until the state is final). No
 * round running, and none after. Idempotent.
 */
void ram_sender_free_buffers(struct ram_sender *s);
/* Closes its connection and frees its buffers; no round running. Idempotent. */
void ram_sender_destroy(struct ram_sender *s);
/* Team function: sender `worker` sends the pending pages of its chunks, then SYNC. */
void ram_send_pass(void *arg, unsigned worker);

#endif /* VMM_MIGRATION_SOURCE_RAM_SEND_H */
