/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_ini.c - reading a config as INI text (libinih), from a file or a
 * string, every key through config_apply_key() (config_keys.c).
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
 * A file is read whole first (file_read_max(): a regular file of at most
 * CONFIG_FILE_MAX bytes), then parsed like a string; a line longer than
 * CONFIG_LINE_MAX, or one with a NUL byte in it (which would cut a value
 * short without a word), stops the parse with an error at that line. So no path
 * (/dev/zero, a FIFO, a file that keeps growing) makes us read or allocate
 * without bound, or wait for a writer.
 *
 * Loading works on a private copy that is committed only on success, so a
 * failed config_load_*() leaves the caller's config untouched; a layer's
 * struct (config_layer.h) likewise, and its keys are read in the same pass,
 * so the first error of the text is the one reported, whoever owns it.
 */
#include "config.h"
#include "config_keys.h"
#include "file_read.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

struct parse_ctx {
	struct vm_config *cfg;		    /* private copy */
	const struct config_layer *host_in; /* the caller's layer, or NULL */
	struct config_layer host;	    /* the layer over a private copy of its struct */
	const char *file;		    /* name used in messages and origins */
	char *err;
	size_t errlen;
	int err_line; /* line of the first recorded error, 0 = none */

	/* line source: the text [str, end), a file's may hold NULs */
	const char *str;
	const char *end;
	int line;  /* current line number (1-based) */
	char *raw; /* current raw line */
	size_t raw_cap;
	int read_errno; /* out of memory while reading */

	/* a line too long for inih's buffer: its value, handed to the handler */
	bool long_pending;
	char *long_value;
	char section[64]; /* the last section header seen, for a NUL's message */
};

static void ctx_error(struct parse_ctx *ctx, int line)
{
	if (!ctx->err_line)
		ctx->err_line = line ? line : -1;
}

/* A NUL byte at `off` of line `line` (at text): the error, naming the key of "key = ...". */
static void nul_error(struct parse_ctx *ctx, int line, const char *text, size_t off)
{
	char key[64];
	const char *p = text, *eq;
	size_t n;

	while (p < text + off && isspace((unsigned char)*p))
		p++;
	eq = memchr(p, '=', off - (size_t)(p - text));
	if (!eq)
		eq = memchr(p, ':', off - (size_t)(p - text));
	n = eq ? (size_t)(eq - p) : 0;
	while (n && isspace((unsigned char)p[n - 1]))
		n--;
	if (*p != '[' && *p != ';' && *p != '#' && n && n < sizeof(key)) {
		memcpy(key, p, n);
		key[n] = '\0';
		config_error(ctx->err, ctx->errlen, ctx->file, line,
			     "[%s] %s: a NUL byte in the value (byte %zu of the line)",
			     ctx->section[0] ? ctx->section : "?", key, off + 1);
	} else {
		config_error(ctx->err, ctx->errlen, ctx->file, line,
			     "a NUL byte in the line (byte %zu): a config is text", off + 1);
	}
	ctx_error(ctx, line);
}

/*
 * Next raw line without its newline into ctx->raw; false at the end, or at
 * a line longer than CONFIG_LINE_MAX or one with a NUL byte (recorded as
 * the error at its line).
 */
