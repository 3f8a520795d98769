/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_config.c - the machine's config: file / --set parsing, validation
 * and formatting. The front end's sections are test_frontend_config.c's;
 * good.cfg has them too, so it is read through the front end's layer here.
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
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "frontend_config.h"

#ifndef TEST_DATA_DIR
#error "TEST_DATA_DIR must be defined"
#endif

#define GOOD_CFG TEST_DATA_DIR "/config/good.cfg"
#define M	 (UINT64_C(1) << 20)
#define G	 (UINT64_C(1) << 30)

/* ---- helpers ---- */

#define assert_contains(hay, needle)                                                               \
	do {                                                                                       \
		if (!strstr((hay), (needle)))                                                      \
			fail_msg("expected \"%s\" in \"%s\"", (needle), (hay));                    \
	} while (0)

#define assert_not_contains(hay, needle)                                                           \
	do {                                                                                       \
		if (strstr((hay), (needle)))                                                       \
			fail_msg("did not expect \"%s\" in \"%s\"", (needle), (hay));              \
	} while (0)

/* Writes `text` to a new temp file; the caller unlinks and frees the path. */
static char *write_temp(const char *text)
{
	char *path = strdup("/tmp/vmm-test-config-XXXXXX");
	assert_non_null(path);
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	size_t len = strlen(text);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	return path;
}

/* good.cfg holds every section, the front end's too: read with its layer, values dropped. */
static int load_good(struct vm_config *cfg, char *err, size_t errlen)
{
	return frontend_config_load_file(cfg, NULL, GOOD_CFG, err, errlen);
}

static struct vm_config *new_config(void)
{
	struct vm_config *cfg = malloc(sizeof(*cfg));
	assert_non_null(cfg);
	config_defaults(cfg);
	return cfg;
}

/* Field-by-field equality, ignoring origins (and bytes after string NULs). */
static void assert_config_equal(const struct vm_config *a, const struct vm_config *b)
{
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->memory, b->memory);
	assert_int_equal(a->vcpus, b->vcpus);
	assert_int_equal(a->memslot_size, b->memslot_size);
	assert_int_equal(a->backend, b->backend);
	assert_int_equal(a->tsc_khz, b->tsc_khz);
	assert_int_equal(a->cpu_vendor, b->cpu_vendor);
	assert_string_equal(a->firmware_path, b->firmware_path);
	assert_string_equal(a->cmdline, b->cmdline);
	assert_int_equal(a->workload, b->workload);
	assert_int_equal(a->working_set, b->working_set);
	assert_int_equal(a->dirty_rate, b->dirty_rate);
	assert_int_equal(a->passes, b->passes);
	assert_int_equal(a->heartbeat_ms, b->heartbeat_ms);
	assert_int_equal(a->min_pass_ms, b->min_pass_ms);
	assert_int_equal(a->catch_up_ms, b->catch_up_ms);
	assert_int_equal(a->work_ms, b->work_ms);
}

/* ---- defaults and a good file ---- */

static void test_defaults(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();

	assert_string_equal(cfg->name, "vmm");
	assert_int_equal(cfg->memory, 256 * M);
	assert_int_equal(cfg->vcpus, 1);
	assert_int_equal(cfg->memslot_size, 512 * M);
	assert_int_equal(cfg->backend, MEM_BACKEND_ANON);
	assert_string_equal(cfg->firmware_path, ""); /* looked up by config_default_firmware */
	assert_string_equal(cfg->cmdline, "");
	assert_int_equal(cfg->workload, WORKLOAD_HELLO);
	assert_int_equal(cfg->working_set, 64 * M);
	assert_int_equal(cfg->dirty_rate, 0);
	assert_int_equal(cfg->passes, 0);
	assert_int_equal(cfg->heartbeat_ms, 1000);
	assert_int_equal(cfg->min_pass_ms, 0);
	assert_int_equal(cfg->catch_up_ms, 100);
	assert_int_equal(cfg->work_ms, 0);
	assert_string_equal(cfg->firmware_origin.file, "default");
	assert_int_equal(cfg->firmware_origin.line, 0);
	assert_string_equal(cfg->memory_origin.file, "default");
	assert_string_equal(cfg->working_set_origin.file, "default");
	free(cfg);
}

