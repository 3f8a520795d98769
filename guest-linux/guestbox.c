// SPDX-License-Identifier: Apache-2.0
/*
 * guestbox.c - the guest's programs in one static binary, busybox-style.
 *
 * Every static glibc program carries ~0.7 MB of libc, and the kernel
 * unpacks the initramfs at 3-8 s per MB on the emulating hosts, so the
 * initramfs holds memverify, tcpecho and blkverify as hard links to this
 * one file (build-initramfs.sh), which runs the program its name says.
 * Each program's main() is compiled in under the name NAME_main
 * (CMakeLists.txt); the same sources also build the standalone programs.
 */
#include <stdio.h>
#include <string.h>

int memverify_main(int argc, char **argv);
int tcpecho_main(int argc, char **argv);
int blkverify_main(int argc, char **argv);

static const struct {
	const char *name;
	int (*main)(int argc, char **argv);
} programs[] = {
    {"memverify", memverify_main},
    {"tcpecho", tcpecho_main},
    {"blkverify", blkverify_main},
};

int main(int argc, char **argv)
{
	/* As /bin/NAME, or as "guestbox NAME ARGS..." (the build tree's copy). */
	for (int shifted = 0; argc > 0 && shifted < 2; shifted++, argc--, argv++) {
		const char *slash = strrchr(argv[0], '/');
		const char *name = slash ? slash + 1 : argv[0];

		for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++)
			if (!strcmp(name, programs[i].name))
				return programs[i].main(argc, argv);
	}
	fprintf(stderr, "usage: guestbox memverify|tcpecho|blkverify ARGS...\n");
	return 2;
}
