/* SPDX-License-Identifier: Apache-2.0 */
/*
 * harness_net.h - TCP ports for the migration harness: a free loopback port
 * for a target to listen on, and waiting until a target does listen,
 * without connecting to it (a connection would be taken for a source).
 */
#ifndef VMM_HARNESS_NET_H
#define VMM_HARNESS_NET_H

#include <stdbool.h>
#include <stddef.h>

#include "harness_proc.h"

/* A TCP port nothing listens on now (the kernel's pick for 127.0.0.1:0), or -errno. */
int hx_free_port(void);

/*
 * True when a socket listens on TCP `port` now. With a process p, the socket
 * must be one of p's own, looked up in p's network namespace
 * (/proc/PID/net/tcp and /proc/PID/fd), so a target in another namespace is
 * found and a stranger on the same port is not taken for it. With p NULL,
 * any listener in the harness's namespace counts.
 */
bool hx_listening(struct hx_proc *p, int port);

/*
 * Waits up to timeout_ms until hx_listening(p, port): 0, -ETIMEDOUT, or
 * -ESRCH when p exited first; a message in err.
 */
int hx_wait_listen(struct hx_proc *p, int port, int timeout_ms, char *err, size_t errlen);

#endif /* VMM_HARNESS_NET_H */
