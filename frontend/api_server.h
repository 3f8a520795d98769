/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_server.h - the control API: HTTP/1.1 + JSON on a Unix domain socket
 * (like Firecracker and Cloud Hypervisor), served by libevent's evhttp on
 * the VM's event loop. Endpoints, fields and status codes: docs/api.md.
 *
 * This file owns the socket and the HTTP server; the routes and handlers
 * are api_routes.h's. All functions are called from the thread that runs
 * the runtime's event base (the main thread of `vmm run`); request handlers
 * run there too and act on the runtime (runtime.h): the VM, its migrations,
 * its one policy.
 *
 * Access control: the socket file is created with mode 0600 in a directory
 * that is ours (created 0700 when missing; an existing one must be a real
 * directory, not a symlink, owned by our euid and not writable by group or
 * others), and every connection's SO_PEERCRED uid must be our euid or 0;
 * anyone else gets 403 and the connection is closed. The client checks the
 * server's uid the same way (api_client.h).
 *
 * Under fd exhaustion (accept() fails with EMFILE, ENFILE...) the server
 * stops accepting for a back-off interval instead of spinning, and prints
 * one line to stderr per second at most; waiting connections are served
 * once accept() works again.
 */
#ifndef VMM_API_SERVER_H
#define VMM_API_SERVER_H

#include <stdbool.h>
#include <stddef.h>

struct api_server;
struct runtime;

#define API_MAX_BODY		  (64 * 1024)	/* request bodies larger than this get a JSON 413 */
#define API_MAX_BODY_HARD	  (1024 * 1024) /* evhttp's own limit (its 413 is an HTML page) */
#define API_MAX_HEADERS		  (8 * 1024)	/* request line + headers */
#define API_IO_TIMEOUT_S	  30		/* idle connections are closed after this */
#define API_ACCEPT_BACKOFF_MIN_MS 100		/* first pause after a failed accept() */
#define API_ACCEPT_BACKOFF_MAX_MS 1000		/* the pause doubles up to this */

/*
 * Creates the socket at `path` (mode 0600; a missing parent directory is
 * created 0700), binds, listens and serves on `base`. A parent directory
 * that is a symlink, another uid's, or writable by group/others is refused
 * (-ELOOP, -ENOTDIR, -EPERM) with a message naming it. A stale socket file
 * (nobody accepts on it) is replaced; a live one is an error (-EADDRINUSE).
 * Returns 0 or -errno with the message in err.
 */
int api_server_start(struct api_server **out, struct runtime *rt, const char *path, char *err,
		     size_t errlen);

/*
 * Moves the socket to `new_path` atomically with rename(2), e.g. a
 * migration target that served on "<name>.incoming.sock" takes over
 * "<name>.sock" once the source has exited. Existing connections are
 * unaffected. Returns 0 or -errno with the message in err.
 */
int api_server_rename(struct api_server *s, const char *new_path, char *err, size_t errlen);

/*
 * A migrated-away source asks before it exits (run_loop.c): *open is the
 * number of event streams still open; true once none is and one of them
 * delivered the final "completed" line (api_events.h).
 */
bool api_server_events_settled(const struct api_server *s, unsigned *open);

/*
 * A process about to exit asks, once per check: true while a request sent
 * before may still be unanswered: a connection waits in the socket's
 * backlog, one was accepted since the last call (its request is read
 * next), or a reply is not written yet (struct api_routes, `replying`).
 * NULL: false.
 */
bool api_server_busy(struct api_server *s);

/* The path the server currently listens on. */
const char *api_server_path(const struct api_server *s);

/*
 * Stops serving and frees s (NULL is fine). Unlinks the socket file only
 * if it is still ours (same st_dev/st_ino as at bind): after a local
 * migration the target may already own that path.
 */
void api_server_stop(struct api_server *s);

/*
 * The default socket path for a VM name: "<dir>/<name>.sock" where dir is
 * $VMM_RUN_DIR if set, else /run/vmm when running as root, else
 * $XDG_RUNTIME_DIR/vmm, else /tmp/vmm-<uid>. Returns 0, -EINVAL (empty
 * name or one with '/') or -ENAMETOOLONG (does not fit len or sun_path).
 * (Defined in api_client.c, so that the CLI links without the server.)
 */
int api_default_socket_path(const char *name, char *buf, size_t len);

#endif /* VMM_API_SERVER_H */