static bool next_raw_line(struct parse_ctx *ctx, size_t *lenp)
{
	const char *nl, *nul;
	size_t len, text;

	if (!ctx->str || ctx->str >= ctx->end)
		return false;
	nl = memchr(ctx->str, '\n', (size_t)(ctx->end - ctx->str));
	len = nl ? (size_t)(nl - ctx->str) : (size_t)(ctx->end - ctx->str);
	text = len;
	while (text && ctx->str[text - 1] == '\r')
		text--;
	if (text > CONFIG_LINE_MAX) {
		if (!ctx->err_line) {
			config_error(ctx->err, ctx->errlen, ctx->file, ctx->line + 1,
				     "line is %zu bytes long, the limit is %d bytes", text,
				     CONFIG_LINE_MAX);
			ctx_error(ctx, ctx->line + 1);
		}
		return false;
	}
	nul = memchr(ctx->str, '\0', len);
	if (nul) {
		if (!ctx->err_line)
			nul_error(ctx, ctx->line + 1, ctx->str, (size_t)(nul - ctx->str));
		return false;
	}
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
	s = config_lskip(s);
	len = strlen(s);

	/* An unknown section is reported at its header, even if it has no keys. */
	if (*s == '[') {
		char *end = find_chars_or_comment(s + 1, "]");
		if (*end == ']') {
			char save = *end;
			*end = '\0';
			snprintf(ctx->section, sizeof(ctx->section), "%s", s + 1);
			if (!config_known_section(&ctx->host, s + 1) && !ctx->err_line) {
				char list[CONFIG_SECTIONS_LIST_MAX];

				config_error(ctx->err, ctx->errlen, ctx->file, ctx->line,
					     "[%s]: unknown section '%s' (expected %s)", s + 1,
					     s + 1,
					     config_sections_list(&ctx->host, list, sizeof(list)));
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
		config_rstrip(s);
		if (strlen(s) + 2 < (size_t)num) {
			char *vend = find_chars_or_comment(value, NULL);
			*vend = '\0';
			value = config_lskip(value);
			config_rstrip(value);
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
	struct config_where w = {
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
		config_error(ctx->err, ctx->errlen, ctx->file, ctx->line,
			     "%s: key outside of a section (add a [section] header above it)",
			     name);
		ctx_error(ctx, ctx->line);
		return 0;
	}
	/* Later errors are checked (inih keeps going) but not reported. */
	w.err = ctx->err_line ? tmp : ctx->err;
	w.errlen = ctx->err_line ? sizeof(tmp) : ctx->errlen;
	rc = config_apply_key(ctx->cfg, &ctx->host, &w, value);
	if (rc) {
		ctx_error(ctx, ctx->line);
		return 0;
	}
	return 1;
}

static int run_parse(struct vm_config *cfg, struct parse_ctx *ctx)
{
	const struct config_layer *in = ctx->host_in;
	bool layer = in && in->keys;
	struct vm_config *copy = malloc(sizeof(*copy));
	void *host_copy = layer ? calloc(1, in->size ? in->size : 1) : NULL;
	int rc;

	if (!copy || (layer && !host_copy)) {
		free(copy);
		free(host_copy);
		config_error(ctx->err, ctx->errlen, ctx->file, 0, "out of memory");
		return -ENOMEM;
	}
	memcpy(copy, cfg, sizeof(*copy));
	ctx->cfg = copy;
	if (layer) {
		/* base NULL: a zeroed copy, checked and dropped */
		if (in->base)
			memcpy(host_copy, in->base, in->size);
		ctx->host = *in;
		ctx->host.base = host_copy;
	}

	rc = ini_parse_stream(ctx_reader, ctx, ctx_handler, ctx);

	if (ctx->read_errno) {
		config_error(ctx->err, ctx->errlen, ctx->file, 0, "cannot read config: %s",
			     strerror(ctx->read_errno));
		rc = -ctx->read_errno;
	} else if (rc > 0 && (!ctx->err_line || rc < ctx->err_line)) {
		/* inih rejected a line before any error of ours */
		config_error(ctx->err, ctx->errlen, ctx->file, rc,
			     "syntax error: expected '[section]', 'key = value' or a comment");
		rc = -EINVAL;
	} else if (ctx->err_line) {
		rc = -EINVAL;
	} else if (rc < 0) {
		config_error(ctx->err, ctx->errlen, ctx->file, 0, "cannot parse config (error %d)",
			     rc);
		rc = -ENOMEM;
	} else {
		memcpy(cfg, copy, sizeof(*cfg));
		if (layer && in->base)
			memcpy(in->base, host_copy, in->size);
		rc = 0;
	}
	free(copy);
	free(host_copy);
	free(ctx->raw);
	free(ctx->long_value);
	ctx->raw = NULL;
	ctx->long_value = NULL;
	return rc;
}

int config_load_file(struct vm_config *cfg, const char *path, char *err, size_t errlen)
{
	return config_load_file_with(cfg, NULL, path, err, errlen);
}

int config_load_file_with(struct vm_config *cfg, const struct config_layer *host, const char *path,
			  char *err, size_t errlen)
{
	struct parse_ctx ctx = {.file = path, .err = err, .errlen = errlen, .host_in = host};
	char why[128], *text;
	size_t len;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!cfg || !path) {
		config_error(err, errlen, NULL, 0, "config: no file given");
		return -EINVAL;
	}
	rc = file_read_max(path, CONFIG_FILE_MAX, &text, &len, why, sizeof(why));
	if (rc) {
		config_error(err, errlen, path, 0, "cannot %s config: %s",
			     rc == -ENOENT || rc == -EACCES ? "open" : "read", why);
		return rc;
	}
	ctx.str = text;
	ctx.end = text + len;
	rc = run_parse(cfg, &ctx);
	free(text);
	return rc;
}

int config_load_text(struct vm_config *cfg, const char *text, size_t len, const char *origin,
		     char *err, size_t errlen)
{
	return config_load_text_with(cfg, NULL, text, len, origin, err, errlen);
}

int config_load_text_with(struct vm_config *cfg, const struct config_layer *host, const char *text,
			  size_t len, const char *origin, char *err, size_t errlen)
{
	struct parse_ctx ctx = {
	    .file = origin ? origin : "<string>", .err = err, .errlen = errlen, .host_in = host};

	if (err && errlen)
		err[0] = '\0';
	if (!cfg || !text) {
		config_error(err, errlen, ctx.file, 0, "no config text given");
		return -EINVAL;
	}
	ctx.str = text;
	ctx.end = text + len;
	return run_parse(cfg, &ctx);
}

int config_load_string(struct vm_config *cfg, const char *ini, const char *origin, char *err,
		       size_t errlen)
{
	return config_load_text(cfg, ini, ini ? strlen(ini) : 0, origin, err, errlen);
}
