/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_keys.c - the config's sections and keys: every key of the machine
 * is described once in key_table[], a layer above brings its own table
 * (config_layer.h), and config_apply_key() validates and stores a value of
 * either the same way whether it comes from an INI file (config_ini.c) or
 * from `--set section.key=value` (config_set(), here). The first error is
 * written as one line: "<file>:<line>: [section] key: <what is wrong>".
 */
#include "config.h"
#include "config_keys.h"
#include "cpu_features.h"
#include "size.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_MEMORY_MAX	(16 * TiB)
#define CONFIG_HEARTBEAT_MAX_MS UINT64_C(3600000)

/* ------------------------------------------------------------------ */
/* key table                                                            */
/* ------------------------------------------------------------------ */

#define FIELD(f)  CONFIG_FIELD(struct vm_config, f)
#define ORIGIN(f) ((long)offsetof(struct vm_config, f))

static const struct config_key key_table[] = {
    {"vm", "name", CONFIG_T_NAME, FIELD(name), 0, 1, 0, -1, CONFIG_F_NONEMPTY, NULL},
    {"vm", "memory", CONFIG_T_SIZE, FIELD(memory), 4096, 4096, CONFIG_MEMORY_MAX,
     ORIGIN(memory_origin), 0, NULL},
    {"vm", "vcpus", CONFIG_T_VCPUS, FIELD(vcpus), 0, 1, CONFIG_MAX_VCPUS, -1, 0, NULL},
    {"vm", "memslot_size", CONFIG_T_SIZE, FIELD(memslot_size), 2 * MiB, 2 * MiB, CONFIG_MEMORY_MAX,
     -1, 0, NULL},
    {"vm", "memory_backend", CONFIG_T_ENUM, FIELD(backend), 0, 0, 0, -1, 0, &config_mem_backends},
    {"vm", "prealloc", CONFIG_T_BOOL, FIELD(prealloc), 0, 0, 0, -1, 0, NULL},
    /* KVM_SET_TSC_KHZ takes a u32 */
    {"vm", "tsc_khz", CONFIG_T_U64, FIELD(tsc_khz), 0, 0, UINT32_MAX, -1, 0, NULL},
    {"vm", "cpu_vendor", CONFIG_T_ENUM, FIELD(cpu_vendor), 0, 0, 0, -1, 0, &config_cpu_vendors},
    {"vm", "cpu_features", CONFIG_T_FEATURES, FIELD(cpu_features), 0, 0, 0, -1, 0, NULL},
    {"firmware", "path", CONFIG_T_STR, FIELD(firmware_path), 0, 0, 0, ORIGIN(firmware_origin),
     CONFIG_F_NONEMPTY, NULL},
    {"firmware", "cmdline", CONFIG_T_STR, FIELD(cmdline), 0, 0, 0, -1, 0, NULL},
    {"firmware", "initrd", CONFIG_T_STR, FIELD(initrd_path), 0, 0, 0, ORIGIN(initrd_origin), 0,
     NULL},
    {"workload", "kind", CONFIG_T_ENUM, FIELD(workload), 0, 0, 0, -1, 0, &config_workload_kinds},
    {"workload", "working_set", CONFIG_T_SIZE, FIELD(working_set), 4096, 4096, CONFIG_MEMORY_MAX,
     ORIGIN(working_set_origin), 0, NULL},
    {"workload", "dirty_rate", CONFIG_T_U64, FIELD(dirty_rate), 0, 0, UINT64_MAX, -1, 0, NULL},
    {"workload", "passes", CONFIG_T_U64, FIELD(passes), 0, 0, UINT64_MAX, -1, 0, NULL},
    {"workload", "min_pass_ms", CONFIG_T_U64, FIELD(min_pass_ms), 0, 0, CONFIG_HEARTBEAT_MAX_MS, -1,
     0, NULL},
    {"workload", "heartbeat_ms", CONFIG_T_U64, FIELD(heartbeat_ms), 0, 0, CONFIG_HEARTBEAT_MAX_MS,
     -1, 0, NULL},
    {"workload", "catch_up_ms", CONFIG_T_U64, FIELD(catch_up_ms), 0, 0, CONFIG_HEARTBEAT_MAX_MS, -1,
     0, NULL},
    {"workload", "work_ms", CONFIG_T_U64, FIELD(work_ms), 0, 0, CONFIG_HEARTBEAT_MAX_MS, -1, 0,
     NULL},
    {"workload", "fill", CONFIG_T_ENUM, FIELD(fill), 0, 0, 0, -1, 0, &config_workload_fills},
    {"workload", "order", CONFIG_T_ENUM, FIELD(order), 0, 0, 0, -1, 0, &config_workload_orders},
    {"workload", "latency", CONFIG_T_BOOL, FIELD(latency), 0, 0, 0, -1, 0, NULL},
    {"migration", "allow_disk_dirs", CONFIG_T_DIRS, FIELD(allow_disk_dirs), 0, 0, 0, -1, 0, NULL},
    {"migration", "allow_taps", CONFIG_T_TAPS, FIELD(allow_taps), 0, 0, 0, -1, 0, NULL},
    {"disk", "path", CONFIG_T_STR, FIELD(disk_path), 0, 0, 0, -1, 0, NULL},
    {"disk", "readonly", CONFIG_T_BOOL, FIELD(disk_readonly), 0, 0, 0, -1, 0, NULL},
    {"net", "tap", CONFIG_T_NAME, FIELD(net_tap), 0, 0, 0, -1, 0, NULL},
    {"net", "mac", CONFIG_T_MAC, FIELD(net_mac), 0, 0, 0, -1, 0, NULL},
    {"sandbox", "seccomp", CONFIG_T_ONOFF, FIELD(seccomp), 0, 0, 0, -1, 0, NULL},
    {"snapshot", "track_dirty", CONFIG_T_BOOL, FIELD(snapshot_track_dirty), 0, 0, 0, -1, 0, NULL},
    {"snapshot", "direct_io", CONFIG_T_BOOL, FIELD(snapshot_direct_io), 0, 0, 0, -1, 0, NULL},
};

