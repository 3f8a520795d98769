// SPDX-License-Identifier: Apache-2.0
/*
 * lib.c - the few routines every other file needs: string/memory ones the
 * firmware and the compiler use, the VM exit and the secondaries' gate.
 *
 * gcc may emit calls to memset/memcpy/memmove/memcmp even with
 * -ffreestanding, so they must exist; byte loops are enough here.
 *
 * The bottom of the firmware's call graph: it calls no other file, so the
 * workloads, the exception handler and the drivers can stop the VM or let
 * the secondaries run without calling up into main.c.
 */
#include "fw.h"

/* Set once by vCPU 0 when fw_params is complete (fw_release_secondaries). */
static int params_ready;

void *memmove(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);

void *memset(void *d, int c, size_t n)
{
	unsigned char *p = d;

	while (n--)
		*p++ = (unsigned char)c;
	return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
	unsigned char *dp = d;
	const unsigned char *sp = s;

	while (n--)
		*dp++ = *sp++;
	return d;
}

void *memmove(void *d, const void *s, size_t n)
{
	unsigned char *dp = d;
	const unsigned char *sp = s;

	if (dp < sp)
		return memcpy(d, s, n);
	while (n--)
		dp[n] = sp[n];
	return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;

	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

size_t fw_strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

int fw_strcmp(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

void fw_exit(uint32_t status)
{
	outl(VMM_EXIT_PORT, status);
	halt_forever(); /* the host stops the VM on the OUT; just in case */
}

void fw_release_secondaries(void)
{
	__atomic_store_n(&params_ready, 1, __ATOMIC_RELEASE);
}

void fw_wait_released(void)
{
	while (!__atomic_load_n(&params_ready, __ATOMIC_ACQUIRE))
		cpu_relax();
}
