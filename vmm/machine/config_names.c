/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_names.c - the config's values as the words a user writes and
 * reads: the names of every enumerated setting (workload kind, fill and
 * order, console input, memory backend, CPU vendor, log format and
 * level) and sizes in their shortest exact unit, both ways where the
 * front end parses them. The INI and --set parsers (config_keys.c) and
 * every place that prints a config use these, so the words are the same
 * everywhere. Pure functions, any thread.
 */
#include "config.h"
#include "size.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

const char *config_fmt_size(char *buf, size_t len, uint64_t v)
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
	case WORKLOAD_ECHO:
		return "echo";
	}
	return "unknown";
}

const char *workload_fill_name(enum workload_fill f)
{
	switch (f) {
	case WORKLOAD_FILL_ZERO:
		return "zero";
	case WORKLOAD_FILL_RANDOM:
		return "random";
	}
	return "unknown";
}

const char *workload_order_name(enum workload_order o)
{
	switch (o) {
	case WORKLOAD_ORDER_SEQ:
		return "seq";
	case WORKLOAD_ORDER_RANDOM:
		return "random";
	}
	return "unknown";
}

const char *console_input_name(enum console_input_mode m)
{
	switch (m) {
	case CONSOLE_INPUT_AUTO:
		return "auto";
	case CONSOLE_INPUT_STDIN:
		return "stdin";
	case CONSOLE_INPUT_NONE:
		return "none";
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

const char *cpu_vendor_name(enum cpu_vendor v)
{
	switch (v) {
	case CPU_VENDOR_HOST:
		return "host";
	case CPU_VENDOR_INTEL:
		return "intel";
	case CPU_VENDOR_AMD:
		return "amd";
	}
	return "unknown";
}

const char *log_format_name(enum log_format f)
{
	switch (f) {
	case LOG_FORMAT_TEXT:
		return "text";
	case LOG_FORMAT_JSON:
		return "json";
	}
	return "unknown";
}

const char *log_level_name(enum log_level l)
{
	switch (l) {
	case LOG_LEVEL_ERROR:
		return "error";
	case LOG_LEVEL_WARN:
		return "warn";
	case LOG_LEVEL_INFO:
		return "info";
	case LOG_LEVEL_DEBUG:
		return "debug";
	}
	return "unknown";
}

int log_format_from_name(const char *name)
{
	for (int f = LOG_FORMAT_TEXT; f <= LOG_FORMAT_JSON; f++)
		if (!strcmp(name, log_format_name((enum log_format)f)))
			return f;
	return -1;
}

int log_level_from_name(const char *name)
{
	for (int l = LOG_LEVEL_ERROR; l <= LOG_LEVEL_DEBUG; l++)
		if (!strcmp(name, log_level_name((enum log_level)l)))
			return l;
	return -1;
}
