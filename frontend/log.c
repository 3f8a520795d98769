/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c - `vmm run`'s log records (log.h): the time, the level, the
 * message made safe for one line, in text or as a JSON object, and one
 * write(2) under the log's lock.
 */
#include "log.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOG_MSG_MAX 4096 /* the formatted message, before escaping */
#define CUT_MARK    "..."

/* For a NULL log: the defaults, and no VM name (so nothing per VM lives here). */
static struct vmm_log fallback = {
    .ready = true,
    .format = LOG_FORMAT_TEXT,
    .level = LOG_LEVEL_INFO,
    .fd = STDERR_FILENO,
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

void log_init(struct vmm_log *log, enum log_format format, enum log_level level, int fd)
{
	log->ready = true;
	log->format = format;
	log->level = level;
	log->fd = fd;
	log->vm[0] = '\0';
	pthread_mutex_init(&log->lock, NULL);
}

static struct vmm_log *usable(struct vmm_log *log)
{
	return log && log->ready ? log : &fallback;
}

void log_destroy(struct vmm_log *log)
{
	if (log && log->ready)
		pthread_mutex_destroy(&log->lock);
	if (log)
		log->ready = false;
}

void log_set_vm(struct vmm_log *log, const char *name)
{
	if (!log || !log->ready)
		return;
	pthread_mutex_lock(&log->lock);
	snprintf(log->vm, sizeof(log->vm), "%s", name ? name : "");
	pthread_mutex_unlock(&log->lock);
}

bool log_enabled(const struct vmm_log *log, enum log_level l)
{
	return l <= (log && log->ready ? log->level : fallback.level);
}

/* ------------------------------------------------------------------ */
/* the formatter                                                        */
/* ------------------------------------------------------------------ */

/*
 * Days since 1970-01-01 to a civil date (proleptic Gregorian). By hand,
 * not gmtime_r(): glibc's reads the time zone files on its first call,
 * which a thread under its seccomp filter may not open.
 */
static void civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d)
{
	int64_t era, yy;
	unsigned doe, yoe, doy, mp;

	z += 719468; /* from 0000-03-01: leap days fall at the end of a year */
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);			     /* day of the 400-year era */
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* its year */
	yy = (int64_t)yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100); /* day of the March-based year */
	mp = (5 * doy + 2) / 153;		       /* its month, March = 0 */
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int)(yy + (*m <= 2));
}

void log_format_time(char *buf, size_t len, uint64_t realtime_ns)
{
	uint64_t s = realtime_ns / 1000000000u;
	unsigned ms = (unsigned)(realtime_ns / 1000000u % 1000u);
	unsigned sod = (unsigned)(s % 86400u), mon, day;
	int year;

	civil_from_days((int64_t)(s / 86400u), &year, &mon, &day);
	snprintf(buf, len, "%04d-%02u-%02uT%02u:%02u:%02u.%03uZ", year, mon, day, sod / 3600,
		 sod / 60 % 60, sod % 60, ms);
}

/* The length of the valid UTF-8 sequence at s (1..4), or 0: no overlongs, surrogates, > U+10FFFF.
 */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/*
 * Copies `in` into out (cap bytes with the NUL) as valid UTF-8, invalid
 * bytes as "\xNN"; `text` also escapes control characters. Stops before
 * a piece that does not fit and then returns true (cut).
 */
static bool sanitize(char *out, size_t cap, const char *in, bool text, size_t *used)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t o = 0;
	bool cut = false;

	while (*s) {
		char esc[8];
		const char *piece = esc;
		size_t n = utf8_len(s), plen;

		if (!n) {
			snprintf(esc, sizeof(esc), "\\x%02x", *s);
			n = 1;
		} else if (text && (*s < 0x20 || *s == 0x7f)) {
			if (*s == '\n')
				strcpy(esc, "\\n");
			else if (*s == '\t')
				strcpy(esc, "\\t");
			else if (*s == '\r')
				strcpy(esc, "\\r");
			else
				snprintf(esc, sizeof(esc), "\\x%02x", *s);
		} else {
			piece = (const char *)s;
		}
		plen = piece == esc ? strlen(esc) : n;
		if (o + plen >= cap) {
			cut = true;
			break;
		}
		memcpy(out + o, piece, plen);
		o += plen;
		s += n;
	}
	if (cap)
		out[o < cap ? o : cap - 1] = '\0';
	*used = o;
	return cut;
}

