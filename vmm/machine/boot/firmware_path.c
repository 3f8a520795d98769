/* SPDX-License-Identifier: Apache-2.0 */
/*
 * firmware_path.c - where the default firmware is when a config sets no
 * [firmware] path (config.h, config_default_firmware).
 *
 * An installed vmm finds it next to itself: bin/vmm ->
 * ../share/vmm/vmm-firmware.elf (VMM_FIRMWARE_FROM_BIN, the install layout
 * computed by CMake), so a prefix can be moved or copied into an image.
 * A developer's build tree has no share/ next to build/vmm/vmm, so the
 * build's own firmware (VMM_BUILD_FIRMWARE, empty when the build turned
 * that fallback off, as the container image does) comes second.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef VMM_FIRMWARE_FROM_BIN
#error "VMM_FIRMWARE_FROM_BIN must be defined by the build"
#endif
#ifndef VMM_BUILD_FIRMWARE
#error "VMM_BUILD_FIRMWARE must be defined by the build (empty for no build-tree fallback)"
#endif

/* Appends "'path' (why)" to the list of paths tried, for the error. */
static void tried_add(char *tried, size_t len, const char *path, const char *why)
{
	size_t used = strlen(tried);

	if (used < len)
		snprintf(tried + used, len - used, "%s'%s' (%s)", used ? ", " : "", path, why);
}

/* Whether `path` is a readable regular file; the reason it is not in *why. */
static bool usable(const char *path, const char **why)
{
	struct stat st;

	if (stat(path, &st) != 0) {
		*why = strerror(errno);
		return false;
	}
	if (!S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		return false;
	}
	if (access(path, R_OK) != 0) {
		*why = strerror(errno);
		return false;
	}
	return true;
}

int firmware_find(const char *exe, const char *from_bin, const char *build_path, char *out,
		  size_t outlen, char *err, size_t errlen)
{
	char cand[PATH_MAX], tried[2 * PATH_MAX + 64] = "";
	const char *why;

	if (exe && exe[0] == '/') {
		const char *slash = strrchr(exe, '/');
		int n = snprintf(cand, sizeof(cand), "%.*s/%s", (int)(slash - exe), exe, from_bin);

		if (n < 0 || (size_t)n >= sizeof(cand))
			tried_add(tried, sizeof(tried), exe, "path too long");
		else if (usable(cand, &why))
			goto found;
		else
			tried_add(tried, sizeof(tried), cand, why);
	} else {
		tried_add(tried, sizeof(tried), "../share/vmm next to the binary",
			  "the binary's path is unknown");
	}
	if (build_path && build_path[0]) {
		snprintf(cand, sizeof(cand), "%s", build_path);
		if (usable(cand, &why))
			goto found;
		tried_add(tried, sizeof(tried), cand, why);
	}
	snprintf(err, errlen,
		 "[firmware] path: not set and no default firmware found (tried %s); set it "
		 "to a vmm firmware ELF",
		 tried);
	return -ENOENT;
found:
	if (strlen(cand) >= outlen) {
		snprintf(err, errlen, "[firmware] path: default '%s' is too long", cand);
		return -ENAMETOOLONG;
	}
	memcpy(out, cand, strlen(cand) + 1);
	return 0;
}

int config_default_firmware(struct vm_config *cfg, char *err, size_t errlen)
{
	char exe[PATH_MAX];
	ssize_t n;

	if (cfg->firmware_path[0])
		return 0;
	/* The kernel's path of this very binary, symlinks resolved. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	return firmware_find(exe, VMM_FIRMWARE_FROM_BIN, VMM_BUILD_FIRMWARE, cfg->firmware_path,
			     sizeof(cfg->firmware_path), err, errlen);
}
