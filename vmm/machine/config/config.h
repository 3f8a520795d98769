/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h - the VM description: INI file + `--set section.key=value`.
 *
 * Parsed with libinih. Every key and its default is documented in
 * docs/config.md. The file's host sections that only the front end reads
 * ([console], [api], [log], [migration] tls_*) are not the machine's: the
 * front end reads them from the same text through a struct config_layer
 * (config_layer.h), the *_with() functions below. All functions are pure (no I/O except reading the
 * file and checking that the firmware exists), so a test can hold many configs. Errors are written
 * to `err` as one line that names the file (or
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

#include "config_layer.h"

#define CONFIG_MAX_VCPUS   64u
#define CONFIG_NAME_MAX	   64
#define CONFIG_CMDLINE_MAX 2048
/* [vm] cpu_features: every name of cpu_features.c, comma-separated, fits */
#define CONFIG_CPU_FEATURES_MAX 2048
#define CONFIG_ERR_MAX		512
#define CONFIG_TAP_MAX		16 /* IFNAMSIZ: a tap name has at most 15 characters */
#define CONFIG_MAC_MAX		18 /* "52:54:00:12:34:56" */
/* [migration] allow_taps: room for a few dozen names or patterns */
#define CONFIG_ALLOW_TAPS_MAX 512

/*
 * Input caps on a config file, so that a path naming something else (a
 * disk image, a log, /dev/zero) fails at once with one line instead of
 * being read into memory whole. A real config never comes near them: the
 * largest config_format() can write, every path at PATH_MAX, is about
 * 32 KiB, and its longest line is a key with a PATH_MAX - 1 byte value.
 * docs/config.md ("Limits") quotes both.
 */
#define CONFIG_FILE_MAX (1 << 20) /* bytes in a config file: 1 MiB */
#define CONFIG_LINE_MAX 8192	  /* bytes in a line, without its newline: 2 * PATH_MAX */

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
	WORKLOAD_ECHO,	/* echoes console input line by line until "quit" */
	WORKLOAD_FAULT, /* a CPU exception on purpose: the firmware must report it */
	WORKLOAD_BLK,	/* writes and verifies a pattern on the virtio-blk disk ([disk]) */
	WORKLOAD_NET,	/* answers ARP and ICMP echo on the virtio-net device ([net]) */
};

/* [workload] fill: what the working set holds at boot (vmm_abi.h vmm,fill). */
enum workload_fill {
	WORKLOAD_FILL_ZERO,   /* untouched anonymous memory (default) */
	WORKLOAD_FILL_RANDOM, /* vmm_fill_word() of every word's gpa: pages do not compress */
};

/* [workload] order: the order the dirty workload visits pages in a pass. */
enum workload_order {
	WORKLOAD_ORDER_SEQ,    /* ascending (default) */
	WORKLOAD_ORDER_RANDOM, /* a different permutation every pass */
};

/* Where a key's value came from, for error messages. */
struct config_origin {
	char file[PATH_MAX]; /* config file path, "--set", or "default" */
	int line;	     /* 0 when there is no line */
};

struct vm_config {
	/* [vm] */
	char name[CONFIG_NAME_MAX]; /* [A-Za-z0-9_.-]+, default "vmm" */
	uint64_t memory;	    /* bytes, default 256M, multiple of 4096 */
	unsigned vcpus;		    /* 1..CONFIG_MAX_VCPUS, default 1 */
	uint64_t memslot_size;	    /* bytes, default 512M, multiple of 2M */
	enum mem_backend backend;   /* key "memory_backend": anonymous | memfd */
	bool prealloc;		    /* key "prealloc": all RAM resident before the guest runs */
	uint64_t tsc_khz; /* guest TSC kHz, 0 = this host's; vm_create stores the effective one */
	enum cpu_vendor cpu_vendor; /* key "cpu_vendor": host | intel | amd */
	/*
	 * Key "cpu_features": the named CPUID features the guest gets
	 * (cpu_features.h), comma-separated; "" = this host's, which vm_create
	 * stores back, so that a migration or snapshot carries them.
	 */
	char cpu_features[CONFIG_CPU_FEATURES_MAX];

	/* [firmware] */
	char firmware_path[PATH_MAX]; /* "" = the default, config_default_firmware() */
	char cmdline[CONFIG_CMDLINE_MAX];
	char initrd_path[PATH_MAX]; /* key "initrd": PVH module 0; "" = none (default) */

