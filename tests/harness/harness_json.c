/* SPDX-License-Identifier: Apache-2.0 */
#include "harness_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double hx_json_num(const cJSON *j, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

bool hx_json_text(const cJSON *j, const char *key, char *buf, size_t len)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);

	if (cJSON_IsString(v))
		snprintf(buf, len, "%s", v->valuestring);
	else if (cJSON_IsNumber(v) && v->valuedouble == (double)(long long)v->valuedouble &&
		 v->valuedouble > -9e15 && v->valuedouble < 9e15)
		snprintf(buf, len, "%lld", (long long)v->valuedouble); /* counters: digits, no e+ */
	else if (cJSON_IsNumber(v))
		for (int prec = 1; prec <= 17; prec++) { /* the shortest that reads back the same */
			snprintf(buf, len, "%.*g", prec, v->valuedouble);
			if (strtod(buf, NULL) == v->valuedouble)
				break;
		}
	else if (cJSON_IsBool(v))
		snprintf(buf, len, "%s", cJSON_IsTrue(v) ? "true" : "false");
	else if (cJSON_IsNull(v))
		snprintf(buf, len, "null");
	else
		return false;
	return true;
}

int hx_json_expect(const cJSON *j, const char *key_value, char *err, size_t errlen)
{
	const char *eq = strchr(key_value, '=');
	char key[128], have[512];
	const cJSON *v;

	if (!eq || eq == key_value || (size_t)(eq - key_value) >= sizeof(key)) {
		snprintf(err, errlen, "expectation '%s' is not KEY=VALUE", key_value);
		return -EINVAL;
	}
	memcpy(key, key_value, (size_t)(eq - key_value));
	key[eq - key_value] = '\0';
	if (!hx_json_text(j, key, have, sizeof(have))) {
		snprintf(err, errlen, "the summary has no \"%s\"", key);
		return -EINVAL;
	}
	v = cJSON_GetObjectItemCaseSensitive(j, key);
	if (cJSON_IsNumber(v)) {
		char *end;
		double want = strtod(eq + 1, &end);

		if (end != eq + 1 && !*end && want == v->valuedouble)
			return 0;
	} else if (!strcmp(have, eq + 1)) {
		return 0;
	}
	snprintf(err, errlen, "the summary has \"%s\": %s, not %s", key, have, eq + 1);
	return -EINVAL;
}
