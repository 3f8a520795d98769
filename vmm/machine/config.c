/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c - the VM description: INI file (libinih) + `--set section.key=value`.
 *
 * Every key is described once in key_table[]; the INI handler and
 * config_set() both go through apply_key(), so a key is validated the same
 * way wherever it comes from. The first error wins and is written to `err`
 * as one line: "<file>:<line>: [section] key: <what is wrong>".
 *
 * libinih quirks handled here (Debian build: INI_HANDLER_LINENO=0, lines of
 * at most ini_max_line = 200 bytes, multi-line values enabled):
 *  - we feed inih through our own line reader (ini_parse_stream), which
 *    counts lines itself, strips leading whitespace (so an indented line is
 *    never a "continuation" of the previous value), and passes lines that
 *    are too long for inih's buffer by splitting them itself and handing
 *    the value over in the parse context. So values such as a long
 *    [firmware] cmdline or path work and config_format() round-trips.
 *  - inih's return value is the first line it rejected (syntax error or
 *    handler returned 0); we keep the first message in the context.
 *
 * Loading works on a private copy that is committed only on success, so a
 * failed config_load_*() leaves the caller's config untouched.
 */
#include "config.h"
#include "size.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#ifndef VMM_DEFAULT_FIRMWARE
#error "VMM_DEFAULT_FIRMWARE must be defined by the build"
#endif

#define CONFIG_MEMORY_MAX (16 * TiB)
#define CONFIG_FIRMWARE_RESERVE (4 * MiB)
#define CONFIG_HEARTBEAT_MAX_MS UINT64_C(3600000)

/* Shortest exact human form: "1G", "4K", or the byte count. */
static const char *fmt_size(char *buf, size_t len, uint64_t v)
{
	static const char units[] = "TGMK";
	static const unsigned shifts[] = {40, 30, 20, 10};

	for (int i = 0; i < 4; i++) {
		uint64_t unit = UINT64_C(1) << shifts[i];
		if (v && v % unit == 0) {
			snprintf(buf, len, "%" PRIu64 "%c", v / unit, units[i]);
			return buf;
		}
	}
	snprintf(buf, len, "%" PRIu64, v);
	return buf;
}

const char *workload_kind_name(enum workload_kind k)
{
	switch (k) {
	case WORKLOAD_HELLO:
		return "hello";
	case WORKLOAD_IDLE:
		return "idle";
	case WORKLOAD_DIRTY:
		return "dirty";
	}
	return "unknown";
}

const char *mem_backend_name(enum mem_backend b)
{
	switch (b) {
	case MEM_BACKEND_ANON:
		return "anonymous";
	case MEM_BACKEND_MEMFD:
		return "memfd";
	}
	return "unknown";
}

/* ------------------------------------------------------------------ */
/* key table                                                            */
/* ------------------------------------------------------------------ */

enum key_type {
	T_NAME,    /* [A-Za-z0-9_.-]+ */
	T_STR,     /* free text, no control characters */
	T_SIZE,    /* parse_size, multiple of align, min..max */
	T_U64,     /* parse_u64, min..max */
	T_VCPUS,   /* parse_u64, 1..CONFIG_MAX_VCPUS, stored as unsigned */
	T_BACKEND, /* enum mem_backend */
	T_KIND,    /* enum workload_kind */
};

#define F_NONEMPTY 1u

struct key_desc {
	const char *section;
	const char *key;
	enum key_type type;
	size_t off;      /* field offset in struct vm_config */
	size_t size;     /* buffer size for strings */
	uint64_t align;  /* T_SIZE */
	uint64_t min, max;
	long origin_off; /* offset of a struct config_origin, or -1 */
	unsigned flags;
};

#define FIELD(f) offsetof(struct vm_config, f), sizeof(((struct vm_config *)0)->f)
#define ORIGIN(f) ((long)offsetof(struct vm_config, f))

