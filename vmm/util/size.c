/* SPDX-License-Identifier: Apache-2.0 */
/* Numbers as users write them: sizes with binary suffixes, plain integers. */
#include "size.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>

static int parse_digits(const char *s, const char **end, unsigned base, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;
	bool overflow = false;

	for (;; p++) {
		unsigned d;

		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (base == 16 && *p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			break;
		if (v > (UINT64_MAX - d) / base)
			overflow = true;
		else
			v = v * base + d;
	}
	if (p == s)
		return -EINVAL;
	*end = p;
	*out = v;
	return overflow ? -ERANGE : 0;
}

int parse_u64(const char *s, uint64_t *out)
{
	const char *end;
	uint64_t v;
	unsigned base = 10;
	int rc;

	if (!s || !out)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	rc = parse_digits(s, &end, base, &v);
	if (rc == -EINVAL || *end != '\0')
		return -EINVAL;
	if (rc)
		return rc;
	*out = v;
	return 0;
}

/*
 * Decimal with an optional binary suffix K/M/G/T (case-insensitive), which
 * may be followed by "B" or "iB"; a bare "B" means bytes. "0x" hex is
 * accepted without a suffix only ("0x1B" is 27 bytes, not 1 byte-suffix).
 */
int parse_size(const char *s, uint64_t *out)
{
	const char *end;
	uint64_t v, mult = 1;
	int rc;

	if (!s || !out)
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return parse_u64(s, out);
	rc = parse_digits(s, &end, 10, &v);
	if (rc == -EINVAL)
		return -EINVAL;
	switch (tolower((unsigned char)*end)) {
	case '\0':
		break;
	case 'b':
		end++;
		break;
	case 'k':
		mult = KiB;
		end++;
		break;
	case 'm':
		mult = MiB;
		end++;
		break;
	case 'g':
		mult = GiB;
		end++;
		break;
	case 't':
		mult = TiB;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (mult != 1) {
		if (tolower((unsigned char)end[0]) == 'i' && tolower((unsigned char)end[1]) == 'b')
			end += 2;
		else if (tolower((unsigned char)end[0]) == 'b')
			end++;
	}
	if (*end != '\0')
		return -EINVAL;
	if (rc)
		return rc;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

