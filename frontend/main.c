/* SPDX-License-Identifier: Apache-2.0 */
/* vmm: command-line entry point. Only this file and cli_*.c print and exit. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: vmm <command> [options]\n"
    "\n"
    "commands:\n"
    "  run CONFIG [--set section.key=value]...   boot a VM (see 'vmm run --help')\n"
    "  run --restore DIR [--set ...]             restore a snapshot and run it on\n"
    "  migrate --to HOST:PORT [options]           move a running VM to another vmm\n"
    "  snapshot --to DIR [--stop] [options]       write the VM's memory and state to DIR\n"
    "  status [--vm NAME] [--json]                the VM's state\n"
    "  info [--vm NAME] [--json]                  its configuration and vmm's versions\n"
    "  pause | resume [--vm NAME]                 pause or resume the guest\n"
    "  stop [--vm NAME]                           stop the VM\n"
    "  cpu-features --host | --common FILE...     a fleet's CPU features (see --help)\n"
    "\n"
    "options:\n"
    "  -h, --help      this text\n"
    "  -V, --version   the version, and those of its protocol, snapshot format and state\n";

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		return cli_version();
	}
	if (!strcmp(argv[1], "run"))
		return cli_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "migrate"))
		return cli_migrate(argc - 1, argv + 1);
	if (!strcmp(argv[1], "snapshot"))
		return cli_snapshot(argc - 1, argv + 1);
	if (!strcmp(argv[1], "cpu-features"))
		return cli_cpu_features(argc - 1, argv + 1);
	if (cli_is_vm_verb(argv[1]))
		return cli_vm_verb(argc - 1, argv + 1);
	fprintf(stderr, "vmm: unknown command '%s' (try 'vmm --help')\n", argv[1]);
	return EXIT_USAGE;
}