static const struct key_desc key_table[] = {
	{"vm", "name", T_NAME, FIELD(name), 0, 1, 0, -1, F_NONEMPTY},
	{"vm", "memory", T_SIZE, FIELD(memory), 4096, 4096, CONFIG_MEMORY_MAX, ORIGIN(memory_origin),
	 0},
	{"vm", "vcpus", T_VCPUS, FIELD(vcpus), 0, 1, CONFIG_MAX_VCPUS, -1, 0},
	{"vm", "memslot_size", T_SIZE, FIELD(memslot_size), 2 * MiB, 2 * MiB, CONFIG_MEMORY_MAX, -1,
	 0},
	{"vm", "memory_backend", T_BACKEND, FIELD(backend), 0, 0, 0, -1, 0},
	{"firmware", "path", T_STR, FIELD(firmware_path), 0, 0, 0, ORIGIN(firmware_origin),
	 F_NONEMPTY},
	{"firmware", "cmdline", T_STR, FIELD(cmdline), 0, 0, 0, -1, 0},
	{"workload", "kind", T_KIND, FIELD(workload), 0, 0, 0, -1, 0},
	{"workload", "working_set", T_SIZE, FIELD(working_set), 4096, 4096, CONFIG_MEMORY_MAX,
	 ORIGIN(working_set_origin), 0},
	{"workload", "dirty_rate", T_U64, FIELD(dirty_rate), 0, 0, UINT64_MAX, -1, 0},
	{"workload", "passes", T_U64, FIELD(passes), 0, 0, UINT64_MAX, -1, 0},
	{"workload", "heartbeat_ms", T_U64, FIELD(heartbeat_ms), 0, 0, CONFIG_HEARTBEAT_MAX_MS, -1,
	 0},
	{"console", "output", T_STR, FIELD(console_output), 0, 0, 0, -1, F_NONEMPTY},
	{"api", "socket", T_STR, FIELD(api_socket), 0, 0, 0, -1, 0},
	{"migration", "tls_cert", T_STR, FIELD(tls_cert), 0, 0, 0, -1, 0},
	{"migration", "tls_key", T_STR, FIELD(tls_key), 0, 0, 0, -1, 0},
	{"migration", "tls_ca", T_STR, FIELD(tls_ca), 0, 0, 0, -1, 0},
};

#define N_KEYS (sizeof(key_table) / sizeof(key_table[0]))

static const char *const section_names[] = {"vm",      "firmware", "workload",
					    "console", "api",      "migration"};
#define N_SECTIONS (sizeof(section_names) / sizeof(section_names[0]))

static bool known_section(const char *section)
{
	for (size_t i = 0; i < N_SECTIONS; i++)
		if (strcmp(section, section_names[i]) == 0)
			return true;
	return false;
}

/* ------------------------------------------------------------------ */
/* errors                                                               */
/* ------------------------------------------------------------------ */

/* Where a value comes from, for the error prefix. */
struct where {
	const char *file; /* file name, string origin, or "--set" */
	int line;         /* 0: no line */
	const char *section;
	const char *key;
	char *err;
	size_t errlen;
};

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