static size_t format_text(char *buf, size_t len, const char *ts, enum log_level l, const char *vm,
			  bool vm_prefix, const char *msg)
{
	/* room for the cut mark and the newline, always */
	size_t room = len - sizeof(CUT_MARK) - 1, o, n;
	bool cut = false;

	o = (size_t)snprintf(buf, room, "%s %-5s vmm: ", ts, log_level_name(l));
	if (o >= room)
		o = room - 1;
	if (vm_prefix && vm && vm[0]) {
		cut = sanitize(buf + o, room - o, vm, true, &n);
		o += n;
		if (!cut && o + 2 < room) {
			memcpy(buf + o, ": ", 2);
			o += 2;
		}
	}
	if (!cut) {
		cut = sanitize(buf + o, room - o, msg, true, &n);
		o += n;
	}
	if (cut) {
		memcpy(buf + o, CUT_MARK, sizeof(CUT_MARK) - 1);
		o += sizeof(CUT_MARK) - 1;
	}
	buf[o++] = '\n';
	buf[o] = '\0';
	return o;
}

/* The object, printed into buf without the newline; false when it does not fit or no memory. */
static bool print_json(char *buf, size_t len, const char *ts, enum log_level l, const char *vm,
		       const char *msg)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o && cJSON_AddStringToObject(o, "ts", ts) &&
		  cJSON_AddStringToObject(o, "level", log_level_name(l)) &&
		  (!vm || !vm[0] || cJSON_AddStringToObject(o, "vm", vm)) &&
		  cJSON_AddStringToObject(o, "msg", msg) &&
		  cJSON_PrintPreallocated(o, buf, (int)len, false);

	cJSON_Delete(o);
	return ok;
}

static size_t format_json(char *buf, size_t len, const char *ts, enum log_level l, const char *vm,
			  const char *msg)
{
	char clean_vm[CONFIG_NAME_MAX * 4 + 1], clean[LOG_MSG_MAX + sizeof(CUT_MARK)];
	size_t n, cap = sizeof(clean) - sizeof(CUT_MARK) + 1;
	bool cut;

	sanitize(clean_vm, sizeof(clean_vm), vm ? vm : "", false, &n);
	/*
	 * Escaping can grow the message up to six times (\u00XX): a message
	 * that does not fit is cut shorter until it does.
	 */
	for (;;) {
		cut = sanitize(clean, cap, msg, false, &n);
		if (cut)
			memcpy(clean + n, CUT_MARK, sizeof(CUT_MARK));
		if (print_json(buf, len - 1, ts, l, clean_vm, clean))
			break;
		if (cap <= 16) {
			/* no memory for the object: say so in a line that is still JSON */
			snprintf(buf, len - 1,
				 "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":\"(log record lost: "
				 "out of memory)\"}",
				 ts, log_level_name(l));
			break;
		}
		cap /= 2;
	}
	n = strlen(buf);
	buf[n++] = '\n';
	buf[n] = '\0';
	return n;
}

size_t log_format_record(char *buf, size_t len, enum log_format format, enum log_level l,
			 uint64_t realtime_ns, const char *vm, bool vm_prefix, const char *msg)
{
	char ts[32];

	log_format_time(ts, sizeof(ts), realtime_ns);
	if (format == LOG_FORMAT_JSON)
		return format_json(buf, len, ts, l, vm, msg ? msg : "");
	return format_text(buf, len, ts, l, vm, vm_prefix, msg ? msg : "");
}

/* ------------------------------------------------------------------ */
/* writing                                                              */
/* ------------------------------------------------------------------ */

static void log_write(struct vmm_log *log, enum log_level l, bool vm_prefix, const char *fmt,
		      va_list ap)
{
	char msg[LOG_MSG_MAX], rec[LOG_RECORD_MAX];
	struct timespec now;
	size_t n, off = 0;

	log = usable(log);
	if (!log_enabled(log, l))
		return;
	if (vsnprintf(msg, sizeof(msg), fmt, ap) >= (int)sizeof(msg))
		memcpy(msg + sizeof(msg) - sizeof(CUT_MARK), CUT_MARK, sizeof(CUT_MARK));
	clock_gettime(CLOCK_REALTIME, &now);
	/* Under the lock: the name read whole, and records written in order, whole. */
	pthread_mutex_lock(&log->lock);
	n = log_format_record(rec, sizeof(rec), log->format, l,
			      (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec, log->vm,
			      vm_prefix, msg);
	while (off < n) {
		ssize_t w = write(log->fd, rec + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break; /* stderr gone: nothing to tell it */
		off += (size_t)w;
	}
	pthread_mutex_unlock(&log->lock);
}

void log_msg(struct vmm_log *log, enum log_level l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_write(log, l, false, fmt, ap);
	va_end(ap);
}

void log_vm(struct vmm_log *log, enum log_level l, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_write(log, l, true, fmt, ap);
	va_end(ap);
}
