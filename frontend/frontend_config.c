/* SPDX-License-Identifier: Apache-2.0 */
/*
 * frontend_config.c - the front end's config sections (frontend_config.h):
 * their key table, defaults and words, read through the machine's parser
 * as a config_layer so that one file and one --set serve both layers.
 */
#include "frontend_config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "enum_names.h"

static const char *const console_inputs[] = {
    [CONSOLE_INPUT_AUTO] = "auto", [CONSOLE_INPUT_STDIN] = "stdin", [CONSOLE_INPUT_NONE] = "none"};
static const char *const log_formats[] = {[LOG_FORMAT_TEXT] = "text", [LOG_FORMAT_JSON] = "json"};
static const char *const log_levels[] = {[LOG_LEVEL_ERROR] = "error",
					 [LOG_LEVEL_WARN] = "warn",
					 [LOG_LEVEL_INFO] = "info",
					 [LOG_LEVEL_DEBUG] = "debug"};

static const struct enum_names console_input_names = ENUM_NAMES(console_inputs);
static const struct enum_names log_format_names = ENUM_NAMES(log_formats);
static const struct enum_names log_level_names = ENUM_NAMES(log_levels);

/* CONFIG_T_ENUM stores an int. */
_Static_assert(sizeof(enum console_input_mode) == sizeof(int) &&
		   sizeof(enum log_format) == sizeof(int) && sizeof(enum log_level) == sizeof(int),
	       "CONFIG_T_ENUM fields are int-sized");

#define FIELD(f) CONFIG_FIELD(struct frontend_config, f)

/*
 * The order is the one messages list (the machine merges it with its own
 * sections around the shared [migration]) and the description writes
 * ([console] output, then [api] socket: the bytes a description has
 * always had there).
 */
static const struct config_key frontend_keys[] = {
    {"console", "output", CONFIG_T_STR, FIELD(console_output), 0, 0, 0, -1,
     CONFIG_F_NONEMPTY | CONFIG_F_DESCRIBE, NULL},
    {"console", "input", CONFIG_T_ENUM, FIELD(console_input), 0, 0, 0, -1, 0, &console_input_names},
    {"api", "socket", CONFIG_T_STR, FIELD(api_socket), 0, 0, 0, -1, CONFIG_F_DESCRIBE, NULL},
    {"migration", "tls_cert", CONFIG_T_STR, FIELD(tls_cert), 0, 0, 0, -1, 0, NULL},
    {"migration", "tls_key", CONFIG_T_STR, FIELD(tls_key), 0, 0, 0, -1, 0, NULL},
    {"migration", "tls_ca", CONFIG_T_STR, FIELD(tls_ca), 0, 0, 0, -1, 0, NULL},
    {"log", "format", CONFIG_T_ENUM, FIELD(log_format), 0, 0, 0, -1, 0, &log_format_names},
    {"log", "level", CONFIG_T_ENUM, FIELD(log_level), 0, 0, 0, -1, 0, &log_level_names},
};

void frontend_config_defaults(struct frontend_config *fe)
{
	memset(fe, 0, sizeof(*fe));
	snprintf(fe->console_output, sizeof(fe->console_output), "stdout");
	fe->console_input = CONSOLE_INPUT_AUTO;
	fe->log_format = LOG_FORMAT_TEXT;
	fe->log_level = LOG_LEVEL_INFO;
}

struct config_layer frontend_config_layer(struct frontend_config *fe)
{
	return (struct config_layer){
	    .keys = frontend_keys,
	    .nkeys = sizeof(frontend_keys) / sizeof(frontend_keys[0]),
	    .base = fe,
	    .size = sizeof(struct frontend_config),
	};
}

int frontend_config_load_file(struct vm_config *cfg, struct frontend_config *fe, const char *path,
			      char *err, size_t errlen)
{
	struct config_layer l = frontend_config_layer(fe);

	return config_load_file_with(cfg, &l, path, err, errlen);
}

int frontend_config_load_text(struct vm_config *cfg, struct frontend_config *fe, const char *text,
			      size_t len, const char *origin, char *err, size_t errlen)
{
	struct config_layer l = frontend_config_layer(fe);

	return config_load_text_with(cfg, &l, text, len, origin, err, errlen);
}

int frontend_config_set(struct vm_config *cfg, struct frontend_config *fe, const char *assignment,
			char *err, size_t errlen)
{
	struct config_layer l = frontend_config_layer(fe);

	return config_set_with(cfg, &l, assignment, err, errlen);
}

int frontend_config_validate(const struct frontend_config *fe, char *err, size_t errlen)
{
	const char *names[] = {"tls_cert", "tls_key", "tls_ca"};
	const char *vals[] = {fe->tls_cert, fe->tls_key, fe->tls_ca};
	char missing[32] = "";
	int set = 0;

	for (int i = 0; i < 3; i++)
		set += vals[i][0] != '\0';
	if (set == 0 || set == 3)
		return 0;
	for (int i = 0; i < 3; i++)
		if (!vals[i][0])
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
				 "%s%s", missing[0] ? " and " : "", names[i]);
	snprintf(err, errlen, "[migration] tls_cert, tls_key and tls_ca go together: %s not set",
		 missing);
	return -EINVAL;
}

struct migration_host frontend_migration_host(const struct frontend_config *fe,
					      const struct config_layer *desc)
{
	return (struct migration_host){
	    .tls_cert = fe->tls_cert,
	    .tls_key = fe->tls_key,
	    .tls_ca = fe->tls_ca,
	    .desc = desc,
	};
}

const char *console_input_name(enum console_input_mode m)
{
	return enum_name(console_input_names, (unsigned)m);
}

const char *log_format_name(enum log_format f)
{
	return enum_name(log_format_names, (unsigned)f);
}

const char *log_level_name(enum log_level l)
{
	return enum_name(log_level_names, (unsigned)l);
}

int log_format_from_name(const char *name)
{
	return enum_value(log_format_names, name);
}

int log_level_from_name(const char *name)
{
	return enum_value(log_level_names, name);
}
