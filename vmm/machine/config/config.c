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
	cfg->seccomp = true;
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

/* One value of a layer's key, as the machine's own keys are written. */
static void out_value(struct out *o, const struct config_key *k, const void *base)
{
	const char *field = (const char *)base + k->off;

	switch (k->type) {
	case CONFIG_T_SIZE:
	case CONFIG_T_U64:
		out_printf(o, "%" PRIu64, *(const uint64_t *)field);
		break;
	case CONFIG_T_VCPUS:
		out_printf(o, "%u", *(const unsigned *)field);
		break;
	case CONFIG_T_ENUM:
		out_printf(o, "%s", enum_name(*k->names, (unsigned)*(const int *)field));
		break;
	case CONFIG_T_BOOL:
		out_printf(o, "%s", *(const bool *)field ? "true" : "false");
		break;
	case CONFIG_T_ONOFF:
		out_printf(o, "%s", *(const bool *)field ? "on" : "off");
		break;
	default: /* the strings */
		out_printf(o, "%s", field);
		break;
	}
}

/* The layer's CONFIG_F_DESCRIBE keys, a section header before each new section. */
static void out_layer(struct out *o, const struct config_layer *host)
{
	const char *section = NULL;

	for (size_t i = 0; host && host->keys && host->base && i < host->nkeys; i++) {
		const struct config_key *k = &host->keys[i];

		if (!(k->flags & CONFIG_F_DESCRIBE))
			continue;
		if (!section || strcmp(section, k->section) != 0)
			out_printf(o, "\n[%s]\n", k->section);
		section = k->section;
		out_printf(o, "%s = ", k->key);
		out_value(o, k, host->base);
		out_printf(o, "\n");
	}
}

int config_format(const struct vm_config *cfg, char *buf, size_t buflen)
{
	return config_format_with(cfg, NULL, buf, buflen);
}

int config_format_with(const struct vm_config *cfg, const struct config_layer *host, char *buf,
		       size_t buflen)
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
	/*
	 * Where [console] output and [api] socket always stood: the front end's
	 * now (its layer marks them CONFIG_F_DESCRIBE), written here so that a
	 * description is the same bytes as before the split, which a target
	 * checks and drops and a restore takes.
	 */
	out_layer(&o, host);
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
	 * [migration] allow_* names what this host lets a VM keep, [sandbox]
	 * its policy, [vm] prealloc how it backs RAM: none travels (nor the
	 * front end's keys without CONFIG_F_DESCRIBE: TLS files, console
	 * input, log).
	 */
	if (o.overflow) {
		buf[0] = '\0';
		return -ENOSPC;
	}
	return (int)o.used;
}
