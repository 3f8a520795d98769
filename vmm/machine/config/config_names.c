/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_names.c - the config's values as the words a user writes and
 * reads: the names of every enumerated setting (workload kind, fill and
 * order, memory backend, CPU vendor) and sizes in their shortest exact unit, both ways where the
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
static const char *const mem_backends[] = {
    [MEM_BACKEND_ANON] = "anonymous", [MEM_BACKEND_MEMFD] = "memfd"};
static const char *const cpu_vendors[] = {
    [CPU_VENDOR_HOST] = "host", [CPU_VENDOR_INTEL] = "intel", [CPU_VENDOR_AMD] = "amd"};

const struct enum_names config_workload_kinds = ENUM_NAMES(workload_kinds);
const struct enum_names config_workload_fills = ENUM_NAMES(workload_fills);
const struct enum_names config_workload_orders = ENUM_NAMES(workload_orders);
const struct enum_names config_mem_backends = ENUM_NAMES(mem_backends);
const struct enum_names config_cpu_vendors = ENUM_NAMES(cpu_vendors);

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

const char *mem_backend_name(enum mem_backend b)
{
	return enum_name(config_mem_backends, (unsigned)b);
}

const char *cpu_vendor_name(enum cpu_vendor v)
{
	return enum_name(config_cpu_vendors, (unsigned)v);
}
