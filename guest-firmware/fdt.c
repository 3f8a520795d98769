// SPDX-License-Identifier: Apache-2.0
/*
 * fdt.c - minimal flattened device tree reader (see fdt.h).
 */
#include "fw.h"
#include "fdt.h"

#define FDT_BEGIN_NODE 1u
#define FDT_END_NODE   2u
#define FDT_PROP       3u
#define FDT_NOP	       4u
#define FDT_END	       9u

#define FDT_HDR_SIZE  40u
#define FDT_MAX_DEPTH 64

uint32_t fdt_be32(const void *p)
{
	const uint8_t *b = p;

	return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

uint64_t fdt_be64(const void *p)
{
	return ((uint64_t)fdt_be32(p) << 32) | fdt_be32((const uint8_t *)p + 4);
}

static uint32_t align4(uint32_t v)
{
	return (v + 3u) & ~3u;
}

static uint32_t tok(const struct fdt *f, uint32_t off)
{
	return fdt_be32(f->st + off);
}

/* Length of the NUL-terminated string at s within max bytes, or -1. */
static int64_t bounded_strlen(const char *s, uint32_t max)
{
	uint32_t n;

	for (n = 0; n < max; n++)
		if (!s[n])
			return n;
	return -1;
}

/*
 * Offset of the token after the one at `off`, or -1 if it runs past the
 * structure block. Used by validation, so it checks every length.
 */
static int64_t next_tok_checked(const struct fdt *f, uint32_t off, const char **why)
{
	uint32_t t, len, nameoff;
	int64_t n;

	switch (t = tok(f, off)) {
	case FDT_BEGIN_NODE:
		n = bounded_strlen((const char *)f->st + off + 4, f->st_size - off - 4);
		if (n < 0) {
			*why = "unterminated node name";
			return -1;
		}
		return off + 4 + align4((uint32_t)n + 1);
	case FDT_PROP:
		if (f->st_size - off < 12) {
			*why = "truncated property";
			return -1;
		}
		len = tok(f, off + 4);
		nameoff = tok(f, off + 8);
		if (len > f->st_size - off - 12) {
			*why = "property runs past the structure block";
			return -1;
		}
		if (nameoff >= f->strings_size ||
		    bounded_strlen(f->strings + nameoff, f->strings_size - nameoff) < 0) {
			*why = "bad property name offset";
			return -1;
		}
		return off + 12 + align4(len);
	case FDT_END_NODE:
	case FDT_NOP:
	case FDT_END:
		return off + 4;
	default:
		*why = "unknown structure token";
		return -1;
	}
}

/* Token after `off` in a validated tree. */
static uint32_t next_tok(const struct fdt *f, uint32_t off)
{
	const char *dummy;

	return (uint32_t)next_tok_checked(f, off, &dummy);
}

int fdt_open(struct fdt *f, const void *blob, const char **why)
{
	const uint8_t *h = blob;
	uint32_t size, off_st, off_str, version, st_size, str_size, off;
	int depth = 0;
	bool root_seen = false;

	if (!blob || ((uintptr_t)blob & 7u)) {
		*why = "null or misaligned device tree address";
		return -1;
	}
	if (fdt_be32(h) != FDT_MAGIC) {
		*why = "bad magic";
		return -1;
	}
	size = fdt_be32(h + 4);
	off_st = fdt_be32(h + 8);
	off_str = fdt_be32(h + 12);
	version = fdt_be32(h + 20);
	str_size = fdt_be32(h + 32);
	st_size = fdt_be32(h + 36);
	if (size < FDT_HDR_SIZE || size > FDT_MAX_SIZE) {
		*why = "totalsize out of bounds";
		return -1;
	}
	if (version < 17 || fdt_be32(h + 24) > 17) {
		*why = "unsupported version";
		return -1;
	}
	if (off_st < FDT_HDR_SIZE || off_st > size || st_size > size - off_st || (off_st & 3u) ||
	    (st_size & 3u) || st_size < 8) {
		*why = "structure block out of bounds";
		return -1;
	}
	if (off_str < FDT_HDR_SIZE || off_str > size || str_size > size - off_str) {
		*why = "strings block out of bounds";
		return -1;
	}
	f->blob = h;
	f->size = size;
	f->st = h + off_st;
	f->st_size = st_size;
	f->strings = (const char *)h + off_str;
	f->strings_size = str_size;

	/* One full pass so every later walk can trust the lengths. */
	for (off = 0;;) {
		uint32_t t;
		int64_t next;

		if (st_size - off < 4) {
			*why = "structure block ends without FDT_END";
			return -1;
		}
		t = tok(f, off);
		next = next_tok_checked(f, off, why);
		if (next < 0)
			return -1;
		if (t == FDT_BEGIN_NODE) {
			if (depth == 0 && root_seen) {
				*why = "more than one root node";
				return -1;
			}
			if (depth == 0 && off != 0) {
				*why = "root node is not first";
				return -1;
			}
			root_seen = true;
			if (++depth > FDT_MAX_DEPTH) {
				*why = "nesting too deep";
				return -1;
			}
		} else if (t == FDT_END_NODE) {
			if (depth-- == 0) {
				*why = "unbalanced end of node";
				return -1;
			}
		} else if (t == FDT_PROP && depth == 0) {
			*why = "property outside any node";
			return -1;
		} else if (t == FDT_END) {
			if (depth != 0 || !root_seen) {
				*why = "FDT_END inside a node or without a root";
				return -1;
			}
			return 0;
		}
		if ((uint64_t)next > st_size) {
			*why = "token runs past the structure block";
			return -1;
		}
		off = (uint32_t)next;
	}
}

const char *fdt_node_name(const struct fdt *f, int node)
{
	return (const char *)f->st + node + 4;
}

/* From `off`, skipping NOPs and properties: the next node at this level, or -1. */
static int node_from(const struct fdt *f, uint32_t off)
{
	for (;;) {
		uint32_t t = tok(f, off);

		if (t == FDT_BEGIN_NODE)
			return (int)off;
		if (t == FDT_END_NODE || t == FDT_END)
			return -1;
		off = next_tok(f, off);
	}
}

/* The first child node of `node` or -1. */
int fdt_first_child(const struct fdt *f, int node)
{
	return node_from(f, next_tok(f, (uint32_t)node));
}

/* Offset just past the FDT_END_NODE that closes `node`. */
static uint32_t skip_node(const struct fdt *f, uint32_t node)
{
	uint32_t off = next_tok(f, node);
	int depth = 1;

	while (depth) {
		uint32_t t = tok(f, off);

		if (t == FDT_BEGIN_NODE)
			depth++;
		else if (t == FDT_END_NODE)
			depth--;
		off = next_tok(f, off);
	}
	return off;
}

int fdt_next_sibling(const struct fdt *f, int node)
{
	return node_from(f, skip_node(f, (uint32_t)node));
}

/* Does node name `name` match path component [c, c+len)? */
static bool name_matches(const char *name, const char *c, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (name[i] != c[i])
			return false;
	if (name[len] == '\0')
		return true;
	if (name[len] != '@')
		return false;
	for (i = 0; i < len; i++)
		if (c[i] == '@')
			return false; /* "a@1" must not match "a@1x"'s prefix rule */
	return true;
}

int fdt_find_node(const struct fdt *f, const char *path)
{
	int node = 0;

	if (*path != '/')
		return -1;
	while (*path) {
		const char *c;
		size_t len;

		while (*path == '/')
			path++;
		if (!*path)
			break;
		for (c = path, len = 0; c[len] && c[len] != '/'; len++)
			;
		for (node = fdt_first_child(f, node); node >= 0; node = fdt_next_sibling(f, node))
			if (name_matches(fdt_node_name(f, node), c, len))
				break;
		if (node < 0)
			return -1;
		path = c + len;
	}
	return node;
}

const void *fdt_prop(const struct fdt *f, int node, const char *name, uint32_t *len)
{
	uint32_t off = next_tok(f, (uint32_t)node);

	for (;;) {
		uint32_t t = tok(f, off);

		if (t == FDT_PROP) {
			if (!fw_strcmp(f->strings + tok(f, off + 8), name)) {
				*len = tok(f, off + 4);
				return f->st + off + 12;
			}
		} else if (t != FDT_NOP) {
			return NULL; /* properties precede subnodes */
		}
		off = next_tok(f, off);
	}
}

int fdt_prop_u32(const struct fdt *f, int node, const char *name, uint32_t *out)
{
	uint32_t len;
	const void *p = fdt_prop(f, node, name, &len);

	if (!p || len != 4)
		return -1;
	*out = fdt_be32(p);
	return 0;
}

/* u64 values are two cells; a single cell is accepted as well. */
int fdt_prop_u64(const struct fdt *f, int node, const char *name, uint64_t *out)
{
	uint32_t len;
	const void *p = fdt_prop(f, node, name, &len);

	if (!p || (len != 8 && len != 4))
		return -1;
	*out = len == 8 ? fdt_be64(p) : fdt_be32(p);
	return 0;
}

const char *fdt_prop_str(const struct fdt *f, int node, const char *name)
{
	uint32_t len;
	const char *p = fdt_prop(f, node, name, &len);

	if (!p || !len || p[len - 1] != '\0')
		return NULL;
	return p;
}