	/* [workload] */
	enum workload_kind workload; /* key "kind" */
	uint64_t working_set;	     /* bytes, default 64M, multiple of 4096 */
	uint64_t dirty_rate;	     /* pages/s for the whole VM, 0 = max */
	uint64_t passes;	     /* 0 = forever */
	uint64_t min_pass_ms;	     /* a pass lasts at least this long; 0 = no floor */
	uint64_t heartbeat_ms;	     /* key "heartbeat_ms", default 1000 */
	uint64_t catch_up_ms;	     /* key "catch_up_ms", default 100: lag the pace makes up */
	uint64_t work_ms;	     /* key "work_ms", 0 = off: a line with the pages written */
	enum workload_fill fill;     /* key "fill": zero | random */
	enum workload_order order;   /* key "order": seq | random */
	bool latency;		     /* key "latency": true | false, one latency line a pass */

	/*
	 * [migration] on a target: which of a migrating VM's own backends this
	 * host lets it keep (config_bind_devices()). Host-local, never sent.
	 */
	char allow_disk_dirs[PATH_MAX];		/* absolute directories, comma-separated */
	char allow_taps[CONFIG_ALLOW_TAPS_MAX]; /* tap names or fnmatch(3) patterns, comma-separated
						 */

	/*
	 * [disk]: one virtio-blk device on a file or block device when path is
	 * set. The path is host-local (a target or a restore may name its own
	 * with --set disk.path: shared storage is the user's, not migrated);
	 * readonly is guest-visible and travels.
	 */
	char disk_path[PATH_MAX];
	bool disk_readonly;
	/*
	 * Not a key: set by config_bind_devices() when [migration]
	 * allow_disk_dirs bound a migrating VM's own disk_path, to the allowed
	 * directory it lies under; the disk is then opened below that
	 * directory without following a symbolic link. Never written back.
	 */
	char disk_beneath[PATH_MAX];
	/*
	 * [net]: one virtio-net device on a tap when tap is set. The tap's name
	 * is host-local like disk.path; the MAC is the guest's and travels
	 * ("" = derived from the VM's name, virtio_net_default_mac()).
	 */
	char net_tap[CONFIG_TAP_MAX];
	char net_mac[CONFIG_MAC_MAX];

	/* [sandbox]: this host's choice, not part of what travels */
	bool seccomp; /* key "seccomp" = on | off, default on: filters per thread kind */

	/*
	 * [snapshot] track_dirty: after each snapshot, dirty logging stays on so
	 * that the next `vmm snapshot --diff` writes only the pages written
	 * since. Host-local (not in the VM description). Default false.
	 */
	bool snapshot_track_dirty;
	/*
	 * [snapshot] direct_io: the memory file is written with O_DIRECT, so a
	 * snapshot does not fill the page cache. Host-local. Default false.
	 */
	bool snapshot_direct_io;

	/* origins, for errors raised by config_validate() */
	struct config_origin firmware_origin;
	struct config_origin initrd_origin;
	struct config_origin memory_origin;
	struct config_origin working_set_origin;
};

/* Fills every field with its documented default. */
void config_defaults(struct vm_config *cfg);

/*
 * Reads an INI file on top of the current values. The file must be a
 * regular file of at most CONFIG_FILE_MAX bytes (else -EFBIG, -EINVAL for
 * a FIFO or device, -EISDIR), each line at most CONFIG_LINE_MAX and free
 * of NUL bytes (else -EINVAL at that line, naming the key); "<file>:
 * cannot read config: ..." in err.
 */
int config_load_file(struct vm_config *cfg, const char *path, char *err, size_t errlen);

/*
 * Same, from a string; `origin` names it in errors (e.g. "migration
 * stream"). Lines are capped at CONFIG_LINE_MAX too; the string's length is
 * the caller's to bound.
 */
int config_load_string(struct vm_config *cfg, const char *ini, const char *origin, char *err,
		       size_t errlen);
/*
 * Same, from len bytes at text (no terminating NUL needed): a NUL byte
 * among them is refused like in a file, not taken for the end (a peer's
 * config text, which could otherwise hide the rest of a value).
 */
int config_load_text(struct vm_config *cfg, const char *text, size_t len, const char *origin,
		     char *err, size_t errlen);

/* Applies one "section.key=value" override (from --set). */
int config_set(struct vm_config *cfg, const char *assignment, char *err, size_t errlen);

/*
 * The same three, with the keys of a layer above (config_layer.h; NULL:
 * none, as above) read from the same text: its sections are known, a
 * section both name ([migration]) takes the keys of both, and an error
 * lists every section and key of both. A load changes neither cfg nor the
 * layer's struct unless the whole text was good.
 */
