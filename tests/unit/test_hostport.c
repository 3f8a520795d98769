/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_hostport.c - the one "host:port" parser (vmm/util/hostport.h) that
 * the CLI, the API and the transport share: the forms it accepts, the ones
 * it refuses, the port range, brackets and buffer lengths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>

#include "hostport.h"

struct good {
	const char *in, *host, *port;
};

static void test_accepted(void **state)
{
	static const struct good cases[] = {
	    {"localhost:7000", "localhost", "7000"},
	    {"127.0.0.1:1", "127.0.0.1", "1"},
	    {"10.231.0.2:65535", "10.231.0.2", "65535"},
	    {"node-3.cluster.example:443", "node-3.cluster.example", "443"},
	    {"h:00080", "h", "00080"}, /* five digits, value 80 */
	    {"[::1]:7000", "::1", "7000"},
	    {"[fe80::1%eth0]:22", "fe80::1%eth0", "22"},
	    {"[2001:db8::17]:8080", "2001:db8::17", "8080"},
	    {"[1.2.3.4]:9", "1.2.3.4", "9"}, /* brackets around anything */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char host[HOSTPORT_HOST_MAX] = "x", port[HOSTPORT_PORT_MAX] = "x";
		int rc = hostport_split(cases[i].in, host, sizeof(host), port, sizeof(port));

		if (rc || strcmp(host, cases[i].host) || strcmp(port, cases[i].port))
			fail_msg("hostport_split(\"%s\") = %d \"%s\" \"%s\"; want 0 \"%s\" \"%s\"",
				 cases[i].in, rc, host, port, cases[i].host, cases[i].port);
		assert_int_equal(hostport_check(cases[i].in), 0);
	}
}

static void test_refused(void **state)
{
	static const char *const cases[] = {
	    "",		  /* nothing */
	    "localhost",  /* no port */
	    ":7000",	  /* no host */
	    "host:",	  /* empty port */
	    "host:0",	  /* port 0 */
	    "host:65536", /* above 65535 */
	    "host:99999",
	    "host:123456", /* six digits */
	    "host:000001", /* six digits even if the value is small */
	    "host:-1",
	    "host:+1",
	    "host: 80",
	    "host:80 ",
	    "host:8o",
	    "host:0x50",
	    "::1:7000", /* unbracketed IPv6 is ambiguous */
	    "a:b:7000",
	    "[::1]",	 /* brackets but no port */
	    "[::1]7000", /* no colon after the bracket */
	    "[::1]:",
	    "[::1:7000", /* unterminated bracket */
	    "[]:7000",	 /* empty host in brackets */
	    "[::1]:70000",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char host[HOSTPORT_HOST_MAX], port[HOSTPORT_PORT_MAX];
		int rc = hostport_split(cases[i], host, sizeof(host), port, sizeof(port));

		if (rc != -EINVAL)
			fail_msg("hostport_split(\"%s\") = %d; want -EINVAL", cases[i], rc);
		assert_int_equal(hostport_check(cases[i]), -EINVAL);
	}
	assert_int_equal(hostport_check(NULL), -EINVAL);
}

static void test_port_range(void **state)
{
	char addr[32];

	(void)state;
	for (unsigned p = 1; p <= 65535; p += p < 100 ? 1 : 997) {
		snprintf(addr, sizeof(addr), "h:%u", p);
		assert_int_equal(hostport_check(addr), 0);
	}
	assert_int_equal(hostport_check("h:65535"), 0);
	assert_int_equal(hostport_check("h:65536"), -EINVAL);
	assert_int_equal(hostport_check("h:00000"), -EINVAL);
}

/* The host may fill HOSTPORT_HOST_MAX - 1 bytes; one more is refused. */
static void test_host_length(void **state)
{
	char addr[HOSTPORT_HOST_MAX + 16], host[HOSTPORT_HOST_MAX], port[HOSTPORT_PORT_MAX];

	(void)state;
	memset(addr, 'a', HOSTPORT_HOST_MAX - 1);
	strcpy(addr + HOSTPORT_HOST_MAX - 1, ":80");
	assert_int_equal(hostport_split(addr, host, sizeof(host), port, sizeof(port)), 0);
	assert_int_equal(strlen(host), HOSTPORT_HOST_MAX - 1);
	assert_string_equal(port, "80");

	memset(addr, 'a', HOSTPORT_HOST_MAX);
	strcpy(addr + HOSTPORT_HOST_MAX, ":80");
	assert_int_equal(hostport_check(addr), -EINVAL);

	/* the same limit inside brackets */
	addr[0] = '[';
	memset(addr + 1, 'a', HOSTPORT_HOST_MAX - 1);
	strcpy(addr + HOSTPORT_HOST_MAX, "]:80");
	assert_int_equal(hostport_check(addr), 0);
	addr[0] = '[';
	memset(addr + 1, 'a', HOSTPORT_HOST_MAX);
	strcpy(addr + HOSTPORT_HOST_MAX + 1, "]:80");
	assert_int_equal(hostport_check(addr), -EINVAL);
}

/* Caller buffers: too small is -EINVAL, never a truncated answer. */
static void test_buffer_lengths(void **state)
{
	char host[16], port[HOSTPORT_PORT_MAX];

	(void)state;
	/* "abcd" needs 5 bytes with the NUL */
	assert_int_equal(hostport_split("abcd:1", host, 5, port, sizeof(port)), 0);
	assert_string_equal(host, "abcd");
	assert_int_equal(hostport_split("abcd:1", host, 4, port, sizeof(port)), -EINVAL);
	/* "65535" needs 6 */
	assert_int_equal(hostport_split("h:65535", host, sizeof(host), port, 6), 0);
	assert_string_equal(port, "65535");
	assert_int_equal(hostport_split("h:65535", host, sizeof(host), port, 5), -EINVAL);
	assert_int_equal(hostport_split("h:1", host, sizeof(host), port, 2), 0);
	assert_string_equal(port, "1");
}

/* "unix:PATH": a vmm on this host; hostport_split() never takes it. */
static void test_unix(void **state)
{
	static char longpath[PATH_MAX + 8];
	char host[HOSTPORT_HOST_MAX], port[HOSTPORT_PORT_MAX];

	(void)state;
	assert_int_equal(hostport_check("unix:/run/vmm/a.sock"), 0);
	assert_int_equal(hostport_check("unix:rel.sock"), 0);
	assert_string_equal(hostport_unix_path("unix:/x"), "/x");
	assert_null(hostport_unix_path("host:80"));
	assert_null(hostport_unix_path(NULL));
	assert_int_equal(hostport_check("unix:"), -EINVAL);
	assert_int_equal(hostport_split("unix:/x", host, sizeof(host), port, sizeof(port)),
			 -EINVAL);
	memcpy(longpath, "unix:", 5);
	memset(longpath + 5, 'a', PATH_MAX);
	assert_int_equal(hostport_check(longpath), -EINVAL);
	longpath[5 + PATH_MAX - 1] = '\0';
	assert_int_equal(hostport_check(longpath), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_accepted),	   cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_port_range),	   cmocka_unit_test(test_host_length),
	    cmocka_unit_test(test_buffer_lengths), cmocka_unit_test(test_unix),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
