/* SPDX-License-Identifier: Apache-2.0 */
/* `vmm migrate`: placeholder until the control-API client lands. */
#include <stdio.h>

#include "cli.h"

int cli_migrate(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "vmm migrate: not built yet\n");
	return 1;
}