__attribute__((format(printf, 2, 3))) static int key_error(const struct where *w,
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

__attribute__((format(printf, 5, 6))) static void set_error(char *err, size_t errlen,
							    const char *file, int line,
							    const char *fmt, ...)
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

static int check_string(const struct where *w, const struct key_desc *k, const char *value)
{
	size_t len = strlen(value);

	if ((k->flags & F_NONEMPTY) && len == 0)
		return key_error(w, "must not be empty");
	if (len >= k->size)
		return key_error(w, "value is too long (%zu characters, at most %zu)", len,
				 k->size - 1);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];

		if (k->type == T_NAME) {
			if (!isalnum(c) && c != '_' && c != '.' && c != '-')
				return key_error(w,
						 "invalid character '%c' in '%s' (use A-Z a-z 0-9 _ . -)",
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

static int apply_key(struct vm_config *cfg, const struct where *w, const char *value)
{
	const struct key_desc *k = NULL;
	char a[32], b[32];
	uint64_t v;
	int rc;

	if (!known_section(w->section))
		return key_error(w, "unknown section '%s' (expected vm, firmware, workload, "
				    "console or api)",
				 w->section);
	for (size_t i = 0; i < N_KEYS; i++) {
		if (strcmp(key_table[i].section, w->section) == 0 &&
		    strcmp(key_table[i].key, w->key) == 0) {
			k = &key_table[i];
			break;
		}
	}
	if (!k) {
		char list[256] = "";
		size_t n = 0;

		for (size_t i = 0; i < N_KEYS; i++) {
			if (strcmp(key_table[i].section, w->section) != 0)
				continue;
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", n ? ", " : "",
					      key_table[i].key);
		}
		return key_error(w, "unknown key '%s' (expected %s)", w->key, list);
	}

	void *field = (char *)cfg + k->off;

	switch (k->type) {
	case T_NAME:
	case T_STR:
		rc = check_string(w, k, value);
		if (rc)
			return rc;
		memcpy(field, value, strlen(value) + 1);
		break;
	case T_SIZE:
		rc = parse_size(value, &v);
		if (rc == -ERANGE)
			return key_error(w, "size '%s' is too large", value);
		if (rc)
			return key_error(w, "bad size '%s' (use a number with K/M/G/T)", value);
		if (v == 0)
			return key_error(w, "must not be 0 (at least %s)",
					 fmt_size(a, sizeof(a), k->min));
		if (v % k->align)
			return key_error(w, "%s (%" PRIu64 " bytes) is not a multiple of %s", value,
					 v, fmt_size(a, sizeof(a), k->align));
		if (v < k->min || v > k->max)
			return key_error(w, "%s is out of range (%s..%s)", value,
					 fmt_size(a, sizeof(a), k->min),
					 fmt_size(b, sizeof(b), k->max));
		*(uint64_t *)field = v;
		break;
	case T_U64:
	case T_VCPUS:
		rc = parse_u64(value, &v);
		if (rc == -ERANGE)
			return key_error(w, "'%s' is too large (at most %" PRIu64 ")", value,
					 k->max);
		if (rc || v < k->min || v > k->max)
			return key_error(w, "must be an integer in %" PRIu64 "..%" PRIu64 ", got '%s'",
					 k->min, k->max, value);
		if (k->type == T_VCPUS)
			*(unsigned *)field = (unsigned)v;
		else
			*(uint64_t *)field = v;
		break;
	case T_BACKEND:
		if (strcmp(value, "anonymous") == 0)
			cfg->backend = MEM_BACKEND_ANON;
		else if (strcmp(value, "memfd") == 0)
			cfg->backend = MEM_BACKEND_MEMFD;
		else
			return key_error(w, "unknown value '%s' (expected anonymous or memfd)", value);
		break;
	case T_KIND:
		if (strcmp(value, "hello") == 0)
			cfg->workload = WORKLOAD_HELLO;
		else if (strcmp(value, "idle") == 0)
			cfg->workload = WORKLOAD_IDLE;
		else if (strcmp(value, "dirty") == 0)
			cfg->workload = WORKLOAD_DIRTY;
		else
			return key_error(w, "unknown value '%s' (expected hello, idle or dirty)",
					 value);
		break;
	}
	if (k->origin_off >= 0) {
		struct config_origin *o = (struct config_origin *)((char *)cfg + k->origin_off);
		snprintf(o->file, sizeof(o->file), "%s", w->file);
		o->line = w->line;
	}
	return 0;
}

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
	snprintf(cfg->firmware_path, sizeof(cfg->firmware_path), "%s", VMM_DEFAULT_FIRMWARE);
	cfg->cmdline[0] = '\0';
	cfg->workload = WORKLOAD_HELLO;
	cfg->working_set = 64 * MiB;
	cfg->dirty_rate = 0;
	cfg->passes = 0;
	cfg->heartbeat_ms = 1000;
	snprintf(cfg->console_output, sizeof(cfg->console_output), "stdout");
	cfg->api_socket[0] = '\0';
	cfg->tls_cert[0] = cfg->tls_key[0] = cfg->tls_ca[0] = '\0';
	origin_default(&cfg->firmware_origin);
	origin_default(&cfg->memory_origin);
	origin_default(&cfg->working_set_origin);
}

/* ------------------------------------------------------------------ */
/* INI parsing                                                          */
/* ------------------------------------------------------------------ */

struct parse_ctx {
	struct vm_config *cfg; /* private copy */
	const char *file;      /* name used in messages and origins */
	char *err;
	size_t errlen;
	int err_line; /* line of the first recorded error, 0 = none */

	/* line source: exactly one of fp / str */
	FILE *fp;
	const char *str;
	int line;       /* current line number (1-based) */
	char *raw;      /* current raw line (getline buffer for files) */
	size_t raw_cap;
	int read_errno; /* I/O error while reading the file */

	/* a line too long for inih's buffer: its value, handed to the handler */
	bool long_pending;
	char *long_value;
};

static void ctx_error(struct parse_ctx *ctx, int line)
{
	if (!ctx->err_line)
		ctx->err_line = line ? line : -1;
}

/* Next raw line without its newline into ctx->raw; false at EOF. */
static bool next_raw_line(struct parse_ctx *ctx, size_t *lenp)
{
	size_t len;

	if (ctx->fp) {
		ssize_t n = getline(&ctx->raw, &ctx->raw_cap, ctx->fp);
		if (n < 0) {
			if (ferror(ctx->fp))
				ctx->read_errno = errno ? errno : EIO;
			return false;
		}
		len = (size_t)n;
		if (memchr(ctx->raw, '\0', len))
			len = strlen(ctx->raw);
	} else {
		const char *nl;

		if (!ctx->str || !*ctx->str)
			return false;
		nl = strchr(ctx->str, '\n');
		len = nl ? (size_t)(nl - ctx->str) : strlen(ctx->str);
		if (len + 1 > ctx->raw_cap) {
			char *p = realloc(ctx->raw, len + 1);
			if (!p) {
				ctx->read_errno = ENOMEM;
				return false;
			}
			ctx->raw = p;
			ctx->raw_cap = len + 1;
		}
		memcpy(ctx->raw, ctx->str, len);
		ctx->raw[len] = '\0';
		ctx->str += nl ? len + 1 : len;
	}
	while (len && (ctx->raw[len - 1] == '\n' || ctx->raw[len - 1] == '\r'))
		ctx->raw[--len] = '\0';
	*lenp = len;
	return true;
}

/* inih's find_chars_or_comment(): stop at one of `chars` or at ';' after whitespace. */
static char *find_chars_or_comment(char *s, const char *chars)
{
	bool was_space = false;

	while (*s && (!chars || !strchr(chars, *s)) && !(was_space && *s == ';')) {
		was_space = isspace((unsigned char)*s);
		s++;
	}
	return s;
}

static void rstrip(char *s)
{
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
}

static char *lskip(char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	return s;
}

/*
 * ini_reader: one call per line, so inih's line numbers are ours. Leading
 * whitespace is removed (no multi-line values). A line too long for inih's
 * buffer is split here: inih gets "key=" and the handler takes the value
 * from ctx->long_value.
 */
static char *ctx_reader(char *str, int num, void *stream)
{
	struct parse_ctx *ctx = stream;
	size_t len;
	char *s;

	ctx->long_pending = false;
	if (num < 8 || !next_raw_line(ctx, &len))
		return NULL;
	ctx->line++;
	s = ctx->raw;
	if (ctx->line == 1 && (unsigned char)s[0] == 0xEF && (unsigned char)s[1] == 0xBB &&
	    (unsigned char)s[2] == 0xBF)
		s += 3;
	s = lskip(s);
	len = strlen(s);

	/* An unknown section is reported at its header, even if it has no keys. */
	if (*s == '[') {
		char *end = find_chars_or_comment(s + 1, "]");
		if (*end == ']') {
			char save = *end;
			*end = '\0';
			if (!known_section(s + 1) && !ctx->err_line) {
				set_error(ctx->err, ctx->errlen, ctx->file, ctx->line,
					  "[%s]: unknown section '%s' (expected vm, firmware, "
					  "workload, console or api)",
					  s + 1, s + 1);
				ctx_error(ctx, ctx->line);
			}
			*end = save;
			if ((size_t)(end - s) + 2 < (size_t)num) {
				/* keep only "[name]": the rest is a comment or junk */
				len = (size_t)(end - s) + 1;
			}
		}
	}

	if (len + 1 < (size_t)num) {
		memcpy(str, s, len);
		str[len] = '\0';
		return str;
	}

	/* Too long for inih. */
	if (*s == ';' || *s == '#') {
		snprintf(str, (size_t)num, "#");
		return str;
	}
	char *end = find_chars_or_comment(s, "=:");
	if (*s != '[' && (*end == '=' || *end == ':')) {
		char *value = end + 1;
		*end = '\0';
		rstrip(s);
		if (strlen(s) + 2 < (size_t)num) {
			char *vend = find_chars_or_comment(value, NULL);
			*vend = '\0';
			value = lskip(value);
			rstrip(value);
			free(ctx->long_value);
			ctx->long_value = strdup(value);
			if (ctx->long_value) {
				snprintf(str, (size_t)num, "%s=", s);
				ctx->long_pending = true;
				return str;
			}
		}
	}
	/* Not representable: make inih report a syntax error on this line. */
	snprintf(str, (size_t)num, "\x01");
	return str;
}

static int ctx_handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *ctx = user;
	struct where w = {
		.file = ctx->file,
		.line = ctx->line,
		.section = section,
		.key = name,
	};
	char tmp[CONFIG_ERR_MAX];
	int rc;

	if (ctx->long_pending)
		value = ctx->long_value;
	if (!*section) {
		if (ctx->err_line)
			return 0;
		set_error(ctx->err, ctx->errlen, ctx->file, ctx->line,
			  "%s: key outside of a section (add a [section] header above it)", name);
		ctx_error(ctx, ctx->line);
		return 0;
	}
	/* Later errors are checked (inih keeps going) but not reported. */
	w.err = ctx->err_line ? tmp : ctx->err;
	w.errlen = ctx->err_line ? sizeof(tmp) : ctx->errlen;
	rc = apply_key(ctx->cfg, &w, value);
	if (rc) {
		ctx_error(ctx, ctx->line);
		return 0;
	}
	return 1;
}