static void test_good_file(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();
	char err[CONFIG_ERR_MAX] = "stale";

	assert_int_equal(load_good(cfg, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_string_equal(cfg->name, "test-vm_1.0");
	assert_int_equal(cfg->memory, G);
	assert_int_equal(cfg->vcpus, 4);
	assert_int_equal(cfg->memslot_size, 128 * M);
	assert_int_equal(cfg->backend, MEM_BACKEND_MEMFD);
	assert_string_equal(cfg->firmware_path, "/opt/vmm/fw.elf");
	assert_string_equal(cfg->cmdline, "console=ttyS0 loglevel=7");
	assert_int_equal(cfg->workload, WORKLOAD_DIRTY);
	assert_int_equal(cfg->working_set, 256 * M);
	assert_int_equal(cfg->dirty_rate, 50000);
	assert_int_equal(cfg->passes, 20);
	assert_int_equal(cfg->heartbeat_ms, 250);
	assert_int_equal(cfg->min_pass_ms, 150);

	assert_string_equal(cfg->memory_origin.file, GOOD_CFG);
	assert_int_equal(cfg->memory_origin.line, 4);
	assert_string_equal(cfg->firmware_origin.file, GOOD_CFG);
	assert_int_equal(cfg->firmware_origin.line, 10);
	assert_string_equal(cfg->working_set_origin.file, GOOD_CFG);
	assert_int_equal(cfg->working_set_origin.line, 15);
	free(cfg);
}

/* A file only overrides the keys it sets. */
static void test_partial_file_keeps_other_values(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();
	char err[CONFIG_ERR_MAX];

	assert_int_equal(config_load_string(cfg, "[vm]\nvcpus = 3\n", "a", err, sizeof(err)), 0);
	assert_int_equal(config_load_string(cfg, "[vm]\nmemory = 2G\n", "b", err, sizeof(err)), 0);
	assert_int_equal(cfg->vcpus, 3);
	assert_int_equal(cfg->memory, 2 * G);
	assert_int_equal(cfg->memslot_size, 512 * M);
	assert_string_equal(cfg->memory_origin.file, "b");
	assert_int_equal(cfg->memory_origin.line, 2);
	free(cfg);
}

static void test_syntax_details(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();
	char err[CONFIG_ERR_MAX];

	/* indented lines are ordinary keys, not continuations of the previous value */
	assert_int_equal(config_load_string(cfg,
					    "[vm]\n"
					    "  name = indented\n"
					    "\tvcpus = 2\n"
					    "; comment\n"
					    "# comment\n"
					    "memory = 1G ; inline comment\r\n"
					    "memory_backend: memfd\n",
					    "s", err, sizeof(err)),
			 0);
	assert_string_equal(cfg->name, "indented");
	assert_int_equal(cfg->vcpus, 2);
	assert_int_equal(cfg->memory, G);
	assert_int_equal(cfg->backend, MEM_BACKEND_MEMFD);

	/* a UTF-8 byte order mark is skipped */
	assert_int_equal(
	    config_load_string(cfg, "\xEF\xBB\xBF[vm]\nvcpus = 5\n", "bom", err, sizeof(err)), 0);
	assert_int_equal(cfg->vcpus, 5);

	/* '#' is not an inline comment */
	assert_int_equal(config_load_string(cfg, "[vm]\nmemory = 1G # no\n", "s", err, sizeof(err)),
			 -EINVAL);
	assert_contains(err, "s:2: [vm] memory: bad size '1G # no'");
	free(cfg);
}

/* ---- bad files ---- */

struct bad_case {
	const char *text;
	int line;
	const char *key;  /* e.g. "[vm] memory" */
	const char *what; /* part of the message */
};

static void check_bad_file(const struct bad_case *c)
{
	struct vm_config *cfg = new_config();
	struct vm_config *orig = new_config();
	char err[CONFIG_ERR_MAX] = "";
	char *path = write_temp(c->text);
	char where[PATH_MAX + 32];

	int rc = config_load_file(cfg, path, err, sizeof(err));
	if (rc != -EINVAL)
		fail_msg("%s: rc %d, want -EINVAL (err \"%s\")", c->text, rc, err);
	snprintf(where, sizeof(where), "%s:%d: ", path, c->line);
	if (strncmp(err, where, strlen(where)) != 0)
		fail_msg("error \"%s\" should start with \"%s\"", err, where);
	assert_contains(err, c->key);
	assert_contains(err, c->what);
	assert_null(strchr(err, '\n'));
	/* a failed load leaves the config untouched */
	assert_config_equal(cfg, orig);
	assert_string_equal(cfg->memory_origin.file, "default");

	unlink(path);
	free(path);
	free(cfg);
	free(orig);
}

static void test_bad_files(void **state)
{
	(void)state;
	static const struct bad_case cases[] = {
	    {"[vm]\nname = ok\n[bogus]\nx = 1\n", 3, "[bogus]", "unknown section 'bogus'"},
	    /* every section of the machine is listed (with the front end's: test_frontend_config.c)
	     */
	    {"[bogus]\n", 1, "[bogus]",
	     "(expected vm, firmware, workload, migration, disk, net, sandbox or snapshot)"},
	    /* the seam: without the front end's layer, its sections are unknown */
	    {"[vm]\n[console]\noutput = x\n", 2, "[console]", "unknown section 'console'"},
	    {"[api]\n", 1, "[api]", "unknown section 'api'"},
	    {"[log]\nlevel = info\n", 1, "[log]", "unknown section 'log'"},
	    {"[migration]\ntls_cert = /c.pem\n", 2, "[migration] tls_cert:",
	     "unknown key 'tls_cert' (expected allow_disk_dirs, allow_taps)"},
	    {"[vm]\n[nope]\n", 2, "[nope]", "unknown section"},
	    {"[vm]\nmemroy = 1G\n", 2, "[vm] memroy:", "unknown key 'memroy'"},
	    {"[workload]\nmemory = 1G\n", 2, "[workload] memory:", "unknown key"},
	    {"[vm]\n\n# c\nmemory = 12Q\n", 4, "[vm] memory:", "bad size '12Q'"},
	    {"[vm]\nmemory = -1\n", 2, "[vm] memory:", "bad size '-1'"},
	    {"[vm]\nmemory =\n", 2, "[vm] memory:", "bad size ''"},
	    {"[vm]\nmemory = 1.5G\n", 2, "[vm] memory:", "bad size"},
	    {"[vm]\nmemory = 99999999999T\n", 2, "[vm] memory:", "too large"},
	    {"[vm]\nmemory = 0\n", 2, "[vm] memory:", "must not be 0"},
	    {"[vm]\nmemory = 4097\n", 2, "[vm] memory:", "not a multiple of 4K"},
	    {"[vm]\nmemory = 17T\n", 2, "[vm] memory:", "out of range"},
	    {"[vm]\nvcpus = 0\n", 2, "[vm] vcpus:", "1..64"},
	    {"[vm]\nvcpus = 65\n", 2, "[vm] vcpus:", "1..64, got '65'"},
	    {"[vm]\nvcpus = two\n", 2, "[vm] vcpus:", "got 'two'"},
	    {"[vm]\nmemslot_size = 3M\n", 2, "[vm] memslot_size:", "not a multiple of 2M"},
	    {"[vm]\nmemslot_size = 0\n", 2, "[vm] memslot_size:", "must not be 0"},
	    {"[vm]\nmemory_backend = hugetlb\n", 2,
	     "[vm] memory_backend:", "unknown value 'hugetlb' (expected anonymous or memfd)"},
	    {"[vm]\nname = bad name\n", 2, "[vm] name:", "invalid character ' '"},
	    {"[vm]\nname = a/b\n", 2, "[vm] name:", "invalid character '/'"},
	    {"[vm]\nname =\n", 2, "[vm] name:", "must not be empty"},
	    {"[vm]\nname = "
	     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	     2, "[vm] name:", "too long (64 characters, at most 63)"},
	    {"[firmware]\npath =\n", 2, "[firmware] path:", "must not be empty"},
	    {"[workload]\nkind = busy\n", 2, "[workload] kind:",
	     "unknown value 'busy' (expected hello, idle, dirty, echo, fault, blk or net)"},
	    {"[workload]\nworking_set = 5000\n", 2,
	     "[workload] working_set:", "not a multiple of 4K"},
	    {"[workload]\nworking_set = 0\n", 2, "[workload] working_set:", "must not be 0"},
	    {"[workload]\npasses = many\n", 2, "[workload] passes:", "got 'many'"},
	    {"[workload]\ndirty_rate = 99999999999999999999\n", 2,
	     "[workload] dirty_rate:", "too large"},
	    {"[workload]\nheartbeat_ms = 3600001\n", 2, "[workload] heartbeat_ms:", "0..3600000"},
	    {"[workload]\nmin_pass_ms = 3600001\n", 2, "[workload] min_pass_ms:", "0..3600000"},
	    {"memory = 1G\n", 1, "memory:", "outside of a section"},
	    {"[vm]\nmemory\n", 2, "", "syntax error"},
	    {"[vm\nmemory = 1G\n", 1, "", "syntax error"},
	    /* the first error wins, later ones are not reported */
	    {"[vm]\nvcpus = 0\nmemory = 0\n", 2, "[vm] vcpus:", "1..64"},
	    {"[vm]\njunk\nvcpus = 0\n", 2, "", "syntax error"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_bad_file(&cases[i]);
}

/* Strings longer than their buffer, and lines longer than inih's 200 bytes. */
static void test_long_values(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();
	char err[CONFIG_ERR_MAX];
	size_t n = CONFIG_CMDLINE_MAX + 64;
	char *text = malloc(n + 128);
	char *cmd = malloc(n);
	assert_non_null(text);
	assert_non_null(cmd);

	/* 1500-character cmdline with an inline comment, then an error two lines on */
	memset(cmd, 'x', 1500);
	cmd[1500] = '\0';
	snprintf(text, n + 128, "[firmware]\ncmdline = %s ; comment\n\n[vm]\nvcpus = 0\n", cmd);
	assert_int_equal(config_load_string(cfg, text, "long", err, sizeof(err)), -EINVAL);
	assert_contains(err, "long:5: [vm] vcpus:");

	snprintf(text, n + 128, "[firmware]\ncmdline = %s ; comment\n[vm]\nvcpus = 7\n", cmd);
	assert_int_equal(config_load_string(cfg, text, "long", err, sizeof(err)), 0);
	assert_string_equal(cfg->cmdline, cmd);
	assert_int_equal(cfg->vcpus, 7);

	/* exactly CONFIG_CMDLINE_MAX characters: one too many */
	memset(cmd, 'y', CONFIG_CMDLINE_MAX);
	cmd[CONFIG_CMDLINE_MAX] = '\0';
	snprintf(text, n + 128, "[vm]\n\n[firmware]\ncmdline = %s\n", cmd);
	char *path = write_temp(text);
	assert_int_equal(config_load_file(cfg, path, err, sizeof(err)), -EINVAL);
	assert_contains(err, path);
	assert_contains(err, ":4: [firmware] cmdline: value is too long");
	unlink(path);
	free(path);
	assert_int_equal(cfg->cmdline[0], 'x'); /* unchanged */

	free(text);
	free(cmd);
	free(cfg);
}

static void test_missing_file(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();
	char err[CONFIG_ERR_MAX];

	assert_int_equal(config_load_file(cfg, "/nonexistent/vmm.cfg", err, sizeof(err)), -ENOENT);
	assert_contains(err, "/nonexistent/vmm.cfg");
	assert_contains(err, "No such file or directory");
	assert_int_equal(config_load_file(cfg, TEST_DATA_DIR, err, sizeof(err)), -EISDIR);
	assert_contains(err, TEST_DATA_DIR);
	free(cfg);
}

static void test_string_origin(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();
	char err[CONFIG_ERR_MAX];

	assert_int_equal(config_load_string(cfg, "[vm]\nmemory = 4G\n[workload]\nkind = nap\n",
					    "migration stream", err, sizeof(err)),
			 -EINVAL);
	assert_contains(err, "migration stream:4: [workload] kind: unknown value 'nap'");
	assert_int_equal(cfg->memory, 256 * M); /* untouched */
	free(cfg);
}

/*
 * A NUL byte is refused where it stands, naming the key: a reader that
 * stopped at it would cut the value short without a word (a file's, or a
 * migration stream's config, whose length the caller knows).
 */
static void test_nul_bytes(void **state)
{
	(void)state;
	static const char text[] = "[vm]\nmemory = 1G\nname = short\0er-name\nvcpus = 2\n";
	static const char comment[] = "[vm]\n# a \0 in a comment\nvcpus = 2\n";
	struct vm_config *cfg = new_config();
	char err[CONFIG_ERR_MAX], path[] = "/tmp/vmm-test-config-XXXXXX";
	int fd;

	assert_int_equal(
	    config_load_text(cfg, text, sizeof(text) - 1, "migration stream", err, sizeof(err)),
	    -EINVAL);
	assert_contains(err, "migration stream:3: [vm] name: a NUL byte in the value (byte 13 "
			     "of the line)");
	assert_int_equal(cfg->memory, 256 * M); /* untouched */
	assert_int_equal(config_load_text(cfg, comment, sizeof(comment) - 1, "c", err, sizeof(err)),
			 -EINVAL);
	assert_contains(err, "c:2: a NUL byte in the line (byte 5)");
	/* The same bytes in a file. */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	assert_int_equal(config_load_file(cfg, path, err, sizeof(err)), -EINVAL);
	assert_contains(err, ":3: [vm] name: a NUL byte in the value");
	assert_int_equal(cfg->vcpus, 1);
	unlink(path);
	/* Up to a NUL the string form reads as before: its length is strlen(). */
	assert_int_equal(config_load_string(cfg, text, "s", err, sizeof(err)), 0);
	assert_string_equal(cfg->name, "short");
	free(cfg);
}

/* ---- --set ---- */

static void test_set_overrides_file(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();
	char err[CONFIG_ERR_MAX];

	assert_int_equal(load_good(cfg, err, sizeof(err)), 0);
	assert_int_equal(config_set(cfg, "vm.memory=2G", err, sizeof(err)), 0);
	assert_int_equal(config_set(cfg, " workload.kind = idle ", err, sizeof(err)), 0);
	assert_int_equal(config_set(cfg, "firmware.cmdline=console=ttyS0 quiet", err, sizeof(err)),
			 0);
	assert_int_equal(config_set(cfg, "firmware.path=/tmp/other.elf", err, sizeof(err)), 0);
	assert_int_equal(config_set(cfg, "vm.vcpus=0x10", err, sizeof(err)), 0);

	assert_int_equal(cfg->memory, 2 * G);
	assert_int_equal(cfg->workload, WORKLOAD_IDLE);
	assert_string_equal(cfg->cmdline, "console=ttyS0 quiet");
	assert_string_equal(cfg->firmware_path, "/tmp/other.elf");
	assert_int_equal(cfg->vcpus, 16);
	/* untouched keys keep the file's values */
	assert_int_equal(cfg->memslot_size, 128 * M);
	/* origins follow the override */
	assert_string_equal(cfg->memory_origin.file, "--set");
	assert_int_equal(cfg->memory_origin.line, 0);
	assert_string_equal(cfg->firmware_origin.file, "--set");
	assert_string_equal(cfg->working_set_origin.file, GOOD_CFG);
	free(cfg);
}

static void test_set_errors(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();
	struct vm_config *orig = new_config();
	char err[CONFIG_ERR_MAX];
	static const char *const syntax[] = {"xyz",	  "vm.memory", "vm=1",
					     ".memory=1", "vm.=1",     "=1"};

	for (size_t i = 0; i < sizeof(syntax) / sizeof(syntax[0]); i++) {
		char want[128];
		assert_int_equal(config_set(cfg, syntax[i], err, sizeof(err)), -EINVAL);
		snprintf(want, sizeof(want), "--set: expected section.key=value, got '%s'",
			 syntax[i]);
		assert_string_equal(err, want);
	}
	assert_int_equal(config_set(cfg, "vm.memory=12Q", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--set: [vm] memory: bad size '12Q' (use a number with K/M/G/T)");
	assert_int_equal(config_set(cfg, "vm.bogus=1", err, sizeof(err)), -EINVAL);
	assert_contains(err, "--set: [vm] bogus: unknown key 'bogus' (expected name, memory, "
			     "vcpus, memslot_size, memory_backend, prealloc, tsc_khz, cpu_vendor, "
			     "cpu_features)");
	assert_int_equal(config_set(cfg, "nope.x=1", err, sizeof(err)), -EINVAL);
	assert_contains(err, "--set: [nope] x: unknown section 'nope' (expected vm, firmware, "
			     "workload, migration, disk, net, sandbox or snapshot)");
	/* the seam: the front end's keys are not the machine's (test_frontend_config.c) */
	assert_int_equal(config_set(cfg, "migration.tls_ca=", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--set: [migration] tls_ca: unknown key 'tls_ca' (expected "
				 "allow_disk_dirs, allow_taps)");
	assert_int_equal(config_set(cfg, "log.format=json", err, sizeof(err)), -EINVAL);
	assert_contains(err, "--set: [log] format: unknown section 'log'");
	assert_true(cfg->seccomp); /* the default */
	assert_int_equal(config_set(cfg, "sandbox.seccomp=off", err, sizeof(err)), 0);
	assert_false(cfg->seccomp);
	assert_int_equal(config_set(cfg, "sandbox.seccomp=on", err, sizeof(err)), 0);
	assert_true(cfg->seccomp);
	assert_int_equal(config_set(cfg, "sandbox.seccomp=yes", err, sizeof(err)), -EINVAL);
	assert_contains(err, "--set: [sandbox] seccomp: unknown value 'yes' (expected on or off)");
	assert_int_equal(config_set(cfg, "vm.vcpus=65", err, sizeof(err)), -EINVAL);
	assert_contains(err, "--set: [vm] vcpus:");
	assert_int_equal(config_set(cfg, "firmware.cmdline=a ;b", err, sizeof(err)), -EINVAL);
	assert_contains(err, "--set: [firmware] cmdline:");
	assert_int_equal(config_set(cfg, "firmware.cmdline=a\nb", err, sizeof(err)), -EINVAL);
	assert_contains(err, "control character");
	assert_config_equal(cfg, orig);
	free(cfg);
	free(orig);
}

/* ---- validate ---- */

static void test_validate_firmware(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();
	char err[CONFIG_ERR_MAX];

	assert_int_equal(config_load_string(cfg,
					    "# demo\n[vm]\nmemory = 512M\n\n[firmware]\n\n"
					    "path = /nope.elf\n",
					    "demo.cfg", err, sizeof(err)),
			 0);
	assert_int_equal(config_validate(cfg, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "demo.cfg:7: [firmware] path: cannot read '/nope.elf': No such "
				 "file or directory");

	assert_int_equal(config_set(cfg, "firmware.path=" TEST_DATA_DIR, err, sizeof(err)), 0);
	assert_int_equal(config_validate(cfg, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--set: [firmware] path: cannot read '" TEST_DATA_DIR
				 "': not a regular file");

	/* any readable regular file passes */
	assert_int_equal(config_set(cfg, "firmware.path=" GOOD_CFG, err, sizeof(err)), 0);
	assert_int_equal(config_validate(cfg, err, sizeof(err)), 0);

	if (geteuid() != 0) {
		char *path = write_temp("x");
		chmod(path, 0);
		snprintf(cfg->firmware_path, sizeof(cfg->firmware_path), "%s", path);
		assert_int_equal(config_validate(cfg, err, sizeof(err)), -EINVAL);
		assert_contains(err, "Permission denied");
		unlink(path);
		free(path);
	}
	free(cfg);
}

/* The default firmware: next to the binary first, then the build tree's, else every path tried. */
static void test_default_firmware(void **state)
{
	(void)state;
	char dir[] = "/tmp/vmm-fw-XXXXXX", path[PATH_MAX], exe[PATH_MAX], out[PATH_MAX],
	     err[CONFIG_ERR_MAX];
	struct vm_config *cfg = new_config();
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/bin", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/share", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/share/vmm", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(exe, sizeof(exe), "%s/bin/vmm", dir);

	/* nothing installed, no build fallback: the error names the path tried */
	assert_int_equal(
	    firmware_find(exe, "../share/vmm/fw.elf", "", out, sizeof(out), err, sizeof(err)),
	    -ENOENT);
	assert_contains(err, "[firmware] path: not set and no default firmware found");
	assert_contains(err, "/bin/../share/vmm/fw.elf' (No such file or directory)");

	/* ... and the build tree's too when there is one */
	assert_int_equal(firmware_find(exe, "../share/vmm/fw.elf", "/nonexistent/fw.elf", out,
				       sizeof(out), err, sizeof(err)),
			 -ENOENT);
	assert_contains(err, "'/nonexistent/fw.elf' (No such file or directory)");

	/* the build tree's when nothing is installed */
	assert_int_equal(
	    firmware_find(exe, "../share/vmm/fw.elf", GOOD_CFG, out, sizeof(out), err, sizeof(err)),
	    0);
	assert_string_equal(out, GOOD_CFG);

	/* the installed one wins over the build tree's */
	snprintf(path, sizeof(path), "%s/share/vmm/fw.elf", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(
	    firmware_find(exe, "../share/vmm/fw.elf", GOOD_CFG, out, sizeof(out), err, sizeof(err)),
	    0);
	snprintf(path, sizeof(path), "%s/bin/../share/vmm/fw.elf", dir);
	assert_string_equal(out, path);

	/* a directory is not a firmware; an unknown binary path skips the first candidate */
	assert_int_equal(firmware_find(exe, "../share/vmm", "", out, sizeof(out), err, sizeof(err)),
			 -ENOENT);
	assert_contains(err, "not a regular file");
	assert_int_equal(firmware_find(NULL, "../share/vmm/fw.elf", GOOD_CFG, out, sizeof(out), err,
				       sizeof(err)),
			 0);
	assert_string_equal(out, GOOD_CFG);

	/* a path the config set is kept; an unset one is filled (from the build tree here) */
	assert_int_equal(config_set(cfg, "firmware.path=/x.elf", err, sizeof(err)), 0);
	assert_int_equal(config_default_firmware(cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg->firmware_path, "/x.elf");
	cfg->firmware_path[0] = '\0';
	assert_int_equal(config_validate(cfg, err, sizeof(err)), -EINVAL);
	assert_contains(err, "[firmware] path: not set");
	if (VMM_DEFAULT_FIRMWARE[0]) {
		assert_int_equal(config_default_firmware(cfg, err, sizeof(err)), 0);
		assert_string_equal(cfg->firmware_path, VMM_DEFAULT_FIRMWARE);
	} else { /* built with -DVMM_BUILD_TREE_FIRMWARE=OFF: nothing next to this test */
		assert_int_equal(config_default_firmware(cfg, err, sizeof(err)), -ENOENT);
		assert_string_equal(cfg->firmware_path, "");
	}

	snprintf(path, sizeof(path), "%s/share/vmm/fw.elf", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/share/vmm", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/share", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/bin", dir);
	rmdir(path);
	rmdir(dir);
	free(cfg);
}

static void test_validate_working_set(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();
	char err[CONFIG_ERR_MAX];

	assert_int_equal(config_set(cfg, "firmware.path=" GOOD_CFG, err, sizeof(err)), 0);
	assert_int_equal(config_load_string(cfg,
					    "[vm]\nmemory = 64M\n[workload]\nkind = dirty\n"
					    "working_set = 64M\n",
					    "ws.cfg", err, sizeof(err)),
			 0);
	assert_int_equal(config_validate(cfg, err, sizeof(err)), -EINVAL);
	assert_contains(err, "ws.cfg:5: [workload] working_set: 64M plus 4M reserved");
	assert_contains(err, "does not fit in [vm] memory 64M (set at ws.cfg:2)");

	/* exactly working set + 4M fits */
	assert_int_equal(config_set(cfg, "vm.memory=68M", err, sizeof(err)), 0);
	assert_int_equal(config_validate(cfg, err, sizeof(err)), 0);
	/* one page less does not */
	assert_int_equal(config_set(cfg, "vm.memory=69628K", err, sizeof(err)), 0);
	assert_int_equal(config_validate(cfg, err, sizeof(err)), -EINVAL);
	assert_contains(err, "memory 69628K (from --set)");
	/* working set larger than memory does not wrap around */
	assert_int_equal(config_set(cfg, "workload.working_set=1G", err, sizeof(err)), 0);
	assert_int_equal(config_validate(cfg, err, sizeof(err)), -EINVAL);
	assert_contains(err, "--set: [workload] working_set: 1G plus 4M");

	/* only the dirty workload uses the working set */
	assert_int_equal(config_set(cfg, "workload.kind=hello", err, sizeof(err)), 0);
	assert_int_equal(config_validate(cfg, err, sizeof(err)), 0);
	free(cfg);
}

/* ---- format ---- */

static void roundtrip(const struct vm_config *cfg)
{
	size_t len = 16384;
	char *buf = malloc(len);
	char err[CONFIG_ERR_MAX];
	struct vm_config *back = new_config();
	assert_non_null(buf);

	int n = config_format(cfg, buf, len);
	assert_true(n > 0);
	assert_int_equal((size_t)n, strlen(buf));
	if (config_load_string(back, buf, "format", err, sizeof(err)) != 0)
		fail_msg("reload failed: %s\n%s", err, buf);
	assert_config_equal(cfg, back);

	/* exact fit needs n + 1 bytes */
	assert_int_equal(config_format(cfg, buf, (size_t)n + 1), n);
	assert_int_equal(config_format(cfg, buf, (size_t)n), -ENOSPC);
	assert_int_equal(config_format(cfg, buf, 10), -ENOSPC);
	free(buf);
	free(back);
}

static void test_format_roundtrip(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();
	char err[CONFIG_ERR_MAX];

	roundtrip(cfg);

	assert_int_equal(load_good(cfg, err, sizeof(err)), 0);
	roundtrip(cfg);

	/* sizes are written as byte counts */
	char buf[8192];
	assert_true(config_format(cfg, buf, sizeof(buf)) > 0);
	assert_contains(buf, "memory = 1073741824\n");
	assert_contains(buf, "working_set = 268435456\n");
	assert_contains(buf, "memory_backend = memfd\n");
	assert_contains(buf, "kind = dirty\n");
	/* no front end's layer: none of its sections (test_frontend_config.c writes them) */
	assert_null(strstr(buf, "[console]"));
	assert_null(strstr(buf, "[api]"));
	/* the pace keys at their defaults are left out: an older target reads the description */
	assert_null(strstr(buf, "catch_up_ms"));
	assert_null(strstr(buf, "work_ms"));

	/* maximal strings, extreme numbers */
	memset(cfg->cmdline, 'c', CONFIG_CMDLINE_MAX - 1);
	cfg->cmdline[CONFIG_CMDLINE_MAX - 1] = '\0';
	memcpy(cfg->cmdline, "console=ttyS0 a=b:c ", 20);
	cfg->firmware_path[0] = '/';
	memset(cfg->firmware_path + 1, 'p', 300);
	cfg->firmware_path[301] = '\0';
	memset(cfg->name, 'n', CONFIG_NAME_MAX - 1);
	cfg->name[CONFIG_NAME_MAX - 1] = '\0';
	cfg->dirty_rate = UINT64_MAX;
	cfg->catch_up_ms = 0; /* written only when not the default */
	cfg->work_ms = 3600000;
	cfg->passes = 1;
	cfg->vcpus = CONFIG_MAX_VCPUS;
	cfg->memory = 16 * (UINT64_C(1) << 40);
	cfg->workload = WORKLOAD_IDLE;
	cfg->backend = MEM_BACKEND_ANON;
	cfg->tsc_khz = UINT32_MAX;
	cfg->cpu_vendor = CPU_VENDOR_AMD;
	roundtrip(cfg);
	free(cfg);
}

/* [vm] tsc_khz and [vm] cpu_vendor: defaults, values, errors, the description. */
static void test_cpu_keys(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();
	char err[CONFIG_ERR_MAX], buf[8192];

	assert_int_equal(cfg->tsc_khz, 0);
	assert_int_equal(cfg->cpu_vendor, CPU_VENDOR_HOST);
	assert_true(config_format(cfg, buf, sizeof(buf)) > 0);
	assert_contains(buf, "tsc_khz = 0\n");
	assert_contains(buf, "cpu_vendor = host\n");

	assert_int_equal(config_set(cfg, "vm.tsc_khz=2596144", err, sizeof(err)), 0);
	assert_int_equal(cfg->tsc_khz, 2596144);
	assert_int_equal(config_set(cfg, "vm.tsc_khz=4294967295", err, sizeof(err)), 0);
	assert_int_equal(config_set(cfg, "vm.tsc_khz=4294967296", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--set: [vm] tsc_khz: must be an integer in 0..4294967295, got "
				 "'4294967296'");
	assert_int_equal(config_set(cfg, "vm.tsc_khz=2.6G", err, sizeof(err)), -EINVAL);
	assert_contains(err, "[vm] tsc_khz: must be an integer");

	const char *names[] = {"host", "intel", "amd"};
	for (int v = CPU_VENDOR_HOST; v <= CPU_VENDOR_AMD; v++) {
		char set[64];

		snprintf(set, sizeof(set), "vm.cpu_vendor=%s", names[v]);
		assert_int_equal(config_set(cfg, set, err, sizeof(err)), 0);
		assert_int_equal(cfg->cpu_vendor, v);
		assert_string_equal(cpu_vendor_name((enum cpu_vendor)v), names[v]);
		roundtrip(cfg);
	}
	assert_int_equal(config_set(cfg, "vm.cpu_vendor=GenuineIntel", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "--set: [vm] cpu_vendor: unknown value 'GenuineIntel' "
				 "(expected host, intel or amd)");
	/* what the migration stream carries reads back */
	assert_int_equal(config_load_string(cfg, "[vm]\ntsc_khz = 1\ncpu_vendor = intel\n",
					    "migration stream", err, sizeof(err)),
			 0);
	assert_int_equal(cfg->tsc_khz, 1);
	assert_int_equal(cfg->cpu_vendor, CPU_VENDOR_INTEL);
	free(cfg);
}

/* [workload] fill, order and latency: defaults, values, errors, the description. */
/* [vm] prealloc parses as a bool and, this host's choice, is not formatted for the target. */
static void test_prealloc_key(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();
	char err[CONFIG_ERR_MAX], buf[8192];

	assert_false(cfg->prealloc);
	assert_int_equal(config_set(cfg, "vm.prealloc=true", err, sizeof(err)), 0);
	assert_true(cfg->prealloc);
	assert_true(config_format(cfg, buf, sizeof(buf)) > 0);
	assert_null(strstr(buf, "prealloc"));
	assert_int_equal(config_set(cfg, "vm.prealloc=yes", err, sizeof(err)), -EINVAL);
	assert_string_equal(err,
			    "--set: [vm] prealloc: unknown value 'yes' (expected true or false)");
	free(cfg);
}

/* [net] mac: one parser for the reader's check and the device's bytes. */
static void test_mac_key(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();
	char err[CONFIG_ERR_MAX];
	uint8_t mac[6];

	assert_int_equal(config_set(cfg, "net.mac=02:AB:cd:00:10:ff", err, sizeof(err)), 0);
	assert_string_equal(cfg->net_mac, "02:ab:cd:00:10:ff");
	assert_int_equal(config_mac_parse(cfg->net_mac, mac), 0);
	assert_memory_equal(mac, ((uint8_t[]){0x02, 0xab, 0xcd, 0x00, 0x10, 0xff}), 6);
	assert_int_equal(config_mac_parse("03:00:00:00:00:01", mac), -EADDRNOTAVAIL);
	assert_int_equal(config_mac_parse("02:00:00:00:00:1", mac), -EINVAL);
	assert_int_equal(config_mac_parse("02:00:00:00:00:011", mac), -EINVAL);
	assert_int_equal(config_mac_parse("02-00-00-00-00-01", mac), -EINVAL);
	assert_int_equal(config_mac_parse("02:00:00:00:0g:01", mac), -EINVAL);
	assert_int_equal(config_set(cfg, "net.mac=01:00:5e:00:00:01", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "multicast"));
	free(cfg);
}

static void test_workload_shape_keys(void **state)
{
	(void)state;
	struct vm_config *cfg = new_config();
	char err[CONFIG_ERR_MAX], buf[8192];

	assert_int_equal(cfg->fill, WORKLOAD_FILL_ZERO);
	assert_int_equal(cfg->order, WORKLOAD_ORDER_SEQ);
	assert_false(cfg->latency);
	assert_true(config_format(cfg, buf, sizeof(buf)) > 0);
	assert_contains(buf, "fill = zero\norder = seq\nlatency = false\n");

	assert_int_equal(config_set(cfg, "workload.fill=random", err, sizeof(err)), 0);
	assert_int_equal(config_set(cfg, "workload.order=random", err, sizeof(err)), 0);
	assert_int_equal(config_set(cfg, "workload.latency=true", err, sizeof(err)), 0);
	assert_int_equal(cfg->fill, WORKLOAD_FILL_RANDOM);
	assert_int_equal(cfg->order, WORKLOAD_ORDER_RANDOM);
	assert_true(cfg->latency);
	roundtrip(cfg);
	assert_true(config_format(cfg, buf, sizeof(buf)) > 0);
	assert_contains(buf, "fill = random\norder = random\nlatency = true\n");

	assert_int_equal(config_set(cfg, "workload.fill=ones", err, sizeof(err)), -EINVAL);
	assert_string_equal(
	    err, "--set: [workload] fill: unknown value 'ones' (expected zero or random)");
	assert_int_equal(config_set(cfg, "workload.order=sequential", err, sizeof(err)), -EINVAL);
	assert_string_equal(
	    err, "--set: [workload] order: unknown value 'sequential' (expected seq or random)");
	assert_int_equal(config_set(cfg, "workload.latency=on", err, sizeof(err)), -EINVAL);
	assert_string_equal(
	    err, "--set: [workload] latency: unknown value 'on' (expected true or false)");
	assert_int_equal(cfg->fill, WORKLOAD_FILL_RANDOM); /* a bad value changes nothing */
	assert_true(cfg->latency);
	assert_int_equal(config_load_string(cfg, "[workload]\nfill = zero\nlatency = false\n",
					    "migration stream", err, sizeof(err)),
			 0);
	assert_int_equal(cfg->fill, WORKLOAD_FILL_ZERO);
	assert_false(cfg->latency);
	free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_good_file),
	    cmocka_unit_test(test_partial_file_keeps_other_values),
	    cmocka_unit_test(test_syntax_details),
	    cmocka_unit_test(test_bad_files),
	    cmocka_unit_test(test_long_values),
	    cmocka_unit_test(test_missing_file),
	    cmocka_unit_test(test_string_origin),
	    cmocka_unit_test(test_nul_bytes),
	    cmocka_unit_test(test_set_overrides_file),
	    cmocka_unit_test(test_set_errors),
	    cmocka_unit_test(test_validate_firmware),
	    cmocka_unit_test(test_default_firmware),
	    cmocka_unit_test(test_validate_working_set),
	    cmocka_unit_test(test_format_roundtrip),
	    cmocka_unit_test(test_cpu_keys),
	    cmocka_unit_test(test_workload_shape_keys),
	    cmocka_unit_test(test_prealloc_key),
	    cmocka_unit_test(test_mac_key),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
