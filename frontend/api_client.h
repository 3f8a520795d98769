/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_client.h - a small blocking HTTP/1.1 client for the control API on a
 * Unix socket (used by `vmm migrate` and the tests).
 *
 * One request per connection ("Connection: close"): connect, write the
 * request with Content-Length, read the whole response until the server
 * closes, parse the status line and the body. Every step is bounded by one
 * deadline (poll) and the response by API_CLIENT_MAX_RESPONSE bytes.
 *
 * Before it sends anything the client checks who serves the socket
 * (SO_PEERCRED): the server's uid must be our euid or 0, else the request
 * fails with -EACCES ("the API socket PATH is served by uid N, not by you
 * or root"), so that a socket planted by another user is never trusted.
 */
#ifndef VMM_API_CLIENT_H
#define VMM_API_CLIENT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define API_CLIENT_MAX_RESPONSE (1024 * 1024)

struct api_response {
	int status;  /* HTTP status code */
	char *text;  /* body, NUL-terminated (may be "") */
	size_t len;  /* body length */
	cJSON *json; /* parsed body, NULL when it is not JSON */
};

/*
 * Sends `method uri` with `body` (may be NULL) to the API socket at
 * socket_path and fills *resp. Returns 0 when a response was read (whatever
 * its status), else -errno with the message in err:
 *   -ENOENT / -ECONNREFUSED   nobody serves on the socket
 *   -EACCES                   the server runs as another uid (not root)
 *   -ECONNRESET / -EPIPE      the server closed the connection early
 *   -ETIMEDOUT                no connection or no full response within timeout_ms
 *   -EPROTO                   not an HTTP response
 *   -EMSGSIZE                 response larger than API_CLIENT_MAX_RESPONSE
 */
int api_client_request_raw(const char *socket_path, const char *method, const char *uri,
			   const char *body, size_t body_len, int timeout_ms,
			   struct api_response *resp, char *err, size_t errlen);

/* Same with a JSON body (NULL: no body). */
int api_client_request(const char *socket_path, const char *method, const char *uri,
		       const cJSON *body, int timeout_ms, struct api_response *resp, char *err,
		       size_t errlen);

/*
 * Connects to the API socket and checks its server's uid as above, by
 * `deadline` (now_ns()). Returns a non-blocking fd, or -errno with the
 * message in err (api_stream.c uses it too).
 */
int api_client_connect(const char *path, uint64_t deadline, char *err, size_t errlen);

/* The "error" member of a JSON error body, or the raw body, or "". */
const char *api_response_error(const struct api_response *resp);

void api_response_free(struct api_response *resp);

#endif /* VMM_API_CLIENT_H */
