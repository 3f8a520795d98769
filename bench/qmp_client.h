/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qmp_client.h - the smallest QMP (QEMU Machine Protocol) client the
 * side-by-side benchmarks need to drive QEMU as its users do: connect to the
 * `-qmp unix:PATH,server=on,wait=off` socket, leave capabilities
 * negotiation, run a command and get its "return" value.
 *
 * QMP is one JSON object per line. Asynchronous events ({"event": ...})
 * may arrive between a command and its reply; they are skipped. One
 * thread per connection; every call is bounded by the timeout given at
 * connect. Functions return 0 or -errno with a message in (err, errlen).
 */
#ifndef VMM_BENCH_QMP_CLIENT_H
#define VMM_BENCH_QMP_CLIENT_H

#include <stddef.h>

#include <cjson/cJSON.h>

struct qmp {
	int fd;
	int timeout_ms;
	char buf[65536]; /* bytes read and not yet split into lines */
	size_t len;
};

/*
 * Connects to the socket at path (retrying until QEMU has created it, up to
 * timeout_ms), reads the greeting and runs qmp_capabilities.
 */
int qmp_connect(struct qmp *q, const char *path, int timeout_ms, char *err, size_t errlen);
/*
 * Runs {"execute": name, "arguments": args} (args may be NULL; it is not
 * freed). On success *ret (if not NULL) is the reply's "return" value, to be
 * freed with cJSON_Delete. A QMP error reply is -EPROTO with its description.
 */
int qmp_exec(struct qmp *q, const char *name, const cJSON *args, cJSON **ret, char *err,
	     size_t errlen);
/* Same, with the arguments as JSON text ("{\"uri\": \"tcp:...\"}"). */
int qmp_exec_json(struct qmp *q, const char *name, const char *args_json, cJSON **ret, char *err,
		  size_t errlen);
void qmp_close(struct qmp *q);

#endif /* VMM_BENCH_QMP_CLIENT_H */