static int run_parse(struct vm_config *cfg, struct parse_ctx *ctx)
{
	struct vm_config *copy = malloc(sizeof(*copy));
	int rc;

	if (!copy) {
		set_error(ctx->err, ctx->errlen, ctx->file, 0, "out of memory");
		return -ENOMEM;
	}
	memcpy(copy, cfg, sizeof(*copy));
	ctx->cfg = copy;

	rc = ini_parse_stream(ctx_reader, ctx, ctx_handler, ctx);

	if (ctx->read_errno) {
		set_error(ctx->err, ctx->errlen, ctx->file, 0, "cannot read config: %s",
			  strerror(ctx->read_errno));
		rc = -ctx->read_errno;
	} else if (rc > 0 && (!ctx->err_line || rc < ctx->err_line)) {
		/* inih rejected a line before any error of ours */
		set_error(ctx->err, ctx->errlen, ctx->file, rc,
			  "syntax error: expected '[section]', 'key = value' or a comment");
		rc = -EINVAL;
	} else if (ctx->err_line) {
		rc = -EINVAL;
	} else if (rc < 0) {
		set_error(ctx->err, ctx->errlen, ctx->file, 0, "cannot parse config (error %d)",
			  rc);
		rc = -ENOMEM;
	} else {
		memcpy(cfg, copy, sizeof(*cfg));
		rc = 0;
	}
	free(copy);
	free(ctx->raw);
	free(ctx->long_value);
	ctx->raw = NULL;
	ctx->long_value = NULL;
	return rc;
}

