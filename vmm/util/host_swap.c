/* SPDX-License-Identifier: Apache-2.0 */
/* host_swap.c - host_has_swap() (host_swap.h). */
#include "host_swap.h"

#include <stdio.h>

bool host_has_swap(void)
{
	FILE *f = fopen("/proc/swaps", "r");
	char line[256];
	int lines = 0;

	if (!f)
		return true;
	while (fgets(line, sizeof(line), f))
		lines++;
	fclose(f);
	return lines > 1; /* the first is the column header */
}
