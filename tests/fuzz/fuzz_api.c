/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_api.c - the control API's request bodies as the server parses them
 * (api_routes.c: cJSON, then api_params_from_json() for PUT migrate,
 * api_resume_from_json() for PUT migrate/resume) and the progress object
 * as `vmm migrate` reads it back (api_progress_from_json()). Every input
 * goes through all three, plus api_parse_compress() and
 * migration_state_from_name() when the document is a string.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api_json.h"
#include "migration.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct migration_params p;
	struct migration_progress prog;
	enum migration_state st;
	char err[256], to[256], state[64];
	cJSON *j = cJSON_ParseWithLength((const char *)data, size);
	int level;

	if (!j)
		return 0;
	migration_params_defaults(&p);
	if (api_params_from_json(j, &p, err, sizeof(err)) == 0 &&
	    migration_params_check(&p, err, sizeof(err)) != 0)
		abort(); /* the API accepted what the engine refuses */
	(void)api_resume_from_json(j, to, sizeof(to), err, sizeof(err));
	if (api_progress_from_json(j, &prog, state, sizeof(state)) == 0 &&
	    strnlen(state, sizeof(state)) == sizeof(state))
		abort();
	if (cJSON_IsString(j)) {
		(void)api_parse_compress(j->valuestring, &level);
		(void)migration_state_from_name(j->valuestring, &st);
	}
	cJSON_Delete(j);
	return 0;
}