int config_load_file(struct vm_config *cfg, const char *path, char *err, size_t errlen)
{
	struct parse_ctx ctx = {.file = path, .err = err, .errlen = errlen};
	struct stat st;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!cfg || !path) {
		set_error(err, errlen, NULL, 0, "config: no file given");
		return -EINVAL;
	}
	ctx.fp = fopen(path, "re");
	if (!ctx.fp) {
		rc = -errno;
		set_error(err, errlen, path, 0, "cannot open config: %s", strerror(-rc));
		return rc;
	}
	if (fstat(fileno(ctx.fp), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(ctx.fp);
		set_error(err, errlen, path, 0, "cannot read config: %s", strerror(EISDIR));
		return -EISDIR;
	}
	rc = run_parse(cfg, &ctx);
	fclose(ctx.fp);
	return rc;
}

int config_load_string(struct vm_config *cfg, const char *ini, const char *origin, char *err,
		       size_t errlen)
{
	struct parse_ctx ctx = {.file = origin ? origin : "<string>", .err = err, .errlen = errlen};

	if (err && errlen)
		err[0] = '\0';
	if (!cfg || !ini) {
		set_error(err, errlen, ctx.file, 0, "no config text given");
		return -EINVAL;
	}
	ctx.str = ini;
	return run_parse(cfg, &ctx);
}

