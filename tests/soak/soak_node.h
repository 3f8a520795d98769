/* SPDX-License-Identifier: Apache-2.0 */
/*
 * soak_node.h - the soak's two "hosts" and the vmm processes on them.
 *
 * A host is what a second machine would be: its own migration port, its
 * own run directory (VMM_RUN_DIR, so each host's API socket is
 * RUN_DIR/NAME.sock and the two never collide) and its own TLS
 * certificate. A node is one `vmm run` process on a host: the VM booted
 * there, or a target (`vmm run --incoming`) that received it. Its console
 * and its stderr go to files in the work dir (kept for the post-mortem)
 * and are read as they grow (hx_console over a file).
 *
 * Functions return 0 or -errno with a message in (err, errlen).
 */
#ifndef VMM_SOAK_NODE_H
#define VMM_SOAK_NODE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "harness_console.h"
#include "harness_proc.h"

struct soak_host {
	char label[4]; /* "A", "B" */
	int port;      /* its migration port on 127.0.0.1 */
	char run_dir[PATH_MAX];
	char tls_cert[PATH_MAX], tls_key[PATH_MAX], tls_ca[PATH_MAX];
};

/* What a process holds, from /proc/PID. */
struct soak_counts {
	long fds;     /* entries of /proc/PID/fd */
	long threads; /* Threads: of /proc/PID/status */
	long rss_kb;  /* VmRSS: of /proc/PID/status */
};

struct soak_node {
	const struct soak_host *host;
	struct hx_proc proc;
	struct hx_console out, err; /* the guest's console (stdout), stderr */
	char out_path[PATH_MAX], err_path[PATH_MAX];
	bool digest; /* started with VMM_TEST_DIGEST=1 */
};

/* Settings every node of a soak shares. */
struct soak_env {
	const char *vmm;  /* the vmm binary */
	const char *dir;  /* the work dir: STEM.out, STEM.err */
	const char *name; /* vm.name */
	bool digest;	  /* the memory digest check on precopy hops (VMM_TEST_DIGEST) */
};

/*
 * Starts `vmm run ARGS --set migration.tls_*=HOST'S FILES` on host h, as
 * `stem` (files DIR/STEM.out, DIR/STEM.err), with VMM_RUN_DIR set to the
 * host's run dir. ARGS is what follows `run`: a config file and --set
 * options to boot, or `--incoming 127.0.0.1:PORT` for a target.
 *
 * digest: with VMM_TEST_DIGEST=1, for a node whose next migration out is
 * precopy. The hook is read once at start and acts when the node is a
 * source: it then puts a digest of all guest RAM in END, which the target
 * checks whatever its own environment. It must stay off on the source of a
 * postcopy hop: the source also sends the digest there, and the target,
 * reading all of guest RAM before its vCPUs run, blocks on the first page
 * it lacks while the source waits for its acknowledgement (see
 * docs/soak.md).
 */
int soak_node_start(struct soak_node *n, const struct soak_env *e, const struct soak_host *h,
		    const char *stem, char *const *args, bool digest, char *err, size_t errlen);

/* The node listens on its host's port within timeout_ms (a target, before any source). */
int soak_node_wait_listen(struct soak_node *n, int timeout_ms, char *err, size_t errlen);

/*
 * The node serves the VM's API at its host's RUN_DIR/NAME.sock and no
 * longer at NAME.sock.incoming (a target that took the VM over), within
 * timeout_ms. A node that exits first is -ESRCH.
 */
int soak_node_wait_socket(struct soak_node *n, const char *name, int timeout_ms, char *err,
			  size_t errlen);

/* Reads the node's console and stderr files as far as they are written now. */
void soak_node_pump(struct soak_node *n);

/* True while the process runs (reaps it once it has exited). */
bool soak_node_running(struct soak_node *n);

/* /proc counts of pid: 0, or -errno (the process is gone). */
int soak_counts_read(pid_t pid, struct soak_counts *c);

/*
 * The node's counts once they hold still: two reads 300 ms apart that agree
 * on fds and threads (a status client or a closing connection comes and
 * goes), tried for at most timeout_ms; then the last read, with *stable
 * saying whether two agreed.
 */
int soak_node_counts(struct soak_node *n, int timeout_ms, struct soak_counts *c, bool *stable,
		     char *err, size_t errlen);

/*
 * SIGTERMs the node if it runs, SIGKILLs it after timeout_ms, reaps it and
 * closes its files. A zeroed node is left alone.
 */
void soak_node_stop(struct soak_node *n, int timeout_ms);

/* Closes the files of a node that has been reaped (or never started). */
void soak_node_close(struct soak_node *n);

#endif /* VMM_SOAK_NODE_H */
