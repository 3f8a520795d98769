/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_config_bind.c - a migration target binds the devices of a VM the
 * stream describes (config_bind_devices(), vmm/machine/config/config_bind.c): its
 * own --set disk.path / net.tap, else the [migration] allow_disk_dirs and
 * allow_taps policy, else a refusal naming the device and the options;
 * the two policy keys' checks; and open_beneath() (vmm/util), which opens
 * an allowed disk without following a link out of its directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "open_beneath.h"

struct pair {
	struct vm_config vm;	/* what the stream brought */
	struct vm_config local; /* this host's config and --set */
	char err[CONFIG_ERR_MAX];
};

static int setup(void **state)
{
	struct pair *p = calloc(1, sizeof(*p));

	if (!p)
		return -1;
	config_defaults(&p->vm);
	config_defaults(&p->local);
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

static void set(struct vm_config *cfg, const char *assignment)
{
	char err[CONFIG_ERR_MAX];

	if (config_set(cfg, assignment, err, sizeof(err)))
		fail_msg("--set %s: %s", assignment, err);
}

static int bind(struct pair *p)
{
	p->err[0] = '\0';
	return config_bind_devices(&p->vm, &p->local, p->err, sizeof(p->err));
}

/* A bare target: the stream's path is never opened on its word. */
static void test_unbound_disk_refused(void **state)
{
	struct pair *p = *state;

	set(&p->vm, "disk.path=/srv/vm/disk.img");
	assert_int_equal(bind(p), -EPERM);
	assert_non_null(strstr(p->err, "disk"));
	assert_non_null(strstr(p->err, "--set disk.path=PATH"));
	assert_non_null(strstr(p->err, "[migration] allow_disk_dirs"));
	assert_non_null(strstr(p->err, "'/srv/vm/disk.img'"));
}

static void test_unbound_tap_refused(void **state)
{
	struct pair *p = *state;

	set(&p->vm, "net.tap=tap7");
	assert_int_equal(bind(p), -EPERM);
	assert_non_null(strstr(p->err, "network device"));
	assert_non_null(strstr(p->err, "--set net.tap=NAME"));
	assert_non_null(strstr(p->err, "[migration] allow_taps"));
	assert_non_null(strstr(p->err, "'tap7'"));
}

/* The options come before the source's path: a cut message keeps them. */
static void test_long_path_keeps_the_fix(void **state)
{
	struct pair *p = *state;
	char path[PATH_MAX] = "/";

	memset(path + 1, 'a', 4000);
	path[4001] = '\0';
	strcpy(p->vm.disk_path, path);
	assert_int_equal(bind(p), -EPERM);
	p->err[200] = '\0'; /* a 200-byte message buffer */
	assert_non_null(strstr(p->err, "--set disk.path=PATH"));
}

/* The target's own --set wins, for each device the VM has. */
static void test_local_binding(void **state)
{
	struct pair *p = *state;

	set(&p->vm, "disk.path=/their/disk.img");
	set(&p->vm, "disk.readonly=true");
	set(&p->vm, "net.tap=tap0");
	set(&p->local, "disk.path=/mnt/shared/disk.img");
	set(&p->local, "net.tap=tap9");
	/* the policy is not consulted: the operator named the backends */
	set(&p->local, "migration.allow_disk_dirs=/nowhere");
	assert_int_equal(bind(p), 0);
	assert_string_equal(p->vm.disk_path, "/mnt/shared/disk.img");
	assert_string_equal(p->vm.disk_beneath, "");
	assert_true(p->vm.disk_readonly); /* guest-visible: it travels */
	assert_string_equal(p->vm.net_tap, "tap9");
}

/* Devices are the guest's: a target's binding adds none. */
static void test_no_device_no_binding(void **state)
{
	struct pair *p = *state;

	set(&p->local, "disk.path=/mnt/shared/disk.img");
	set(&p->local, "net.tap=tap9");
	assert_int_equal(bind(p), 0);
	assert_string_equal(p->vm.disk_path, "");
	assert_string_equal(p->vm.net_tap, "");
}

static void test_allowed_disk(void **state)
{
	struct pair *p = *state;

	set(&p->local, "migration.allow_disk_dirs=/srv/a, /srv/disks/");
	set(&p->vm, "disk.path=/srv/disks/vm1/disk.img");
	assert_int_equal(bind(p), 0);
	assert_string_equal(p->vm.disk_path, "/srv/disks/vm1/disk.img");
	assert_string_equal(p->vm.disk_beneath, "/srv/disks");
	set(&p->vm, "disk.path=/srv/a/x");
	assert_int_equal(bind(p), 0);
	assert_string_equal(p->vm.disk_beneath, "/srv/a");
	/* "/" allows every clean absolute path, and says so */
	set(&p->local, "migration.allow_disk_dirs=/");
	assert_int_equal(bind(p), 0);
	assert_string_equal(p->vm.disk_beneath, "/");
}

/* Outside the list, or a name that a prefix check cannot trust. */
static void test_disk_outside_refused(void **state)
{
	static const char *const outside[] = {
	    "/etc/passwd", "/srv/disksX/a", "/srv/disks", "/srv", "/srv/disk",
	};
	static const char *const unclean[] = {
	    "/srv/disks/../../etc/shadow",
	    "/srv/disks/./a",
	    "/srv/disks//a",
	    "srv/disks/a",
	    "/srv/disks/a/",
	    "/srv/disks/a/..",
	};
	struct pair *p = *state;

	set(&p->local, "migration.allow_disk_dirs=/srv/disks");
	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
		strcpy(p->vm.disk_path, outside[i]);
		assert_int_equal(bind(p), -EPERM);
		assert_non_null(strstr(p->err, "outside [migration] allow_disk_dirs"));
		assert_non_null(strstr(p->err, "--set disk.path=PATH"));
		assert_non_null(strstr(p->err, outside[i]));
		assert_string_equal(p->vm.disk_beneath, "");
	}
	for (size_t i = 0; i < sizeof(unclean) / sizeof(unclean[0]); i++) {
		strcpy(p->vm.disk_path, unclean[i]);
		assert_int_equal(bind(p), -EPERM);
		assert_non_null(strstr(p->err, "--set disk.path=PATH"));
		assert_non_null(strstr(p->err, "'.', '..' or '//'"));
	}
}

