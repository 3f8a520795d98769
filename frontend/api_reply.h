/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_reply.h - replies of the control API's handlers (docs/api.md,
 * "Conventions"): every body is JSON, every error {"error": "..."}.
 * Loop thread, from a request handler; each reply ends the request.
 */
#ifndef VMM_API_REPLY_H
#define VMM_API_REPLY_H

#include <cjson/cJSON.h>

struct evhttp_request;

/* Sends `body` (consumed; NULL means out of memory: a 500) with status code. */
void api_reply_json(struct evhttp_request *req, int code, cJSON *body);
/* {"error": MESSAGE} with status code. */
void api_reply_error(struct evhttp_request *req, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* {"state": state}, or NULL out of memory. */
cJSON *api_state_object(const char *state);
/* The request body as JSON; sends 400 (or 413) and returns NULL when it is not. */
cJSON *api_read_body(struct evhttp_request *req);

#endif /* VMM_API_REPLY_H */
