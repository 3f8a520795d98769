/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - the log of the long-running `vmm run` process on stderr: the
 * VM's start and end, migration events, refused peers, API server
 * warnings, the error that ends it. Client commands (`vmm migrate`,
 * `vmm status`, ...) and command-line or config errors before the [log]
 * settings are known print plain lines instead: they are a command's
 * answer, not a service's log.
 *
 * One record is one line, written with a single write(2), so records of
 * different threads never interleave. Two formats ([log] format):
 *
 *   text  2026-12-01T23:40:00.123Z info  vmm: dirty: migrated to 127.0.0.1:4444
 *         the time (RFC 3339, UTC, milliseconds) is always there, tty or not:
 *         a source's and a target's logs are read side by side, and a
 *         terminal today is a file tomorrow. Then the level padded to five
 *         columns, then the message as vmm always wrote it ("vmm: " and,
 *         for log_vm(), the VM's name), so greps keep working.
 *   json  {"ts":"2026-12-01T23:40:00.123Z","level":"info","vm":"dirty",
 *          "msg":"migrated to 127.0.0.1:4444"} on one line, for collectors;
 *         "vm" once the VM's name is known; "msg" without the "vmm: " and
 *         name prefixes.
 *
 * Messages are sanitized: a byte that is not valid UTF-8 becomes "\xNN";
 * in text, control characters become "\n", "\t", "\r" or "\xNN" (JSON
 * escapes them itself), so a peer's or a guest's string cannot forge a
 * record or break the line.
 *
 * Threads: log_msg()/log_vm() may be called from any thread (engine hook
 * callbacks run on engine threads) once log_init() returned; log_set_vm()
 * too. log_init() and log_destroy() on the main thread, while no other
 * thread logs. A NULL log means the defaults (text, info, stderr).
 */
#ifndef VMM_FRONTEND_LOG_H
#define VMM_FRONTEND_LOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"	     /* CONFIG_NAME_MAX */
#include "frontend_config.h" /* enum log_format, enum log_level */

/* A record longer than this is cut, ending with "..." (the line stays whole). */
#define LOG_RECORD_MAX 8192

/* All zero (a runtime no one set up, a test's) is a valid log: the defaults. */
struct vmm_log {
	bool ready; /* log_init() done; else the defaults are used */
	enum log_format format;
	enum log_level level;	  /* records less severe than this are dropped */
	int fd;			  /* STDERR_FILENO; a test's pipe */
	pthread_mutex_t lock;	  /* guards vm */
	char vm[CONFIG_NAME_MAX]; /* the VM's name, "" until known */
};

void log_init(struct vmm_log *log, enum log_format format, enum log_level level, int fd);
void log_destroy(struct vmm_log *log);

/* The VM's name from now on: known at the start of a boot, on a target once the stream says. */
void log_set_vm(struct vmm_log *log, const char *name);

/* True when a record of level `l` would be written. */
bool log_enabled(const struct vmm_log *log, enum log_level l);

/* A record about the process: text "vmm: <msg>". */
void log_msg(struct vmm_log *log, enum log_level l, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A record about the VM: text "vmm: <vm>: <msg>" (as log_msg() while the name is unknown). */
void log_vm(struct vmm_log *log, enum log_level l, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * The formatter, pure (for tests): one record, newline included, into buf
 * (at most len bytes, NUL-terminated). `realtime_ns` is CLOCK_REALTIME
 * in ns; `vm` NULL or "" when unknown; `vm_prefix` adds "<vm>: " to the
 * text form (log_vm()). Returns the length written (excluding the NUL).
 * len must be at least 64.
 */
size_t log_format_record(char *buf, size_t len, enum log_format format, enum log_level l,
			 uint64_t realtime_ns, const char *vm, bool vm_prefix, const char *msg);

/* RFC 3339 UTC with milliseconds, "2026-12-01T23:40:00.123Z", into buf (>= 25 bytes). */
void log_format_time(char *buf, size_t len, uint64_t realtime_ns);

#endif /* VMM_FRONTEND_LOG_H */