static void test_allowed_taps(void **state)
{
	struct pair *p = *state;

	set(&p->local, "migration.allow_taps=vm-*, tap0,br[0-3]x");
	for (const char *const *t = (const char *const[]){"vm-12", "tap0", "br2x", NULL}; *t; t++) {
		strcpy(p->vm.net_tap, *t);
		assert_int_equal(bind(p), 0);
		assert_string_equal(p->vm.net_tap, *t);
	}
	for (const char *const *t = (const char *const[]){"tap01", "vm", "br4x", "eth0", NULL}; *t;
	     t++) {
		strcpy(p->vm.net_tap, *t);
		assert_int_equal(bind(p), -EPERM);
		assert_non_null(strstr(p->err, "matches nothing in [migration] allow_taps"));
		assert_non_null(strstr(p->err, "--set net.tap=NAME"));
	}
}

/* A disk bound and a tap refused: the whole binding fails. */
static void test_both_devices(void **state)
{
	struct pair *p = *state;

	set(&p->vm, "disk.path=/srv/disks/d");
	set(&p->vm, "net.tap=tap0");
	set(&p->local, "migration.allow_disk_dirs=/srv/disks");
	assert_int_equal(bind(p), -EPERM);
	assert_non_null(strstr(p->err, "net.tap"));
	set(&p->local, "migration.allow_taps=tap*");
	assert_int_equal(bind(p), 0);
}

