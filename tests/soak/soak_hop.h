/* SPDX-License-Identifier: Apache-2.0 */
/*
 * soak_hop.h - one hop of the soak: the VM moves from the node running it
 * to a fresh target on the other host, and every check of that hop.
 *
 *   1. start `vmm run --incoming 127.0.0.1:PORT` on the other host, wait
 *      until it listens;
 *   2. `vmm migrate --to 127.0.0.1:PORT --vm NAME --mode MODE --json` (with
 *      the source host's VMM_RUN_DIR): exit 0, summary state completed,
 *      mode_used MODE;
 *   3. the source exits 0;
 *   4. the target serves the VM's API at its host's NAME.sock;
 *   5. the guest's own verification goes on there: `beats` more "dirty pass
 *      N ok" lines on the target's console, the first one's N above the
 *      last the source printed (the guest went on, it did not restart);
 *      no CORRUPTION line on either console; for precopy with the digest
 *      hook, the target's stderr says the memory digest matches;
 *   6. exactly one vmm process of this soak runs a VM: the target (found
 *      by scanning /proc, not by trusting our own bookkeeping);
 *   7. the target's fd, thread and RSS counts, once settled.
 *
 * Every wait is for an event with a generous bound (a loaded 2-core host).
 */
#ifndef VMM_SOAK_HOP_H
#define VMM_SOAK_HOP_H

#include <stdbool.h>

#include "soak_node.h"
#include "soak_report.h"

struct soak {
	struct soak_env env;
	struct soak_host hosts[2];
	struct soak_node nodes[2]; /* nodes[i] runs on hosts[i] */
	int cur;		   /* the node running the guest */
	int beats;		   /* heartbeat lines to wait for on the new side */
	int timeout_ms;		   /* the bound of every wait for the guest or a process */
	int migrate_timeout_ms;	   /* for `vmm migrate` */
	const char *run_prefix;	   /* "VMM_RUN_DIR=" + the run dirs' common prefix */
};

/* The regex of the dirty guest's heartbeat line (its pass number in group 1). */
#define SOAK_BEAT "dirty pass ([0-9]+) ok"

/*
 * The number of the last heartbeat line of c at index >= from (-1: none),
 * and in *count how many there are.
 */
long soak_last_pass(const struct hx_console *c, size_t from, size_t *count);

/*
 * The vmm processes of this soak that run now (`vmm run` with a VMM_RUN_DIR
 * of ours): their number, and the first one's pid in *pid.
 */
int soak_count_vmms(const struct soak *s, pid_t *pid);

/*
 * Hop number `hop` (1-based) from nodes[s->cur] to a new node on the other
 * host, in postcopy or precopy mode (next_postcopy: the mode of the hop
 * after, which decides the new node's digest hook); fills row. 0 when every check held: s->cur is
 * then the new node. On a failure, row->why says which check and where the logs are; the nodes are
 * left as they are (see soak_hop_recover).
 */
int soak_hop(struct soak *s, int hop, bool postcopy, bool next_postcopy, struct soak_row *row);

/*
 * After a failed hop: when exactly one node still runs and its guest
 * prints a heartbeat, stops the other, makes it s->cur and returns 0 (the
 * soak may go on from there); else -1.
 */
int soak_hop_recover(struct soak *s);

#endif /* VMM_SOAK_HOP_H */
