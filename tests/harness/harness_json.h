/* SPDX-License-Identifier: Apache-2.0 */
/*
 * harness_json.h - reading the summary `vmm migrate --json` prints (the
 * progress object of docs/api.md): numbers for the benchmarks, and
 * "key=value" expectations for the tests.
 */
#ifndef VMM_HARNESS_JSON_H
#define VMM_HARNESS_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* The number at key, or -1 when there is none. */
double hx_json_num(const cJSON *j, const char *key);

/*
 * The value at key as text: a string as is, a number in its shortest form
 * ("3", "0.5"), true/false/null as written. False when there is no such key
 * (or its value is an array or object).
 */
bool hx_json_text(const cJSON *j, const char *key, char *buf, size_t len);

/*
 * Checks "KEY=VALUE" against j: the value at KEY reads as VALUE (numbers
 * compare as numbers, so "resumes=1" matches 1 and 1.0). 0, or -EINVAL
 * with the mismatch in err.
 */
int hx_json_expect(const cJSON *j, const char *key_value, char *err, size_t errlen);

#endif /* VMM_HARNESS_JSON_H */