/* ------------------------------------------------------------------ */
/* --set                                                                */
/* ------------------------------------------------------------------ */

int config_set(struct vm_config *cfg, const char *assignment, char *err, size_t errlen)
{
	char buf[CONFIG_CMDLINE_MAX + PATH_MAX];
	char *eq, *dot = NULL, *section, *key, *value;

	if (err && errlen)
		err[0] = '\0';
	if (!cfg || !assignment) {
		set_error(err, errlen, "--set", 0, "expected section.key=value");
		return -EINVAL;
	}
	if (strlen(assignment) >= sizeof(buf)) {
		set_error(err, errlen, "--set", 0, "assignment is too long (%zu characters)",
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
		set_error(err, errlen, "--set", 0, "expected section.key=value, got '%s'",
			  assignment);
		return -EINVAL;
	}
	*dot = '\0';
	section = lskip(buf);
	rstrip(section);
	key = lskip(dot + 1);
	rstrip(key);
	value = lskip(eq + 1);
	rstrip(value);
	if (!*section || !*key) {
		set_error(err, errlen, "--set", 0, "expected section.key=value, got '%s'",
			  assignment);
		return -EINVAL;
	}
	struct where w = {
		.file = "--set", .line = 0, .section = section, .key = key, .err = err, .errlen = errlen,
	};
	return apply_key(cfg, &w, value);
}

/* ------------------------------------------------------------------ */
/* validate                                                             */
/* ------------------------------------------------------------------ */

int config_validate(const struct vm_config *cfg, char *err, size_t errlen)
{
	char a[32], b[32], where[PATH_MAX + 64];
	struct stat st;

	if (err && errlen)
		err[0] = '\0';
	if (cfg->workload == WORKLOAD_DIRTY &&
	    (cfg->working_set > cfg->memory ||
	     cfg->memory - cfg->working_set < CONFIG_FIRMWARE_RESERVE)) {
		if (cfg->memory_origin.line > 0)
			snprintf(where, sizeof(where), " (set at %s:%d)", cfg->memory_origin.file,
				 cfg->memory_origin.line);
		else
			snprintf(where, sizeof(where), " (from %s)", cfg->memory_origin.file);
		set_error(err, errlen, cfg->working_set_origin.file, cfg->working_set_origin.line,
			  "[workload] working_set: %s plus 4M reserved for firmware, page tables, "
			  "device tree and stacks does not fit in [vm] memory %s%s",
			  fmt_size(a, sizeof(a), cfg->working_set),
			  fmt_size(b, sizeof(b), cfg->memory), where);
		return -EINVAL;
	}

	const char *why = NULL;
	if (stat(cfg->firmware_path, &st) != 0)
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (access(cfg->firmware_path, R_OK) != 0)
		why = strerror(errno);
	if (why) {
		set_error(err, errlen, cfg->firmware_origin.file, cfg->firmware_origin.line,
			  "[firmware] path: cannot read '%s': %s", cfg->firmware_path, why);
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
	out_printf(&o, "\n[firmware]\n");
	out_printf(&o, "path = %s\n", cfg->firmware_path);
	out_printf(&o, "cmdline = %s\n", cfg->cmdline);
	out_printf(&o, "\n[workload]\n");
	out_printf(&o, "kind = %s\n", workload_kind_name(cfg->workload));
	out_printf(&o, "working_set = %" PRIu64 "\n", cfg->working_set);
	out_printf(&o, "dirty_rate = %" PRIu64 "\n", cfg->dirty_rate);
	out_printf(&o, "passes = %" PRIu64 "\n", cfg->passes);
	out_printf(&o, "heartbeat_ms = %" PRIu64 "\n", cfg->heartbeat_ms);
	out_printf(&o, "\n[console]\n");
	out_printf(&o, "output = %s\n", cfg->console_output);
	out_printf(&o, "\n[api]\n");
	out_printf(&o, "socket = %s\n", cfg->api_socket);
	/* [migration] names this host's key files: not part of what travels. */
	if (o.overflow) {
		buf[0] = '\0';
		return -ENOSPC;
	}
	return (int)o.used;
}
