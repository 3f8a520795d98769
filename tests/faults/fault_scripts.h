/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fault_scripts.h - the record, trickle and valid-hello faults' helper processes
 * (fault_scripts.c): tests/integration/recproxy.py between source and
 * target, tests/integration/flood.py on the target's port. The cell's
 * thread; the processes land in x->proxy and x->flood[], which the cell's
 * finish reaps. 0 or -errno with err set.
 */
#ifndef VMM_FAULTS_SCRIPTS_H
#define VMM_FAULTS_SCRIPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "fault_observe.h"

/*
 * recproxy.py on a free port in front of the target on `port`, dropping
 * the cell's record with its link; x->to becomes the proxy's address.
 */
int fx_start_proxy(struct fx_ctx *x, int port, char *err, size_t errlen);
/*
 * `trickling` connections sending a byte of a hello a second and `idle` ones
 * sending nothing, on port, each reconnecting when the target drops it
 * (0 and 0 start the scripts with no connections: a baseline's CPU cost).
 * Returns once the trickling ones are all open (bounded).
 */
int fx_start_flood(struct fx_ctx *x, int port, int trickling, int idle, char *err, size_t errlen);
/*
 * The trickle fault's connections: fx_start_flood() with env->flood of
 * each kind (when set) or the given numbers, then 3 s for them to fill
 * the port's handshake slots and evict each other before anything else.
 */
int fx_trickle(struct fx_ctx *x, int port, int trickling, int idle, char *err, size_t errlen);
/* The session id of every valid-hello cell's migration (VMM_TEST_SESSION), in hex. */
#define FX_SESSION     "5e551015e5510150"
#define FX_SESSION_ENV "VMM_TEST_SESSION=" FX_SESSION
/*
 * The valid-hello fault's connections on port (env->flood of them, or 64),
 * each sending a valid hello and then nothing, reconnecting when the
 * target drops them (flood.py --hello): before a fresh migration half main
 * and half data, of random sessions; after a switchover this migration's
 * recover hellos (FX_SESSION, as one reading the wire learns it); in
 * postcopy half main-resume, half data of it. Returns once they are all
 * open at the same time and have had 3 s to fill the port (bounded).
 */
int fx_start_valid_hello(struct fx_ctx *x, int port, char *err, size_t errlen);
/* The proxy printed that it dropped the record. */
bool fx_proxy_dropped(struct fx_ctx *x);

#endif /* VMM_FAULTS_SCRIPTS_H */