int config_load_file_with(struct vm_config *cfg, const struct config_layer *host, const char *path,
			  char *err, size_t errlen);
int config_load_text_with(struct vm_config *cfg, const struct config_layer *host, const char *text,
			  size_t len, const char *origin, char *err, size_t errlen);
int config_set_with(struct vm_config *cfg, const struct config_layer *host, const char *assignment,
		    char *err, size_t errlen);

/*
 * Fills an unset [firmware] path with the default firmware: the first
 * readable file of <dir of /proc/self/exe>/../share/vmm/vmm-firmware.elf
 * (an installed vmm) and the build tree's firmware (a developer's build,
 * unless the build turned that off). Call on the main thread before
 * config_validate(), not under seccomp (readlink, stat). -ENOENT with an
 * error naming every path tried when neither exists.
 */
int config_default_firmware(struct vm_config *cfg, char *err, size_t errlen);

/*
 * The search itself, for tests: `exe` is the binary's absolute path (NULL
 * or "" when unknown), `from_bin` the firmware relative to its directory,
 * `build_path` the fallback ("" for none). Fills `out` with the first
 * usable candidate.
 */
int firmware_find(const char *exe, const char *from_bin, const char *build_path, char *out,
		  size_t outlen, char *err, size_t errlen);

/*
 * Checks what single keys cannot: the working set fits in memory, the
 * firmware file (and the initrd, when set) exists, is readable and (the
 * initrd) not empty. Call once after all overrides; a migration target
 * does not: it never reads either file.
 */
int config_validate(const struct vm_config *cfg, char *err, size_t errlen);

/*
 * A MAC address "xx:xx:xx:xx:xx:xx" (hex, either case) into its six bytes:
 * 0, -EINVAL when it is not that form, -EADDRNOTAVAIL for a multicast one.
 * The one parser of [net] mac: the config reader checks with it, the
 * network device takes its bytes from it.
 */
int config_mac_parse(const char *text, uint8_t mac[6]);

/*
 * A migration target's devices. `vm` is the config a migration stream
 * brought: it says which devices the guest has ([disk], [net]) and the
 * backends the source used, which name files and taps on the source's
 * host (another host, or another mount or network namespace), so none is
 * used on its word. Only this host's config `local` binds each device:
 *   - its own [disk] path / [net] tap (`--set disk.path=`, `net.tap=`, or
 *     the target's CONFIG) replaces the stream's;
 *   - else the stream's own path is kept when it is absolute, has no "."
 *     or ".." component and lies under a directory of local's
 *     [migration] allow_disk_dirs (vm->disk_beneath then names that
 *     directory, and the disk is opened below it without following a
 *     symbolic link); the stream's tap is kept when it matches a pattern
 *     of [migration] allow_taps;
 *   - else the device is refused: -EPERM with one line in err that names
 *     the device, the source's backend and the options that bind it.
 * A device the VM does not have is not created, whatever local says. Pure
 * (strings only): any thread, on configs it owns.
 */
int config_bind_devices(struct vm_config *vm, const struct vm_config *local, char *err,
			size_t errlen);

/*
 * Writes the config back as INI text that config_load_string() accepts
 * (used to describe the VM in the migration stream). Returns the length
 * written (excluding NUL) or -ENOSPC.
 */
int config_format(const struct vm_config *cfg, char *buf, size_t buflen);
/*
 * The VM description: the same, with the CONFIG_F_DESCRIBE keys of a
 * layer above (NULL: none) after [workload], a section each, in the
 * table's order. The front end's [console] output and [api] socket go
 * there, so a description reads byte for byte as when they were the
 * machine's (docs/config.md, "Who reads which section").
 */
int config_format_with(const struct vm_config *cfg, const struct config_layer *host, char *buf,
		       size_t buflen);

const char *workload_kind_name(enum workload_kind k);
/*
 * The guest RAM the working set names is laid out and checked: the dirty
 * workload's, and an idle guest's with fill = random (an idle guest over
 * memory that does not compress, for wire-rate measurements).
 */
static inline bool config_has_working_set(const struct vm_config *cfg)
{
	return cfg->workload == WORKLOAD_DIRTY ||
	       (cfg->workload == WORKLOAD_IDLE && cfg->fill == WORKLOAD_FILL_RANDOM);
}
const char *workload_fill_name(enum workload_fill f);
const char *workload_order_name(enum workload_order o);
const char *mem_backend_name(enum mem_backend b);
const char *cpu_vendor_name(enum cpu_vendor v);

#endif /* VMM_CONFIG_H */
