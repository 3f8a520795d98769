/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_bind.c - who binds a migrating VM's devices to this host's
 * resources (config.h, config_bind_devices()): the target's operator, by
 * its own [disk] path and [net] tap or by the [migration] allow_disk_dirs
 * and allow_taps policy, never the migration stream. The stream's paths
 * and taps name things on the source's host: the same string here may be
 * an unrelated file (another host, another mount namespace), and a guest
 * writing to it would destroy it. Also the checks of the two policy keys'
 * values (config_keys.c calls them). Pure string work, any thread.
 */
#include "config.h"
#include "config_keys.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/*
 * The next item of a comma-separated list at *p into out, without the
 * blanks around it; false at the end. An item longer than out is cut
 * (the key checks refuse such values before they are stored).
 */
static bool next_item(const char **p, char *out, size_t outlen)
{
	const char *s = *p, *end;
	size_t n;

	if (!*s)
		return false;
	end = strchr(s, ',');
	if (!end)
		end = s + strlen(s);
	*p = *end ? end + 1 : end;
	while (s < end && isspace((unsigned char)*s))
		s++;
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	n = (size_t)(end - s) < outlen ? (size_t)(end - s) : outlen - 1;
	memcpy(out, s, n);
	out[n] = '\0';
	return true;
}

/*
 * An absolute path whose components are all names: no ".", no "..", no
 * empty one ("//"), no trailing "/" unless the path is "/" itself and
 * `dir` allows it. What a lexical prefix check can trust.
 */
static bool clean_absolute(const char *path, bool dir)
{
	const char *c = path;

	if (path[0] != '/')
		return false;
	if (dir && !strcmp(path, "/"))
		return true;
	while (*c == '/') {
		const char *next = strchr(c + 1, '/');
		size_t len = next ? (size_t)(next - c - 1) : strlen(c + 1);

		if (len == 0)
			return dir && !next && c != path; /* a directory's one trailing "/" */
		if ((len == 1 && c[1] == '.') || (len == 2 && c[1] == '.' && c[2] == '.'))
			return false;
		if (!next)
			return true;
		c = next;
	}
	return false;
}

/* `dir` (clean, maybe with a trailing "/") as a prefix: its length without that "/". */
static size_t dir_len(const char *dir)
{
	size_t n = strlen(dir);

	return n && dir[n - 1] == '/' ? n - 1 : n;
}

/* A clean `path` lies strictly below clean directory `dir`. */
static bool below(const char *path, const char *dir)
{
	size_t n = dir_len(dir);

	return !strncmp(path, dir, n) && path[n] == '/' && path[n + 1];
}

int config_dir_list_check(const char *value, char *why, size_t whylen)
{
	char item[PATH_MAX];
	const char *p = value;

	while (next_item(&p, item, sizeof(item))) {
		if (!item[0]) {
			snprintf(why, whylen, "an empty directory in the list (use DIR,DIR,...)");
			return -EINVAL;
		}
		if (!clean_absolute(item, true)) {
			snprintf(why, whylen,
				 "'%.200s' is not an absolute directory without '.', '..' or "
				 "'//'",
				 item);
			return -EINVAL;
		}
	}
	return 0;
}

/* A tap name's characters (T_NAME's) and fnmatch(3)'s: * ? [ ] ! */
static bool tap_pattern_char(unsigned char c)
{
	return isalnum(c) || strchr("_.-*?[]!", c);
}

int config_tap_list_check(const char *value, char *why, size_t whylen)
{
	char item[CONFIG_ALLOW_TAPS_MAX];
	const char *p = value;

	while (next_item(&p, item, sizeof(item))) {
		size_t n = strlen(item);

		if (!n) {
			snprintf(why, whylen, "an empty tap in the list (use NAME,PATTERN,...)");
			return -EINVAL;
		}
		if (n >= CONFIG_TAP_MAX) {
			snprintf(why, whylen, "'%.100s' is longer than a tap name (%d characters)",
				 item, CONFIG_TAP_MAX - 1);
			return -EINVAL;
		}
		for (size_t i = 0; i < n; i++)
			if (!tap_pattern_char((unsigned char)item[i])) {
				snprintf(why, whylen,
					 "'%s': a tap name or pattern has only A-Z a-z 0-9 _ . - "
					 "and * ? [ ] !",
					 item);
				return -EINVAL;
			}
	}
	return 0;
}