#define N_KEYS (sizeof(key_table) / sizeof(key_table[0]))

/* CONFIG_T_ENUM stores an int: every enumerated setting's enum is one. */
_Static_assert(sizeof(enum mem_backend) == sizeof(int) && sizeof(enum cpu_vendor) == sizeof(int) &&
		   sizeof(enum workload_kind) == sizeof(int) &&
		   sizeof(enum workload_fill) == sizeof(int) &&
		   sizeof(enum workload_order) == sizeof(int),
	       "CONFIG_T_ENUM fields are int-sized");

/* ------------------------------------------------------------------ */
/* errors                                                               */
/* ------------------------------------------------------------------ */

/* "<file>:<line>: " or "<file>: " */
static int origin_prefix(char *buf, size_t len, const char *file, int line)
{
	if (line > 0)
		return snprintf(buf, len, "%s:%d: ", file, line);
	return snprintf(buf, len, "%s: ", file);
}

static void append_vfmt(char *buf, size_t len, int used, const char *fmt, va_list ap)
{
	if (used < 0 || (size_t)used >= len)
		return;
	vsnprintf(buf + used, len - (size_t)used, fmt, ap);
}

__attribute__((format(printf, 2, 3))) static int key_error(const struct config_where *w,
							   const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!w->err || !w->errlen)
		return -EINVAL;
	n = origin_prefix(w->err, w->errlen, w->file, w->line);
	if (n >= 0 && (size_t)n < w->errlen)
		n += snprintf(w->err + n, w->errlen - (size_t)n, "[%s] %s: ", w->section, w->key);
	va_start(ap, fmt);
	append_vfmt(w->err, w->errlen, n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

void config_error(char *err, size_t errlen, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || !errlen)
		return;
	n = file ? origin_prefix(err, errlen, file, line) : 0;
	va_start(ap, fmt);
	append_vfmt(err, errlen, n, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------ */
/* applying one key                                                     */
/* ------------------------------------------------------------------ */

static int check_string(const struct config_where *w, const struct config_key *k, const char *value)
{
	size_t len = strlen(value);

	if ((k->flags & CONFIG_F_NONEMPTY) && len == 0)
		return key_error(w, "must not be empty");
	if (len >= k->size)
		return key_error(w, "value is too long (%zu characters, at most %zu)", len,
				 k->size - 1);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];

		if (k->type == CONFIG_T_NAME) {
			if (!isalnum(c) && c != '_' && c != '.' && c != '-')
				return key_error(
				    w, "invalid character '%c' in '%s' (use A-Z a-z 0-9 _ . -)",
				    isprint(c) ? c : '?', value);
			continue;
		}
		if (c < 0x20 || c == 0x7f)
			return key_error(w, "control character (0x%02x) in value", c);
		/* inih treats ';' after whitespace as a comment: it could not round-trip */
		if (c == ';' && (i == 0 || value[i - 1] == ' ' || value[i - 1] == '\t'))
			return key_error(w, "';' at the start of a value or after a space starts a "
					    "comment and is not allowed in a value");
	}
	if (len && (isspace((unsigned char)value[0]) || isspace((unsigned char)value[len - 1])))
		return key_error(w, "leading or trailing whitespace in '%s'", value);
	return 0;
}

