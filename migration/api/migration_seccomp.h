/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migration_seccomp.h - the engine's part of the seccomp policy
 * (vmm/util/seccomp_policy.h): the kinds of the threads the engine runs,
 * each installed at its thread's start, and what the engine does on the
 * front end's main thread. The front end gathers them into the process's
 * policy (frontend/frontend_seccomp.h); the lists are written in
 * migration/dirty/migration_seccomp.c (vmm_dirty: the lowest engine
 * library, which the source, the target and persist all link).
 */
#ifndef VMM_MIGRATION_SECCOMP_H
#define VMM_MIGRATION_SECCOMP_H

#include "seccomp_policy.h"

/* The source. */
extern const struct seccomp_kind seccomp_kind_migration; /* the migration thread */
extern const struct seccomp_kind seccomp_kind_urgent;	 /* postcopy page requests */
extern const struct seccomp_kind seccomp_kind_harvest;	 /* dirty-log workers (also a snapshot's) */
extern const struct seccomp_kind seccomp_kind_send;	 /* page-data sender workers */
/* The target. */
extern const struct seccomp_kind seccomp_kind_gate;	 /* the listener */
extern const struct seccomp_kind seccomp_kind_handshake; /* per-connection TLS and hello */
extern const struct seccomp_kind seccomp_kind_receive;	 /* page-data receivers */
extern const struct seccomp_kind seccomp_kind_fault;	 /* the userfaultfd reader */
extern const struct seccomp_kind seccomp_kind_drop;	 /* postcopy pusher of received pages */
extern const struct seccomp_kind seccomp_kind_control;	 /* postcopy control, the settle thread */
/* Snapshots: the snapshot thread, its page workers, a restore's, a lazy restore's. */
extern const struct seccomp_kind seccomp_kind_snapshot;

#define SECCOMP_THREAD_MIGRATION (&seccomp_kind_migration)
#define SECCOMP_THREAD_URGENT	 (&seccomp_kind_urgent)
#define SECCOMP_THREAD_HARVEST	 (&seccomp_kind_harvest)
#define SECCOMP_THREAD_SEND	 (&seccomp_kind_send)
#define SECCOMP_THREAD_GATE	 (&seccomp_kind_gate)
#define SECCOMP_THREAD_HANDSHAKE (&seccomp_kind_handshake)
#define SECCOMP_THREAD_RECEIVE	 (&seccomp_kind_receive)
#define SECCOMP_THREAD_FAULT	 (&seccomp_kind_fault)
#define SECCOMP_THREAD_DROP	 (&seccomp_kind_drop)
#define SECCOMP_THREAD_CONTROL	 (&seccomp_kind_control)
#define SECCOMP_THREAD_SNAPSHOT	 (&seccomp_kind_snapshot)

/*
 * Not a kind of thread: what the engine does on the front end's main
 * thread (a target's userfaultfd opened when it answers VM_DESC, a
 * migration or snapshot set up), for main's `with`.
 */
extern const struct seccomp_kind seccomp_part_engine_main;

#endif /* VMM_MIGRATION_SECCOMP_H */
