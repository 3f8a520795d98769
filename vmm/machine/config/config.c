/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c - the VM description as a whole (config.h): its defaults, the
 * checks that span keys (working set vs memory, the firmware file), and
 * its INI form for the migration stream. Keys one by one are
 * config_keys.c's, reading INI text config_ini.c's.
 */
#include "config.h"
#include "config_keys.h"
#include "size.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIG_FIRMWARE_RESERVE (4 * MiB)

/* ------------------------------------------------------------------ */
/* defaults                                                             */
/* ------------------------------------------------------------------ */

static void origin_default(struct config_origin *o)
{
	snprintf(o->file, sizeof(o->file), "default");
	o->line = 0;
}

void config_defaults(struct vm_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->name, sizeof(cfg->name), "vmm");
	cfg->memory = 256 * MiB;
	cfg->vcpus = 1;
	cfg->memslot_size = 512 * MiB;
	cfg->backend = MEM_BACKEND_ANON;
	/* "": config_default_firmware() looks it up when the VM is to boot */
	cfg->firmware_path[0] = '\0';
	cfg->cmdline[0] = '\0';
	cfg->workload = WORKLOAD_HELLO;
	cfg->working_set = 64 * MiB;
	cfg->dirty_rate = 0;
	cfg->passes = 0;
	cfg->min_pass_ms = 0;
	cfg->heartbeat_ms = 1000;
	cfg->catch_up_ms = 100;
	cfg->work_ms = 0;
	cfg->fill = WORKLOAD_FILL_ZERO;
	cfg->order = WORKLOAD_ORDER_SEQ;
	cfg->latency = false;
	snprintf(cfg->console_output, sizeof(cfg->console_output), "stdout");
	cfg->console_input = CONSOLE_INPUT_AUTO;
	cfg->api_socket[0] = '\0';
	cfg->tls_cert[0] = cfg->tls_key[0] = cfg->tls_ca[0] = '\0';
	cfg->seccomp = true;
	cfg->log_format = LOG_FORMAT_TEXT;
	cfg->log_level = LOG_LEVEL_INFO;
	origin_default(&cfg->firmware_origin);
	origin_default(&cfg->initrd_origin);
	origin_default(&cfg->memory_origin);
	origin_default(&cfg->working_set_origin);
}

/* ------------------------------------------------------------------ */
/* validate                                                             */
/* ------------------------------------------------------------------ */

/* Why `path` cannot be read as a regular file, or NULL; *st filled on success. */
static const char *file_problem(const char *path, struct stat *st)
{
	if (stat(path, st) != 0)
		return strerror(errno);
	if (!S_ISREG(st->st_mode))
		return "not a regular file";
	if (access(path, R_OK) != 0)
		return strerror(errno);
	return NULL;
}

int config_validate(const struct vm_config *cfg, char *err, size_t errlen)
{
	char a[32], b[32], where[PATH_MAX + 64];
	struct stat st;

	if (err && errlen)
		err[0] = '\0';
	if (config_has_working_set(cfg) &&
	    (cfg->working_set > cfg->memory ||
	     cfg->memory - cfg->working_set < CONFIG_FIRMWARE_RESERVE)) {
		if (cfg->memory_origin.line > 0)
			snprintf(where, sizeof(where), " (set at %s:%d)", cfg->memory_origin.file,
				 cfg->memory_origin.line);
		else
			snprintf(where, sizeof(where), " (from %s)", cfg->memory_origin.file);
		config_error(
		    err, errlen, cfg->working_set_origin.file, cfg->working_set_origin.line,
		    "[workload] working_set: %s plus 4M reserved for firmware, page tables, "
		    "device tree and stacks does not fit in [vm] memory %s%s",
		    config_fmt_size(a, sizeof(a), cfg->working_set),
		    config_fmt_size(b, sizeof(b), cfg->memory), where);
		return -EINVAL;
	}

	/* Checked here too, not only when a migration starts: a VM booted with one
	 * of them set would fail its first migration long after the typo. */
	if ((cfg->tls_cert[0] || cfg->tls_key[0] || cfg->tls_ca[0]) &&
	    !(cfg->tls_cert[0] && cfg->tls_key[0] && cfg->tls_ca[0])) {
		const char *names[] = {"tls_cert", "tls_key", "tls_ca"};
		const char *vals[] = {cfg->tls_cert, cfg->tls_key, cfg->tls_ca};
		char missing[32] = "";

		for (int i = 0; i < 3; i++)
			if (!vals[i][0])
				snprintf(missing + strlen(missing),
					 sizeof(missing) - strlen(missing), "%s%s",
					 missing[0] ? " and " : "", names[i]);
		snprintf(err, errlen,
			 "[migration] tls_cert, tls_key and tls_ca go together: %s not set",
			 missing);
		return -EINVAL;
	}

	if (!cfg->firmware_path[0]) {
		config_error(err, errlen, cfg->firmware_origin.file, cfg->firmware_origin.line,
			     "[firmware] path: not set (and no default firmware looked up)");
		return -EINVAL;
	}
	const char *why = file_problem(cfg->firmware_path, &st);
	if (why) {
		config_error(err, errlen, cfg->firmware_origin.file, cfg->firmware_origin.line,
			     "[firmware] path: cannot read '%s': %s", cfg->firmware_path, why);
		return -EINVAL;
	}
	if (!cfg->initrd_path[0])
		return 0;
	why = file_problem(cfg->initrd_path, &st);
	if (!why && st.st_size == 0)
		why = "the file is empty";
	if (why) {
		config_error(err, errlen, cfg->initrd_origin.file, cfg->initrd_origin.line,
			     "[firmware] initrd: cannot use '%s': %s", cfg->initrd_path, why);
		return -EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* format                                                               */
/* ------------------------------------------------------------------ */

struct out {
	char *buf;
	size_t len, used;
	bool overflow;
};

__attribute__((format(printf, 2, 3))) static void out_printf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->used) {
		o->overflow = true;
		return;
	}
	o->used += (size_t)n;
}

