// SPDX-License-Identifier: Apache-2.0
/*
 * lib.c - the few string/memory routines the firmware and the compiler need.
 *
 * gcc may emit calls to memset/memcpy/memmove/memcmp even with
 * -ffreestanding, so they must exist; byte loops are enough here.
 */
#include "fw.h"

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
