/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_layer.h - the seam between the machine's config (config.h) and
 * the sections a layer above it owns in the same file.
 *
 * A config file holds the VM's sections ([vm], [firmware], ...) and this
 * host's ([console], [api], [log], [migration] tls_*), which only the front
 * end reads. The machine's parser knows its own keys only; a caller that
 * owns other keys hands it a struct config_layer: a table of those keys
 * and the struct their values go to. The machine checks and stores them by
 * the table alone (it never names a foreign key or section), so both
 * kinds of keys are read in one pass with the same syntax, the same `--set
 * section.key=value`, the same one-line errors, and an unknown section or
 * key is refused once, with every known one listed. A parse without a
 * layer refuses the layer's sections like any unknown section.
 *
 * Pure data: any thread may use a layer on memory it owns.
 */
#ifndef VMM_CONFIG_LAYER_H
#define VMM_CONFIG_LAYER_H

#include <stddef.h>
#include <stdint.h>

#include "enum_names.h"

/* How a key's value is checked and stored. */
enum config_key_type {
	CONFIG_T_NAME,	   /* [A-Za-z0-9_.-]+ */
	CONFIG_T_STR,	   /* free text, no control characters */
	CONFIG_T_SIZE,	   /* parse_size, multiple of align, min..max, uint64_t */
	CONFIG_T_U64,	   /* parse_u64, min..max, uint64_t */
	CONFIG_T_VCPUS,	   /* parse_u64, min..max, stored as unsigned */
	CONFIG_T_ENUM,	   /* an int-sized enum field, one of the key's names */
	CONFIG_T_FEATURES, /* a CONFIG_T_STR of CPU feature names (cpu_features.h) */
	CONFIG_T_ONOFF,	   /* bool, "on" or "off" */
	CONFIG_T_BOOL,	   /* bool, "true" or "false" */
	CONFIG_T_MAC,	   /* a unicast Ethernet address, stored as "xx:xx:xx:xx:xx:xx" */
	CONFIG_T_DIRS,	   /* a CONFIG_T_STR list of absolute directories */
	CONFIG_T_TAPS,	   /* a CONFIG_T_STR list of tap names or fnmatch(3) patterns */
};

#define CONFIG_F_NONEMPTY 1u /* a string key refuses "" */
/*
 * config_format_with() writes the key into the VM description (the
 * migration stream's VM_DESC, a snapshot's config), so that the description
 * stays what it has always been: a target checks it and drops it, a
 * restore takes it.
 */
#define CONFIG_F_DESCRIBE 2u

struct config_key {
	const char *section;
	const char *key;
	enum config_key_type type;
	size_t off;	/* the value's offset in the layer's struct */
	size_t size;	/* its size (a string's buffer) */
	uint64_t align; /* CONFIG_T_SIZE */
	uint64_t min, max;
	long origin_off; /* offset of a struct config_origin in the struct, or -1 */
	unsigned flags;
	const struct enum_names *names; /* CONFIG_T_ENUM: its words, read and written alike */
};

/* A field's offset and size, for a table's off and size. */
#define CONFIG_FIELD(type, f) offsetof(type, f), sizeof(((type *)0)->f)

/*
 * A layer's keys and where their values go. A load works on a copy of
 * `size` bytes of base, written back only when the whole text was good;
 * base NULL checks the values and keeps none (a migration target's view
 * of the host sections a VM description carries: its own host's win).
 * keys NULL: no layer.
 */
struct config_layer {
	const struct config_key *keys;
	size_t nkeys;
	void *base;
	size_t size;
};

#endif /* VMM_CONFIG_LAYER_H */
