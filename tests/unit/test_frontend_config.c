/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_frontend_config.c - the front end's config sections ([console],
 * [api], [log], [migration] tls_*: frontend/frontend_config.h) and the seam
 * they pass through (config_layer.h): one file, one --set, one pass, the
 * first error reported once, and the VM description written byte for byte
 * as when the machine held [console] output and [api] socket.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "frontend_config.h"

#ifndef TEST_DATA_DIR
#error "TEST_DATA_DIR must be defined"
#endif

#define GOOD_CFG TEST_DATA_DIR "/config/good.cfg"

#define assert_contains(hay, needle)                                                               \
	do {                                                                                       \
		if (!strstr((hay), (needle)))                                                      \
			fail_msg("expected \"%s\" in \"%s\"", (needle), (hay));                    \
	} while (0)

struct both {
	struct vm_config cfg;
	struct frontend_config fe;
	char err[CONFIG_ERR_MAX];
};

static struct both *new_both(void)
{
	struct both *b = calloc(1, sizeof(*b));

	assert_non_null(b);
	config_defaults(&b->cfg);
	frontend_config_defaults(&b->fe);
	return b;
}

static int load(struct both *b, const char *text)
{
	return frontend_config_load_text(&b->cfg, &b->fe, text, strlen(text), "t", b->err,
					 sizeof(b->err));
}

static void test_defaults(void **state)
{
	struct both *b = new_both();

	(void)state;
	assert_string_equal(b->fe.console_output, "stdout");
	assert_int_equal(b->fe.console_input, CONSOLE_INPUT_AUTO);
	assert_string_equal(b->fe.api_socket, "");
	assert_string_equal(b->fe.tls_cert, "");
	assert_string_equal(b->fe.tls_key, "");
	assert_string_equal(b->fe.tls_ca, "");
	assert_int_equal(b->fe.log_format, LOG_FORMAT_TEXT);
	assert_int_equal(b->fe.log_level, LOG_LEVEL_INFO);
	free(b);
}

/* One file, both layers: each key lands in its owner's struct. */
static void test_good_file(void **state)
{
	struct both *b = new_both();

	(void)state;
	assert_int_equal(
	    frontend_config_load_file(&b->cfg, &b->fe, GOOD_CFG, b->err, sizeof(b->err)), 0);
	assert_string_equal(b->fe.console_output, "/tmp/vmm-console.log");
	assert_string_equal(b->fe.api_socket, "/tmp/vmm-test.sock");
	assert_string_equal(b->cfg.name, "test-vm_1.0");
	assert_int_equal(b->cfg.vcpus, 4);
	assert_int_equal(load(b, "[migration]\ntls_cert = /c.pem\nallow_taps = tap*\n"
				 "tls_key = /k.pem\ntls_ca = /ca.pem\n[log]\nformat = json\n"
				 "level = debug\n[console]\ninput = none\n"),
			 0);
	assert_string_equal(b->fe.tls_cert, "/c.pem");
	assert_string_equal(b->fe.tls_key, "/k.pem");
	assert_string_equal(b->fe.tls_ca, "/ca.pem");
	assert_string_equal(b->cfg.allow_taps, "tap*");
	assert_int_equal(b->fe.log_format, LOG_FORMAT_JSON);
	assert_int_equal(b->fe.log_level, LOG_LEVEL_DEBUG);
	assert_int_equal(b->fe.console_input, CONSOLE_INPUT_NONE);
	free(b);
}

struct bad_case {
	const char *text;
	const char *want; /* the whole message */
};

