/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_keys.h - inside the config module (config.h): the one table of
 * sections and keys and the one way a value is applied to a key, shared by
 * the INI reader (config_ini.c), `--set` (config_keys.c) and validation
 * (config.c). Private to vmm/machine.
 *
 * Pure functions on the caller's struct vm_config, no locks, no I/O: any
 * thread may call them on a config it owns (the front end's main thread,
 * or the migration target's thread while it reads the stream's config).
 */
#ifndef VMM_MACHINE_CONFIG_KEYS_H
#define VMM_MACHINE_CONFIG_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "enum_names.h"

/* Each enumerated setting's words (config_names.c), indexed by its enum's values. */
extern const struct enum_names config_workload_kinds, config_workload_fills, config_workload_orders,
    config_mem_backends, config_cpu_vendors;

/* Where a value comes from, for the error prefix "<file>:<line>: [section] key: ". */
struct config_where {
	const char *file; /* file name, string origin, or "--set" */
	int line;	  /* 0: no line */
	const char *section;
	const char *key;
	char *err; /* where the message goes; NULL: nowhere */
	size_t errlen;
};

/*
 * Validates `value` for [w->section] w->key and stores it in cfg, or in
 * host->base for a key of the layer above (host NULL: none), with its
 * origin (for the keys config_validate() reports on). 0, or -EINVAL with
 * one line in w->err naming the file, line, section and key.
 */
int config_apply_key(struct vm_config *cfg, const struct config_layer *host,
		     const struct config_where *w, const char *value);

/* True for a section the machine's table or the layer's (NULL: none) knows. */
bool config_known_section(const struct config_layer *host, const char *section);

/* "vm, firmware, workload, ... or log" into buf: the sections of both tables, for messages. */
#define CONFIG_SECTIONS_LIST_MAX 160
const char *config_sections_list(const struct config_layer *host, char *buf, size_t len);

/*
 * The [migration] allow_disk_dirs and allow_taps lists (config_bind.c):
 * 0, or -EINVAL with what is wrong with the first bad item in why.
 */
int config_dir_list_check(const char *value, char *why, size_t whylen);
int config_tap_list_check(const char *value, char *why, size_t whylen);

/* Writes "<file>:<line>: " (or "<file>: "; no prefix for a NULL file) and the message to err. */
__attribute__((format(printf, 5, 6))) void config_error(char *err, size_t errlen, const char *file,
							int line, const char *fmt, ...);

/* Shortest exact human form of a size: "1G", "4K", or the byte count. */
const char *config_fmt_size(char *buf, size_t len, uint64_t v);

/* Skips leading whitespace; strips trailing whitespace in place. */
char *config_lskip(char *s);
void config_rstrip(char *s);

#endif /* VMM_MACHINE_CONFIG_KEYS_H */