/* The directory of `dirs` that clean `path` lies below, into out; false when none. */
static bool allowed_dir(const char *path, const char *dirs, char *out, size_t outlen)
{
	char item[PATH_MAX];
	const char *p = dirs;

	while (next_item(&p, item, sizeof(item))) {
		if (item[0] && below(path, item)) {
			/* "/" itself stays "/": an empty disk_beneath would mean no policy */
			snprintf(out, outlen, "%.*s", dir_len(item) ? (int)dir_len(item) : 1, item);
			return true;
		}
	}
	return false;
}

static bool allowed_tap(const char *tap, const char *patterns)
{
	char item[CONFIG_ALLOW_TAPS_MAX];
	const char *p = patterns;

	while (next_item(&p, item, sizeof(item)))
		if (item[0] && fnmatch(item, tap, 0) == 0)
			return true;
	return false;
}

/*
 * The refusals name the device and the options that bind it first, the
 * source's backend last: a long path cut short by a message buffer (an
 * ERROR record, a log line) never hides the fix.
 */
static int bind_disk(struct vm_config *vm, const struct vm_config *local, char *err, size_t errlen)
{
	if (local->disk_path[0]) {
		memcpy(vm->disk_path, local->disk_path, sizeof(vm->disk_path));
		return 0;
	}
	if (!local->allow_disk_dirs[0]) {
		snprintf(err, errlen,
			 "this target binds no file to the VM's disk: start it with --set "
			 "disk.path=PATH or allow the source's with [migration] "
			 "allow_disk_dirs (the source's [disk] path: '%s')",
			 vm->disk_path);
		return -EPERM;
	}
	if (!clean_absolute(vm->disk_path, false)) {
		snprintf(err, errlen,
			 "the VM's disk cannot be allowed by [migration] allow_disk_dirs: "
			 "start the target with --set disk.path=PATH (the source's [disk] path "
			 "is not absolute or has '.', '..' or '//': '%s')",
			 vm->disk_path);
		return -EPERM;
	}
	if (!allowed_dir(vm->disk_path, local->allow_disk_dirs, vm->disk_beneath,
			 sizeof(vm->disk_beneath))) {
		snprintf(err, errlen,
			 "the VM's disk is outside [migration] allow_disk_dirs: start the target "
			 "with --set disk.path=PATH or allow its directory (the source's "
			 "[disk] path: '%s'; allowed: %s)",
			 vm->disk_path, local->allow_disk_dirs);
		return -EPERM;
	}
	return 0;
}

static int bind_tap(struct vm_config *vm, const struct vm_config *local, char *err, size_t errlen)
{
	if (local->net_tap[0]) {
		memcpy(vm->net_tap, local->net_tap, sizeof(vm->net_tap));
		return 0;
	}
	if (!local->allow_taps[0]) {
		snprintf(err, errlen,
			 "this target binds no tap to the VM's network device: start it with "
			 "--set net.tap=NAME or allow the source's with [migration] allow_taps "
			 "(the source's [net] tap: '%s')",
			 vm->net_tap);
		return -EPERM;
	}
	if (!allowed_tap(vm->net_tap, local->allow_taps)) {
		snprintf(err, errlen,
			 "the VM's tap matches nothing in [migration] allow_taps: start the "
			 "target with --set net.tap=NAME or allow it (the source's [net] tap: "
			 "'%s'; allowed: %s)",
			 vm->net_tap, local->allow_taps);
		return -EPERM;
	}
	return 0;
}

int config_bind_devices(struct vm_config *vm, const struct vm_config *local, char *err,
			size_t errlen)
{
	int ret = 0;

	vm->disk_beneath[0] = '\0';
	if (vm->disk_path[0])
		ret = bind_disk(vm, local, err, errlen);
	if (!ret && vm->net_tap[0])
		ret = bind_tap(vm, local, err, errlen);
	return ret;
}
