/* SPDX-License-Identifier: Apache-2.0 */
/* api_reply.c - the control API's JSON replies and request bodies (api_reply.h). */
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_reply.h"
#include "api_server.h"

static const char *reason(int code)
{
	switch (code) {
	case 200:
		return "OK";
	case 202:
		return "Accepted";
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 409:
		return "Conflict";
	case 413:
		return "Payload Too Large";
	case 503:
		return "Service Unavailable";
	default:
		return "Internal Server Error";
	}
}

/* Sends `body` (consumed; NULL means out of memory) as the reply. */
void api_reply_json(struct evhttp_request *req, int code, cJSON *body)
{
	struct evbuffer *out = evhttp_request_get_output_buffer(req);
	char *text = body ? cJSON_PrintUnformatted(body) : NULL;

	cJSON_Delete(body);
	if (!text) {
		code = 500;
		text = strdup("{\"error\":\"out of memory\"}");
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
			  "application/json");
	if (text) {
		evbuffer_add(out, text, strlen(text));
		evbuffer_add(out, "\n", 1);
	}
	free(text);
	evhttp_send_reply(req, code, reason(code), NULL);
}

void api_reply_error(struct evhttp_request *req, int code, const char *fmt, ...)
{
	char msg[512];
	cJSON *body = cJSON_CreateObject();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (body && !cJSON_AddStringToObject(body, "error", msg)) {
		cJSON_Delete(body);
		body = NULL;
	}
	api_reply_json(req, code, body);
}

cJSON *api_state_object(const char *state)
{
	cJSON *j = cJSON_CreateObject();

	if (j && !cJSON_AddStringToObject(j, "state", state)) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

/* Parses the request body as JSON; sends 400 and returns NULL on failure. */
cJSON *api_read_body(struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	size_t len = evbuffer_get_length(in);
	char *text;
	cJSON *j;

	if (len == 0) {
		api_reply_error(req, 400, "a JSON request body is required");
		return NULL;
	}
	text = malloc(len + 1);
	if (!text) {
		api_reply_json(req, 500, NULL);
		return NULL;
	}
	evbuffer_copyout(in, text, len);
	text[len] = '\0';
	j = cJSON_ParseWithLength(text, len);
	free(text);
	if (!j)
		api_reply_error(req, 400, "the request body is not valid JSON");
	return j;
}