/* The keys' values are checked when they are read, with one line each. */
static void test_policy_keys(void **state)
{
	static const char *const bad[] = {
	    "migration.allow_disk_dirs=relative/dir",
	    "migration.allow_disk_dirs=/a,,/b",
	    "migration.allow_disk_dirs=/a/../b",
	    "migration.allow_disk_dirs=/a//b",
	    "migration.allow_taps=tap/0",
	    "migration.allow_taps=a-name-far-too-long",
	    "migration.allow_taps=tap0,,tap1",
	};
	struct pair *p = *state;
	char err[CONFIG_ERR_MAX];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(config_set(&p->local, bad[i], err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "[migration] allow_"));
	}
	set(&p->local, "migration.allow_disk_dirs=");
	set(&p->local, "migration.allow_disk_dirs=/srv/disks/, /mnt/nfs");
	assert_string_equal(p->local.allow_disk_dirs, "/srv/disks/, /mnt/nfs");
	set(&p->local, "migration.allow_taps=vm-*,tap[0-9]");
	/* host-local: a migration's description leaves them out */
	{
		char text[1 << 16];

		assert_true(config_format(&p->local, text, sizeof(text)) > 0);
		assert_null(strstr(text, "allow_"));
	}
}

/* ---- open_beneath ------------------------------------------------------ */

static void mkfile(const char *path)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs("disk", f);
	fclose(f);
}

static void test_open_beneath(void **state)
{
	char tmp[] = "/tmp/vmm-test-beneath-XXXXXX", dir[200], p[PATH_MAX], q[PATH_MAX], top[256];
	char real[PATH_MAX];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(tmp));
	/* without links, so that "/" below can walk it whole */
	assert_non_null(realpath(tmp, real));
	assert_true(strlen(real) < sizeof(dir));
	strcpy(dir, real);
	snprintf(top, sizeof(top), "%s/allowed", dir);
	assert_int_equal(mkdir(top, 0700), 0);
	snprintf(p, sizeof(p), "%s/sub", top);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/sub/disk.img", top);
	mkfile(p);
	snprintf(q, sizeof(q), "%s/outside.img", dir);
	mkfile(q);

	fd = open_beneath(top, p, O_RDWR);
	assert_true(fd >= 0);
	close(fd);
	/* a link to a file outside, as the last component */
	snprintf(p, sizeof(p), "%s/link.img", top);
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(open_beneath(top, p, O_RDWR), -ELOOP);
	/* a link to a directory outside, in the middle */
	snprintf(p, sizeof(p), "%s/up", top);
	assert_int_equal(symlink(dir, p), 0);
	snprintf(p, sizeof(p), "%s/up/outside.img", top);
	assert_int_equal(open_beneath(top, p, O_RDWR), -ENOTDIR);
	/* a link inside pointing inside is refused too: no link is followed */
	snprintf(p, sizeof(p), "%s/sub2", top);
	assert_int_equal(symlink("sub", p), 0);
	snprintf(p, sizeof(p), "%s/sub2/disk.img", top);
	assert_int_equal(open_beneath(top, p, O_RDONLY), -ENOTDIR);
	/* names that climb or leave */
	snprintf(p, sizeof(p), "%s/../outside.img", top);
	assert_int_equal(open_beneath(top, p, O_RDONLY), -EXDEV);
	assert_int_equal(open_beneath(top, q, O_RDONLY), -EXDEV);
	assert_int_equal(open_beneath(top, top, O_RDONLY), -EXDEV);
	snprintf(p, sizeof(p), "%s//sub/disk.img", top);
	assert_int_equal(open_beneath(top, p, O_RDONLY), -EINVAL);
	snprintf(p, sizeof(p), "%s/missing.img", top);
	assert_int_equal(open_beneath(top, p, O_RDONLY), -ENOENT);
	/* "/" as the directory: the whole path is walked */
	snprintf(p, sizeof(p), "%s/sub/disk.img", top);
	fd = open_beneath("/", p, O_RDONLY);
	assert_true(fd >= 0);
	close(fd);

	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	assert_int_equal(system(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_unbound_disk_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_unbound_tap_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_long_path_keeps_the_fix, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_local_binding, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_no_device_no_binding, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_allowed_disk, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_disk_outside_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_allowed_taps, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_both_devices, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_policy_keys, setup, teardown),
	    cmocka_unit_test(test_open_beneath),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