int config_format(const struct vm_config *cfg, char *buf, size_t buflen)
{
	struct out o = {.buf = buf, .len = buflen};

	if (!buf || buflen == 0)
		return -ENOSPC;
	buf[0] = '\0';
	out_printf(&o, "[vm]\n");
	out_printf(&o, "name = %s\n", cfg->name);
	out_printf(&o, "memory = %" PRIu64 "\n", cfg->memory);
	out_printf(&o, "vcpus = %u\n", cfg->vcpus);
	out_printf(&o, "memslot_size = %" PRIu64 "\n", cfg->memslot_size);
	out_printf(&o, "memory_backend = %s\n", mem_backend_name(cfg->backend));
	out_printf(&o, "tsc_khz = %" PRIu64 "\n", cfg->tsc_khz);
	out_printf(&o, "cpu_vendor = %s\n", cpu_vendor_name(cfg->cpu_vendor));
	if (cfg->cpu_features[0])
		out_printf(&o, "cpu_features = %s\n", cfg->cpu_features);
	out_printf(&o, "\n[firmware]\n");
	/* informational on a target; "" (never looked up, a test's config) is left out */
	if (cfg->firmware_path[0])
		out_printf(&o, "path = %s\n", cfg->firmware_path);
	out_printf(&o, "cmdline = %s\n", cfg->cmdline);
	/* Informational on a target: the initrd arrived in RAM, nothing reads the file. */
	out_printf(&o, "initrd = %s\n", cfg->initrd_path);
	out_printf(&o, "\n[workload]\n");
	out_printf(&o, "kind = %s\n", workload_kind_name(cfg->workload));
	out_printf(&o, "working_set = %" PRIu64 "\n", cfg->working_set);
	out_printf(&o, "dirty_rate = %" PRIu64 "\n", cfg->dirty_rate);
	out_printf(&o, "passes = %" PRIu64 "\n", cfg->passes);
	out_printf(&o, "min_pass_ms = %" PRIu64 "\n", cfg->min_pass_ms);
	out_printf(&o, "heartbeat_ms = %" PRIu64 "\n", cfg->heartbeat_ms);
	/* Only when set: a VM description an older target can read (it refuses unknown keys). */
	if (cfg->catch_up_ms != 100)
		out_printf(&o, "catch_up_ms = %" PRIu64 "\n", cfg->catch_up_ms);
	if (cfg->work_ms)
		out_printf(&o, "work_ms = %" PRIu64 "\n", cfg->work_ms);
	out_printf(&o, "fill = %s\n", workload_fill_name(cfg->fill));
	out_printf(&o, "order = %s\n", workload_order_name(cfg->order));
	out_printf(&o, "latency = %s\n", cfg->latency ? "true" : "false");
	out_printf(&o, "\n[console]\n");
	out_printf(&o, "output = %s\n", cfg->console_output);
	out_printf(&o, "\n[api]\n");
	out_printf(&o, "socket = %s\n", cfg->api_socket);
	/* Devices are guest-visible: a target builds the same ones (docs/devices.md). */
	if (cfg->disk_path[0]) {
		out_printf(&o, "\n[disk]\n");
		out_printf(&o, "path = %s\n", cfg->disk_path);
		out_printf(&o, "readonly = %s\n", cfg->disk_readonly ? "true" : "false");
	}
	if (cfg->net_tap[0]) {
		out_printf(&o, "\n[net]\n");
		out_printf(&o, "tap = %s\n", cfg->net_tap);
		if (cfg->net_mac[0])
			out_printf(&o, "mac = %s\n", cfg->net_mac);
	}
	/*
	 * [migration] names this host's key files, [sandbox] its policy,
	 * [console] input its terminal, [log] its collector, [vm] prealloc
	 * how it backs RAM: none travels.
	 */
	if (o.overflow) {
		buf[0] = '\0';
		return -ENOSPC;
	}
	return (int)o.used;
}
