/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_config.c - the VM config as the target parses it from a VM_DESC
 * (config_load_text_with() and the front end's layer over no struct, as
 * the gate reads it: its exact bytes, NULs refused; libinih underneath),
 * and config_set_with() on the same text as a `--set` assignment.
 *
 * A config that loads must survive its own round trip: config_format()
 * writes it back, and loading that text into fresh defaults must succeed
 * and format to the same text (it is how the source describes the VM).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "frontend_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vm_config cfg, again;
	static char text[1 << 16], text2[1 << 16];
	char err[CONFIG_ERR_MAX];
	struct config_layer host = frontend_config_layer(NULL);
	char *ini = malloc(size + 1);
	int n, n2;

	if (!ini)
		abort();
	memcpy(ini, data, size);
	ini[size] = '\0';
	config_defaults(&cfg);
	if (config_load_text_with(&cfg, &host, ini, size, "migration stream", err, sizeof(err)) ==
	    0) {
		n = config_format(&cfg, text, sizeof(text));
		if (n >= 0) {
			config_defaults(&again);
			if (config_load_text_with(&again, &host, text, strlen(text), "round trip",
						  err, sizeof(err))) {
				fprintf(stderr, "config round trip refused: %s\n--\n%s--\n", err,
					text);
				abort();
			}
			n2 = config_format(&again, text2, sizeof(text2));
			if (n2 != n || memcmp(text, text2, (size_t)n)) {
				fprintf(stderr, "config round trip differs:\n%s--\n%s--\n", text,
					text2);
				abort();
			}
		}
	}
	config_defaults(&cfg);
	(void)config_set_with(&cfg, &host, ini, err, sizeof(err));
	free(ini);
	return 0;
}
