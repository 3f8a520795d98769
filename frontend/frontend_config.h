/* SPDX-License-Identifier: Apache-2.0 */
/*
 * frontend_config.h - the config sections the front end owns: [console],
 * [api], [log] and [migration] tls_cert/tls_key/tls_ca. They configure this
 * host (its terminal, its control socket, its log, its key files), not the
 * VM, so the machine's struct vm_config does not hold them.
 *
 * They are read from the same file and the same `--set section.key=value`
 * as the VM's: the functions below read both in one pass through the
 * machine's parser, handing it this layer's key table (config_layer.h), so
 * the syntax, the defaults and the one-line errors ("file:line: [section]
 * key: ...") are the machine's own. Pure functions, any thread, on
 * structs the caller owns.
 */
#ifndef VMM_FRONTEND_CONFIG_H
#define VMM_FRONTEND_CONFIG_H

#include <limits.h>
#include <stddef.h>

#include "config.h"
#include "migration.h"

/* [console] input: where COM1's input comes from. */
enum console_input_mode {
	CONSOLE_INPUT_AUTO,  /* stdin, unless it is closed or /dev/null (default) */
	CONSOLE_INPUT_STDIN, /* stdin, whatever it is */
	CONSOLE_INPUT_NONE,  /* no input: the guest reads nothing */
};

/* [log] format: how `vmm run` writes its log records on stderr (log.h). */
enum log_format {
	LOG_FORMAT_TEXT, /* "<RFC 3339 UTC time> <level> vmm: <message>" (default) */
	LOG_FORMAT_JSON, /* one JSON object per line: ts, level, vm, msg */
};

/* [log] level: the least severe record written; the order is the severity's. */
enum log_level {
	LOG_LEVEL_ERROR,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO, /* default */
	LOG_LEVEL_DEBUG,
};

struct frontend_config {
	/* [console] */
	char console_output[PATH_MAX];	       /* "stdout" (default) or a file path */
	enum console_input_mode console_input; /* key "input": auto | stdin | none */
	/* [api] */
	char api_socket[PATH_MAX]; /* "" = default /run/vmm/<name>.sock (or $XDG_RUNTIME_DIR) */
	/* [migration]: TLS on every migration connection when set (all three) */
	char tls_cert[PATH_MAX]; /* this host's certificate chain, PEM */
	char tls_key[PATH_MAX];	 /* its private key, PEM */
	char tls_ca[PATH_MAX];	 /* CA certificates that sign the peer's, PEM */
	/* [log] */
	enum log_format log_format; /* key "format": text | json */
	enum log_level log_level;   /* key "level": error | warn | info | debug */
};

/* Every field at its documented default (docs/config.md). */
void frontend_config_defaults(struct frontend_config *fe);

/*
 * This layer's keys over fe, for the machine's parser and for the VM
 * description ([console] output and [api] socket are CONFIG_F_DESCRIBE:
 * config_format_with()). fe NULL: the values are checked and dropped (a
 * target reading a source's description: this host's own win).
 */
struct config_layer frontend_config_layer(struct frontend_config *fe);

/*
 * config_load_file() / config_load_text() / config_set() for both: the
 * machine's keys into cfg, this layer's into fe, in one pass; on an error
 * neither changes. The machine's return values and messages.
 */
int frontend_config_load_file(struct vm_config *cfg, struct frontend_config *fe, const char *path,
			      char *err, size_t errlen);
int frontend_config_load_text(struct vm_config *cfg, struct frontend_config *fe, const char *text,
			      size_t len, const char *origin, char *err, size_t errlen);
int frontend_config_set(struct vm_config *cfg, struct frontend_config *fe, const char *assignment,
			char *err, size_t errlen);

/*
 * What single keys cannot check: tls_cert, tls_key and tls_ca are set all
 * three or none (a VM booted with one of them would fail its first
 * migration long after the typo). 0, or -EINVAL with one line.
 */
int frontend_config_validate(const struct frontend_config *fe, char *err, size_t errlen);

/*
 * What the migration engine takes from this host (migration.h): fe's TLS
 * files and desc, frontend_config_layer(fe). Points into both: the engine
 * reads the strings at once and copies desc, whose fe must outlive every
 * migration and snapshot started with it.
 */
struct migration_host frontend_migration_host(const struct frontend_config *fe,
					      const struct config_layer *desc);

const char *console_input_name(enum console_input_mode m);
const char *log_format_name(enum log_format f);
const char *log_level_name(enum log_level l);

/* The value named `name` ("json", "debug"), or -1: for --log-format and --log-level. */
int log_format_from_name(const char *name);
int log_level_from_name(const char *name);

#endif /* VMM_FRONTEND_CONFIG_H */
