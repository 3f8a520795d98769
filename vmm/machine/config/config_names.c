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
#include "config_keys.h"
#include "enum_names.h"
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

/* Each enum's words, indexed by value (config_keys.h): the INI, --set and messages. */
static const char *const workload_kinds[] = {
    [WORKLOAD_HELLO] = "hello", [WORKLOAD_IDLE] = "idle",   [WORKLOAD_DIRTY] = "dirty",
    [WORKLOAD_ECHO] = "echo",	[WORKLOAD_FAULT] = "fault", [WORKLOAD_BLK] = "blk",
    [WORKLOAD_NET] = "net"};
static const char *const workload_fills[] = {
    [WORKLOAD_FILL_ZERO] = "zero", [WORKLOAD_FILL_RANDOM] = "random"};
static const char *const workload_orders[] = {
    [WORKLOAD_ORDER_SEQ] = "seq", [WORKLOAD_ORDER_RANDOM] = "random"};
static const char *const console_inputs[] = {
    [CONSOLE_INPUT_AUTO] = "auto", [CONSOLE_INPUT_STDIN] = "stdin", [CONSOLE_INPUT_NONE] = "none"};
static const char *const mem_backends[] = {
    [MEM_BACKEND_ANON] = "anonymous", [MEM_BACKEND_MEMFD] = "memfd"};
static const char *const cpu_vendors[] = {
    [CPU_VENDOR_HOST] = "host", [CPU_VENDOR_INTEL] = "intel", [CPU_VENDOR_AMD] = "amd"};
static const char *const log_formats[] = {[LOG_FORMAT_TEXT] = "text", [LOG_FORMAT_JSON] = "json"};
static const char *const log_levels[] = {[LOG_LEVEL_ERROR] = "error",
					 [LOG_LEVEL_WARN] = "warn",
					 [LOG_LEVEL_INFO] = "info",
					 [LOG_LEVEL_DEBUG] = "debug"};

const struct enum_names config_workload_kinds = ENUM_NAMES(workload_kinds);
const struct enum_names config_workload_fills = ENUM_NAMES(workload_fills);
const struct enum_names config_workload_orders = ENUM_NAMES(workload_orders);
const struct enum_names config_console_inputs = ENUM_NAMES(console_inputs);
const struct enum_names config_mem_backends = ENUM_NAMES(mem_backends);
const struct enum_names config_cpu_vendors = ENUM_NAMES(cpu_vendors);
const struct enum_names config_log_formats = ENUM_NAMES(log_formats);
const struct enum_names config_log_levels = ENUM_NAMES(log_levels);

const char *workload_kind_name(enum workload_kind k)
{
	return enum_name(config_workload_kinds, (unsigned)k);
}

const char *workload_fill_name(enum workload_fill f)
{
	return enum_name(config_workload_fills, (unsigned)f);
}

const char *workload_order_name(enum workload_order o)
{
	return enum_name(config_workload_orders, (unsigned)o);
}

const char *console_input_name(enum console_input_mode m)
{
	return enum_name(config_console_inputs, (unsigned)m);
}

const char *mem_backend_name(enum mem_backend b)
{
	return enum_name(config_mem_backends, (unsigned)b);
}

const char *cpu_vendor_name(enum cpu_vendor v)
{
	return enum_name(config_cpu_vendors, (unsigned)v);
}

const char *log_format_name(enum log_format f)
{
	return enum_name(config_log_formats, (unsigned)f);
}

const char *log_level_name(enum log_level l)
{
	return enum_name(config_log_levels, (unsigned)l);
}

int log_format_from_name(const char *name)
{
	return enum_value(config_log_formats, name);
}

int log_level_from_name(const char *name)
{
	return enum_value(config_log_levels, name);
}