int config_mac_parse(const char *text, uint8_t mac[6])
{
	unsigned b[6];
	char end;

	if (strlen(text) != 17 || sscanf(text, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2],
					 &b[3], &b[4], &b[5], &end) != 6)
		return -EINVAL;
	for (size_t i = 0; i < 17; i++)
		if (i % 3 == 2 ? text[i] != ':' : !isxdigit((unsigned char)text[i]))
			return -EINVAL;
	if (b[0] & 1)
		return -EADDRNOTAVAIL;
	for (size_t i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

/* [net] mac into its lower-case form in out; config_mac_parse()'s errors. */
static int parse_mac(const char *value, char *out, size_t outlen)
{
	uint8_t b[6];
	int rc = config_mac_parse(value, b);

	if (!rc)
		snprintf(out, outlen, "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4],
			 b[5]);
	return rc;
}

/* The entry of [section] key in table t, or NULL. */
static const struct config_key *find_key(const struct config_key *t, size_t n, const char *section,
					 const char *key)
{
	for (size_t i = 0; t && i < n; i++)
		if (strcmp(t[i].section, section) == 0 && strcmp(t[i].key, key) == 0)
			return &t[i];
	return NULL;
}

/* Appends the keys of `section` in table t to list ("a, b"); returns the new length. */
static size_t list_keys(char *list, size_t len, size_t n, const struct config_key *t, size_t nt,
			const char *section)
{
	for (size_t i = 0; t && i < nt && n < len; i++)
		if (strcmp(t[i].section, section) == 0)
			n += (size_t)snprintf(list + n, len - n, "%s%s", n ? ", " : "", t[i].key);
	return n;
}

static int apply_desc(const struct config_key *k, void *base, const struct config_where *w,
		      const char *value);

int config_apply_key(struct vm_config *cfg, const struct config_layer *host,
		     const struct config_where *w, const char *value)
{
	const struct config_key *k;
	const struct config_key *hk = host ? host->keys : NULL;
	size_t nhk = host && host->keys ? host->nkeys : 0;
	char a[CONFIG_SECTIONS_LIST_MAX];

	if (!config_known_section(host, w->section))
		return key_error(w, "unknown section '%s' (expected %s)", w->section,
				 config_sections_list(host, a, sizeof(a)));
	k = find_key(key_table, N_KEYS, w->section, w->key);
	if (k)
		return apply_desc(k, cfg, w, value);
	k = find_key(hk, nhk, w->section, w->key);
	if (k)
		return apply_desc(k, host->base, w, value);

	char list[256] = "";
	/* A shared section lists the layer's keys first, as the file always did. */
	size_t n = list_keys(list, sizeof(list), 0, hk, nhk, w->section);

	list_keys(list, sizeof(list), n, key_table, N_KEYS, w->section);
	return key_error(w, "unknown key '%s' (expected %s)", w->key, list);
}

/* Checks value for k and stores it at base + k->off (base NULL: checked only). */
static int apply_desc(const struct config_key *k, void *base, const struct config_where *w,
		      const char *value)
{
	char a[CONFIG_SECTIONS_LIST_MAX], b[32];
	uint64_t v;
	int rc;

	void *field = (char *)base + k->off;

	switch (k->type) {
	case CONFIG_T_NAME:
	case CONFIG_T_STR:
	case CONFIG_T_FEATURES:
	case CONFIG_T_DIRS:
	case CONFIG_T_TAPS:
		rc = check_string(w, k, value);
		if (rc)
			return rc;
		if (k->type == CONFIG_T_DIRS || k->type == CONFIG_T_TAPS) {
			char why[320];

			if (k->type == CONFIG_T_DIRS
				? config_dir_list_check(value, why, sizeof(why))
				: config_tap_list_check(value, why, sizeof(why)))
				return key_error(w, "%s", why);
		}
		if (k->type == CONFIG_T_FEATURES) {
			struct cpu_features f;
			char why[128];

			if (cpu_features_parse(value, &f, why, sizeof(why)))
				return key_error(
				    w,
				    "%s (the names of /proc/cpuinfo's flags, x86-64-v2..v4 "
				    "or host: vmm cpu-features --list)",
				    why);
		}
		memcpy(field, value, strlen(value) + 1);
		break;
	case CONFIG_T_SIZE:
		rc = parse_size(value, &v);
		if (rc == -ERANGE)
			return key_error(w, "size '%s' is too large", value);
		if (rc)
			return key_error(w, "bad size '%s' (use a number with K/M/G/T)", value);
		if (v == 0)
			return key_error(w, "must not be 0 (at least %s)",
					 config_fmt_size(a, sizeof(a), k->min));
		if (v % k->align)
			return key_error(w, "%s (%" PRIu64 " bytes) is not a multiple of %s", value,
					 v, config_fmt_size(a, sizeof(a), k->align));
		if (v < k->min || v > k->max)
			return key_error(w, "%s is out of range (%s..%s)", value,
					 config_fmt_size(a, sizeof(a), k->min),
					 config_fmt_size(b, sizeof(b), k->max));
		*(uint64_t *)field = v;
		break;
	case CONFIG_T_U64:
	case CONFIG_T_VCPUS:
		rc = parse_u64(value, &v);
		if (rc == -ERANGE)
			return key_error(w, "'%s' is too large (at most %" PRIu64 ")", value,
					 k->max);
		if (rc || v < k->min || v > k->max)
			return key_error(w,
					 "must be an integer in %" PRIu64 "..%" PRIu64 ", got '%s'",
					 k->min, k->max, value);
		if (k->type == CONFIG_T_VCPUS)
			*(unsigned *)field = (unsigned)v;
		else
			*(uint64_t *)field = v;
		break;
	case CONFIG_T_ENUM:
		/* the names config_format() writes, so that its output reads back */
		rc = enum_value(*k->names, value);
		if (rc < 0)
			return key_error(w, "unknown value '%s' (expected %s)", value,
					 enum_list(*k->names, a, sizeof(a)));
		*(int *)field = rc;
		break;
	case CONFIG_T_MAC:
		if (value[0] == '\0') { /* "" = the default, derived from the name */
			((char *)field)[0] = '\0';
			break;
		}
		rc = parse_mac(value, (char *)field, k->size);
		if (rc == -EINVAL)
			return key_error(w,
					 "bad MAC address '%s' (use six hex bytes, "
					 "xx:xx:xx:xx:xx:xx)",
					 value);
		if (rc)
			return key_error(w,
					 "'%s' is a multicast address (the first byte's low "
					 "bit is set): a NIC's address is unicast",
					 value);
		break;
	case CONFIG_T_BOOL:
		if (strcmp(value, "true") && strcmp(value, "false"))
			return key_error(w, "unknown value '%s' (expected true or false)", value);
		*(bool *)field = !strcmp(value, "true");
		break;
	case CONFIG_T_ONOFF:
		if (strcmp(value, "on") && strcmp(value, "off"))
			return key_error(w, "unknown value '%s' (expected on or off)", value);
		*(bool *)field = !strcmp(value, "on");
		break;
	}
	if (k->origin_off >= 0) {
		struct config_origin *o = (struct config_origin *)((char *)base + k->origin_off);
		snprintf(o->file, sizeof(o->file), "%s", w->file);
		o->line = w->line;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* --set                                                                */
/* ------------------------------------------------------------------ */

char *config_lskip(char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	return s;
}

void config_rstrip(char *s)
{
	size_t n = strlen(s);

	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
}

int config_set(struct vm_config *cfg, const char *assignment, char *err, size_t errlen)
{
	return config_set_with(cfg, NULL, assignment, err, errlen);
}

int config_set_with(struct vm_config *cfg, const struct config_layer *host, const char *assignment,
		    char *err, size_t errlen)
{
	char buf[CONFIG_CMDLINE_MAX + PATH_MAX];
	char *eq, *dot = NULL, *section, *key, *value;

	if (err && errlen)
		err[0] = '\0';
	if (!cfg || !assignment) {
		config_error(err, errlen, "--set", 0, "expected section.key=value");
		return -EINVAL;
	}
	if (strlen(assignment) >= sizeof(buf)) {
		config_error(err, errlen, "--set", 0, "assignment is too long (%zu characters)",
			     strlen(assignment));
		return -EINVAL;
	}
	memcpy(buf, assignment, strlen(assignment) + 1);
	eq = strchr(buf, '=');
	if (eq) {
		*eq = '\0';
		dot = strchr(buf, '.');
	}
	if (!eq || !dot) {
		config_error(err, errlen, "--set", 0, "expected section.key=value, got '%s'",
			     assignment);
		return -EINVAL;
	}
	*dot = '\0';
	section = config_lskip(buf);
	config_rstrip(section);
	key = config_lskip(dot + 1);
	config_rstrip(key);
	value = config_lskip(eq + 1);
	config_rstrip(value);
	if (!*section || !*key) {
		config_error(err, errlen, "--set", 0, "expected section.key=value, got '%s'",
			     assignment);
		return -EINVAL;
	}
	struct config_where w = {
	    .file = "--set",
	    .line = 0,
	    .section = section,
	    .key = key,
	    .err = err,
	    .errlen = errlen,
	};
	if (host && host->keys && !host->base) {
		/* a layer with nowhere to keep its values: checked, then dropped */
		struct config_layer scratch = *host;
		int rc;

		scratch.base = calloc(1, host->size ? host->size : 1);
		if (!scratch.base) {
			config_error(err, errlen, "--set", 0, "out of memory");
			return -ENOMEM;
		}
		rc = config_apply_key(cfg, &scratch, &w, value);
		free(scratch.base);
		return rc;
	}
	return config_apply_key(cfg, host, &w, value);
}
