/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h - the VM description: INI file + `--set section.key=value`.
 *
 * Parsed with libinih. Every key and its default is documented in
 * docs/config.md. All functions are pure (no I/O except reading the file
 * and checking that the firmware exists), so a test can hold many configs.
 * Errors are written to `err` as one line that names the file (or
 * "--set"), the line when there is one, and the section.key, e.g.
 *   demo.cfg:3: [vm] memory: bad size '12Q' (use a number with K/M/G/T)
 * and the functions return -EINVAL (the CLI maps that to exit status 2).
 */
#ifndef VMM_CONFIG_H
#define VMM_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_MAX_VCPUS 64u
#define CONFIG_NAME_MAX 64
#define CONFIG_CMDLINE_MAX 2048
#define CONFIG_ERR_MAX 512

enum mem_backend {
	MEM_BACKEND_ANON,  /* MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE (default) */
	MEM_BACKEND_MEMFD, /* memfd_create + MAP_SHARED */
};

/* [vm] cpu_vendor: the vendor string the guest's CPUID reports (docs/config.md). */
enum cpu_vendor {
	CPU_VENDOR_HOST,  /* this host's (default); the VM description carries the resolved one */
	CPU_VENDOR_INTEL, /* "GenuineIntel" */
	CPU_VENDOR_AMD,	  /* "AuthenticAMD" */
};

enum workload_kind {
	WORKLOAD_HELLO,
	WORKLOAD_IDLE,
	WORKLOAD_DIRTY,
	WORKLOAD_ECHO, /* echoes console input line by line until "quit" */
};

/* [console] input: where COM1's input comes from. */
enum console_input_mode {
	CONSOLE_INPUT_AUTO,  /* stdin, unless it is closed or /dev/null (default) */
	CONSOLE_INPUT_STDIN, /* stdin, whatever it is */
	CONSOLE_INPUT_NONE,  /* no input: the guest reads nothing */
};

/* Where a key's value came from, for error messages. */
struct config_origin {
	char file[PATH_MAX]; /* config file path, "--set", or "default" */
	int line;            /* 0 when there is no line */
};

struct vm_config {
	/* [vm] */
	char name[CONFIG_NAME_MAX]; /* [A-Za-z0-9_.-]+, default "vmm" */
	uint64_t memory;            /* bytes, default 256M, multiple of 4096 */
	unsigned vcpus;             /* 1..CONFIG_MAX_VCPUS, default 1 */
	uint64_t memslot_size;      /* bytes, default 512M, multiple of 2M */
	enum mem_backend backend;   /* key "memory_backend": anonymous | memfd */
	uint64_t tsc_khz; /* guest TSC kHz, 0 = this host's; vm_create stores the effective one */
	enum cpu_vendor cpu_vendor; /* key "cpu_vendor": host | intel | amd */

	/* [firmware] */
	char firmware_path[PATH_MAX]; /* default: VMM_DEFAULT_FIRMWARE */
	char cmdline[CONFIG_CMDLINE_MAX];
	char initrd_path[PATH_MAX]; /* key "initrd": PVH module 0; "" = none (default) */

	/* [workload] */
	enum workload_kind workload; /* key "kind" */
	uint64_t working_set;        /* bytes, default 64M, multiple of 4096 */
	uint64_t dirty_rate;         /* pages/s for the whole VM, 0 = max */
	uint64_t passes;             /* 0 = forever */
	uint64_t heartbeat_ms;       /* key "heartbeat_ms", default 1000 */

	/* [console] */
	char console_output[PATH_MAX]; /* "stdout" or a file path */
	enum console_input_mode console_input; /* key "input": auto | stdin | none */

	/* [api] */
	char api_socket[PATH_MAX]; /* "" = default /run/vmm/<name>.sock (or $XDG_RUNTIME_DIR) */

	/* [migration]: TLS on every migration connection when set (all three) */
	char tls_cert[PATH_MAX]; /* this host's certificate chain, PEM */
	char tls_key[PATH_MAX];  /* its private key, PEM */
	char tls_ca[PATH_MAX];   /* CA certificates that sign the peer's, PEM */

	/* [sandbox]: this host's choice, not part of what travels */
	bool seccomp; /* key "seccomp" = on | off, default on: filters per thread kind */

	/* origins, for errors raised by config_validate() */
	struct config_origin firmware_origin;
	struct config_origin initrd_origin;
	struct config_origin memory_origin;
	struct config_origin working_set_origin;
};

/* Fills every field with its documented default. */
void config_defaults(struct vm_config *cfg);

/* Reads an INI file on top of the current values. */
int config_load_file(struct vm_config *cfg, const char *path, char *err, size_t errlen);

/* Same, from a string; `origin` names it in errors (e.g. "migration stream"). */
int config_load_string(struct vm_config *cfg, const char *ini, const char *origin, char *err,
		       size_t errlen);

/* Applies one "section.key=value" override (from --set). */
int config_set(struct vm_config *cfg, const char *assignment, char *err, size_t errlen);

/*
 * Checks what single keys cannot: the working set fits in memory, the
 * firmware file (and the initrd, when set) exists, is readable and (the
 * initrd) not empty. Call once after all overrides; a migration target
 * does not: it never reads either file.
 */
int config_validate(const struct vm_config *cfg, char *err, size_t errlen);

/*
 * Writes the config back as INI text that config_load_string() accepts
 * (used to describe the VM in the migration stream). Returns the length
 * written (excluding NUL) or -ENOSPC.
 */
int config_format(const struct vm_config *cfg, char *buf, size_t buflen);

const char *workload_kind_name(enum workload_kind k);
const char *mem_backend_name(enum mem_backend b);
const char *cpu_vendor_name(enum cpu_vendor v);
const char *console_input_name(enum console_input_mode m);

#endif /* VMM_CONFIG_H */
