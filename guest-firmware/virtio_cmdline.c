// SPDX-License-Identifier: Apache-2.0
/*
 * virtio_cmdline.c - the virtio_mmio.device= words of the kernel command
 * line (see virtio_cmdline.h): the device list QEMU microvm gives a PVH
 * guest, which has no device tree.
 */
#include "virtio_cmdline.h"

#define KEY	"virtio_mmio.device="
#define KEY_LEN (sizeof(KEY) - 1)

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

static int digit(char c, unsigned int base)
{
	int v = c >= '0' && c <= '9'   ? c - '0'
		: c >= 'a' && c <= 'f' ? c - 'a' + 10
		: c >= 'A' && c <= 'F' ? c - 'A' + 10
				       : 99;

	return v < (int)base ? v : -1;
}

/*
 * A number as strtoull(s, &end, 0) reads it, from s up to at most `end`:
 * the first character after it, or NULL when there is no digit or it
 * does not fit 64 bits.
 */
static const char *number(const char *s, const char *end, uint64_t *out)
{
	unsigned int base = 10;
	uint64_t x = 0;
	const char *start;
	int v;

	if (s < end && *s == '0') {
		base = 8;
		if (end - s > 2 && (s[1] == 'x' || s[1] == 'X') && digit(s[2], 16) >= 0) {
			base = 16;
			s += 2;
		}
	}
	for (start = s; s < end && (v = digit(*s, base)) >= 0; s++) {
		if (x > (UINT64_MAX - (uint64_t)v) / base)
			return NULL;
		x = x * base + (uint64_t)v;
	}
	*out = x;
	return s > start ? s : NULL;
}

/* <size>@<base>:<irq>[:<id>] in v[0..len). */
static int parse_value(const char *v, const char *end, struct virtio_cmdline_dev *d)
{
	unsigned int shift = 0;
	uint64_t irq, id;

	v = number(v, end, &d->size);
	if (!v)
		return -1;
	switch (v < end ? *v : '\0') { /* memparse: each suffix a factor of 1024 */
	case 'E':
	case 'e':
		shift += 10;
		/* fall through */
	case 'P':
	case 'p':
		shift += 10;
		/* fall through */
	case 'T':
	case 't':
		shift += 10;
		/* fall through */
	case 'G':
	case 'g':
		shift += 10;
		/* fall through */
	case 'M':
	case 'm':
		shift += 10;
		/* fall through */
	case 'K':
	case 'k':
		shift += 10;
		v++;
		break;
	}
	if (shift && d->size > UINT64_MAX >> shift)
		return -1;
	d->size <<= shift;
	if (v >= end || *v++ != '@' || !(v = number(v, end, &d->base)))
		return -1;
	if (v >= end || *v++ != ':' || !(v = number(v, end, &irq)) || !irq || irq > UINT32_MAX)
		return -1;
	d->irq = (uint32_t)irq;
	if (v < end) { /* Linux's optional platform device id: read and ignored */
		if (*v++ != ':')
			return -1;
		if (v < end && *v == '-')
			v++;
		if (!(v = number(v, end, &id)))
			return -1;
	}
	return v == end ? 0 : -1;
}

int virtio_cmdline_next(const char **pos, struct virtio_cmdline_dev *d)
{
	const char *c = *pos;

	while (*c) {
		const char *w;

		while (is_space(*c))
			c++;
		for (w = c; *c && !is_space(*c); c++)
			;
		if ((size_t)(c - w) < KEY_LEN || __builtin_memcmp(w, KEY, KEY_LEN))
			continue;
		*pos = c;
		d->word = w;
		d->len = (size_t)(c - w);
		return parse_value(w + KEY_LEN, c, d) ? -1 : 1;
	}
	*pos = c;
	return 0;
}
