/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fdt.h - minimal read-only flattened device tree reader for the firmware.
 *
 * libfdt is host-only, and the firmware needs just lookups by path and
 * property reads. fdt_open() validates the whole structure block once, so
 * the lookups afterwards walk a tree that is known to be well formed.
 * Nodes are named by the offset of their FDT_BEGIN_NODE token.
 */
#ifndef FW_FDT_H
#define FW_FDT_H

#include <stdint.h>

#define FDT_MAGIC    0xd00dfeedu
#define FDT_MAX_SIZE (2u << 20) /* refuse absurd totalsize values */

struct fdt {
	const uint8_t *blob;
	uint32_t size;	       /* totalsize */
	const uint8_t *st;     /* structure block */
	uint32_t st_size;
	const char *strings;   /* strings block */
	uint32_t strings_size;
};

/* Returns 0, or -1 with a reason in *why. */
int fdt_open(struct fdt *f, const void *blob, const char **why);

/* "/" or "/a/b"; a component without '@' also matches "name@unit". */
int fdt_find_node(const struct fdt *f, const char *path);
int fdt_first_child(const struct fdt *f, int node);
int fdt_next_sibling(const struct fdt *f, int node);
const char *fdt_node_name(const struct fdt *f, int node);

/* Property value and its length, or NULL when the node lacks it. */
const void *fdt_prop(const struct fdt *f, int node, const char *name, uint32_t *len);

uint32_t fdt_be32(const void *p);
uint64_t fdt_be64(const void *p);

/* Typed reads: return 0, or -1 when missing or of the wrong size. */
int fdt_prop_u32(const struct fdt *f, int node, const char *name, uint32_t *out);
int fdt_prop_u64(const struct fdt *f, int node, const char *name, uint64_t *out);
const char *fdt_prop_str(const struct fdt *f, int node, const char *name);

#endif /* FW_FDT_H */