/* The machine's one-line errors, for the front end's keys too; nothing changes on an error. */
static void test_bad_text(void **state)
{
	static const struct bad_case cases[] = {
	    {"[api]\nsockett = /x\n",
	     "t:2: [api] sockett: unknown key 'sockett' (expected socket)"},
	    {"[console]\noutput =\n", "t:2: [console] output: must not be empty"},
	    {"[console]\ninput = tty\n",
	     "t:2: [console] input: unknown value 'tty' (expected auto, stdin or none)"},
	    {"[log]\nlevel = loud\n",
	     "t:2: [log] level: unknown value 'loud' (expected error, warn, info or debug)"},
	    /* a shared section lists both layers' keys */
	    {"[migration]\ntls = on\n",
	     "t:2: [migration] tls: unknown key 'tls' (expected tls_cert, tls_key, tls_ca, "
	     "allow_disk_dirs, allow_taps)"},
	    /* every section of both, in the order the file always listed them */
	    {"[bogus]\n",
	     "t:1: [bogus]: unknown section 'bogus' (expected vm, firmware, "
	     "workload, console, api, migration, disk, net, sandbox, snapshot or log)"},
	    /* the first error wins, whoever owns its key; it is reported once */
	    {"[api]\nsocket = a\tb\n[vm]\nvcpus = 0\n",
	     "t:2: [api] socket: control character (0x09) in value"},
	    {"[vm]\nvcpus = 0\n[log]\nlevel = loud\n",
	     "t:2: [vm] vcpus: must be an integer in 1..64, got '0'"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct both *b = new_both(), *orig = new_both();

		assert_int_equal(load(b, cases[i].text), -EINVAL);
		assert_string_equal(b->err, cases[i].want);
		assert_memory_equal(&b->fe, &orig->fe, sizeof(b->fe));
		assert_memory_equal(&b->cfg, &orig->cfg, sizeof(b->cfg));
		free(b);
		free(orig);
	}
}

static void test_set(void **state)
{
	struct both *b = new_both();
	char *e = b->err;
	size_t n = sizeof(b->err);

	(void)state;
	assert_int_equal(frontend_config_set(&b->cfg, &b->fe, "api.socket=/s", e, n), 0);
	assert_string_equal(b->fe.api_socket, "/s");
	assert_int_equal(frontend_config_set(&b->cfg, &b->fe, "api.socket=", e, n), 0);
	assert_string_equal(b->fe.api_socket, "");
	assert_int_equal(frontend_config_set(&b->cfg, &b->fe, "migration.tls_ca=", e, n), 0);
	assert_int_equal(frontend_config_set(&b->cfg, &b->fe, "log.format=json", e, n), 0);
	assert_int_equal(b->fe.log_format, LOG_FORMAT_JSON);
	assert_int_equal(frontend_config_set(&b->cfg, &b->fe, "log.level=error", e, n), 0);
	assert_int_equal(b->fe.log_level, LOG_LEVEL_ERROR);
	assert_int_equal(frontend_config_set(&b->cfg, &b->fe, "log.format=xml", e, n), -EINVAL);
	assert_string_equal(e, "--set: [log] format: unknown value 'xml' (expected text or json)");
	assert_int_equal(frontend_config_set(&b->cfg, &b->fe, "log.level=verbose", e, n), -EINVAL);
	assert_string_equal(e, "--set: [log] level: unknown value 'verbose' (expected error, "
			       "warn, info or debug)");
	assert_int_equal(frontend_config_set(&b->cfg, &b->fe, "log.timestamps=on", e, n), -EINVAL);
	assert_string_equal(e, "--set: [log] timestamps: unknown key 'timestamps' (expected "
			       "format, level)");
	assert_int_equal(frontend_config_set(&b->cfg, &b->fe, "api.path=/x", e, n), -EINVAL);
	assert_string_equal(e, "--set: [api] path: unknown key 'path' (expected socket)");
	assert_int_equal(frontend_config_set(&b->cfg, &b->fe, "nope.x=1", e, n), -EINVAL);
	assert_string_equal(e, "--set: [nope] x: unknown section 'nope' (expected vm, firmware, "
			       "workload, console, api, migration, disk, net, sandbox, snapshot "
			       "or log)");
	/* the machine's keys go through the same call */
	assert_int_equal(frontend_config_set(&b->cfg, &b->fe, "vm.vcpus=3", e, n), 0);
	assert_int_equal(b->cfg.vcpus, 3);
	assert_int_equal(b->fe.log_format, LOG_FORMAT_JSON); /* untouched by the errors */
	/* fe NULL: checked, kept nowhere */
	assert_int_equal(frontend_config_set(&b->cfg, NULL, "log.level=debug", e, n), 0);
	assert_int_equal(frontend_config_set(&b->cfg, NULL, "log.level=loud", e, n), -EINVAL);
	free(b);
}

static void test_validate_tls(void **state)
{
	struct both *b = new_both();

	(void)state;
	assert_int_equal(frontend_config_validate(&b->fe, b->err, sizeof(b->err)), 0);
	assert_int_equal(load(b, "[migration]\ntls_cert = /etc/hostname\n"), 0);
	assert_int_equal(frontend_config_validate(&b->fe, b->err, sizeof(b->err)), -EINVAL);
	assert_string_equal(b->err, "[migration] tls_cert, tls_key and tls_ca go together: "
				    "tls_key and tls_ca not set");
	assert_int_equal(load(b, "[migration]\ntls_key = /k\ntls_ca = /ca\n"), 0);
	assert_int_equal(frontend_config_validate(&b->fe, b->err, sizeof(b->err)), 0);
	free(b);
}

/*
 * The VM description (VM_DESC's config, a snapshot's CONFIG) must not change
 * with the split: these are the bytes config_format() wrote for a default
 * VM when [console] and [api] were the machine's.
 */
static const char default_description[] = "[vm]\n"
					  "name = vmm\n"
					  "memory = 268435456\n"
					  "vcpus = 1\n"
					  "memslot_size = 536870912\n"
					  "memory_backend = anonymous\n"
					  "tsc_khz = 0\n"
					  "cpu_vendor = host\n"
					  "\n[firmware]\n"
					  "cmdline = \n"
					  "initrd = \n"
					  "\n[workload]\n"
					  "kind = hello\n"
					  "working_set = 67108864\n"
					  "dirty_rate = 0\n"
					  "passes = 0\n"
					  "min_pass_ms = 0\n"
					  "heartbeat_ms = 1000\n"
					  "fill = zero\n"
					  "order = seq\n"
					  "latency = false\n"
					  "\n[console]\n"
					  "output = stdout\n"
					  "\n[api]\n"
					  "socket = \n";

static void test_description_bytes(void **state)
{
	struct both *b = new_both(), *back = new_both();
	struct config_layer l = frontend_config_layer(&b->fe);
	char buf[16384];
	int n;

	(void)state;
	n = config_format_with(&b->cfg, &l, buf, sizeof(buf));
	assert_int_equal(n, (int)sizeof(default_description) - 1);
	assert_string_equal(buf, default_description);
	/* only [console] output and [api] socket travel: no TLS file, no input, no log */
	assert_int_equal(load(b, "[console]\noutput = /var/log/x;y.log\ninput = none\n[api]\n"
				 "socket = /run/s.sock\n[migration]\ntls_cert = /c\ntls_key = /k\n"
				 "tls_ca = /a\n[log]\nlevel = debug\n[disk]\npath = /d.img\n"),
			 0);
	n = config_format_with(&b->cfg, &l, buf, sizeof(buf));
	assert_true(n > 0);
	assert_contains(buf, "latency = false\n\n[console]\noutput = /var/log/x;y.log\n\n[api]\n"
			     "socket = /run/s.sock\n\n[disk]\npath = /d.img\n");
	assert_null(strstr(buf, "tls"));
	assert_null(strstr(buf, "input"));
	assert_null(strstr(buf, "[log]"));
	/* a restore reads it back whole */
	assert_int_equal(load(back, buf), 0);
	assert_string_equal(back->fe.console_output, "/var/log/x;y.log");
	assert_string_equal(back->fe.api_socket, "/run/s.sock");
	assert_string_equal(back->cfg.disk_path, "/d.img");
	/* exact fit, and one byte short */
	assert_int_equal(config_format_with(&b->cfg, &l, buf, (size_t)n + 1), n);
	assert_int_equal(config_format_with(&b->cfg, &l, buf, (size_t)n), -ENOSPC);
	free(b);
	free(back);
}

/*
 * A target's view: the source's description is read with the layer over
 * no struct (base NULL), so its front-end sections are checked and
 * dropped; without the layer they are unknown sections.
 */
static void test_target_reads_description(void **state)
{
	struct both *src = new_both(), *dst = new_both();
	struct config_layer l = frontend_config_layer(&src->fe),
			    check = frontend_config_layer(NULL);
	char buf[16384];
	int n;

	(void)state;
	assert_int_equal(load(src, "[api]\nsocket = /src.sock\n[vm]\nvcpus = 2\n"), 0);
	n = config_format_with(&src->cfg, &l, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(config_load_text_with(&dst->cfg, &check, buf, (size_t)n,
					       "migration stream", dst->err, sizeof(dst->err)),
			 0);
	assert_int_equal(dst->cfg.vcpus, 2);
	assert_string_equal(dst->fe.api_socket, ""); /* this host's, untouched */
	/* a bad value is still refused where it stands */
	assert_int_equal(
	    config_load_string(&dst->cfg, buf, "migration stream", dst->err, sizeof(dst->err)),
	    -EINVAL);
	assert_contains(dst->err, "unknown section 'console'");
	strcpy(strstr(buf, "output = stdout"), "output = \n");
	assert_int_equal(config_load_text_with(&dst->cfg, &check, buf, strlen(buf),
					       "migration stream", dst->err, sizeof(dst->err)),
			 -EINVAL);
	assert_contains(dst->err, "[console] output: must not be empty");
	free(src);
	free(dst);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_good_file),
	    cmocka_unit_test(test_bad_text),
	    cmocka_unit_test(test_set),
	    cmocka_unit_test(test_validate_tls),
	    cmocka_unit_test(test_description_bytes),
	    cmocka_unit_test(test_target_reads_description),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
