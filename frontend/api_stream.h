/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_stream.h - the client side of GET /api/v1/vm/events (docs/api.md):
 * one long HTTP/1.1 request whose reply is a chunked stream of JSON
 * lines, for `vmm migrate`, on its main thread.
 *
 * The connection stays open after the reply ends (no "Connection: close"),
 * so that the server sees when we are done: a migrated-away source exits
 * once its watchers have closed (run_loop.c), after they printed.
 * Every wait is bounded by the caller's timeout; a line longer than
 * API_STREAM_MAX_LINE, or a malformed chunk, ends the stream (-EPROTO).
 */
#ifndef VMM_API_STREAM_H
#define VMM_API_STREAM_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "api_client.h"

#define API_STREAM_MAX_LINE (64 * 1024)
#define API_STREAM_RAW	    8192

struct api_stream {
	int fd;
	bool chunked;	   /* Transfer-Encoding: chunked (else the body ends at EOF) */
	bool ended;	   /* the last chunk, or EOF, was seen */
	size_t chunk_left; /* data bytes left in the current chunk */
	bool need_crlf;	   /* the CRLF after a chunk's data is still to come */
	char raw[API_STREAM_RAW];
	size_t raw_len;
	char *line; /* decoded data not yet returned as a line */
	size_t line_len;
};

/*
 * Connects and sends GET `uri`, waits for the reply's head (timeout_ms).
 * Returns 0 when the reply is a 200 stream; the HTTP status (> 0) when it
 * is not, with its body in *resp (e.g. 404 from an older server, 503 when
 * too many watch); -errno with the message in err when no reply came.
 */
int api_stream_open(struct api_stream *s, const char *socket_path, const char *uri, int timeout_ms,
		    struct api_response *resp, char *err, size_t errlen);

/*
 * The next line as JSON (*out, the caller frees it), waiting timeout_ms at
 * most. 0 with a line; -ETIMEDOUT or -EINTR (a signal: check it and call
 * again); -ENODATA once the stream ended (the server's last chunk, or it
 * closed); -EPROTO, -EMSGSIZE, -ECONNRESET, -errno: the stream is broken.
 */
int api_stream_next(struct api_stream *s, int timeout_ms, cJSON **out, char *err, size_t errlen);

/* Closes the connection (the server's cue that we are done) and frees s's buffers. */
void api_stream_close(struct api_stream *s);

#endif /* VMM_API_STREAM_H */
