/* SPDX-License-Identifier: Apache-2.0 */
#include "soak_pki.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Runs a shell command; its output goes to LOG. */
static int sh(const char *cmd, const char *log, char *err, size_t errlen)
{
	char full[4 * PATH_MAX + 64];
	int n = snprintf(full, sizeof(full), "( %s ) >>'%s' 2>&1", cmd, log);

	if (n < 0 || (size_t)n >= sizeof(full)) {
		snprintf(err, errlen, "openssl command too long");
		return -ENAMETOOLONG;
	}
	if (system(full) != 0) {
		snprintf(err, errlen, "openssl failed making the TLS files (see %s)", log);
		return -EIO;
	}
	return 0;
}

int soak_pki_make(const char *dir, struct soak_host *hosts, int n, char *err, size_t errlen)
{
	char pki[PATH_MAX - 64], log[PATH_MAX + 16], cmd[4 * PATH_MAX];
	int ret;

	if ((size_t)snprintf(pki, sizeof(pki), "%s/pki", dir) >= sizeof(pki)) {
		snprintf(err, errlen, "work dir path too long");
		return -ENAMETOOLONG;
	}
	if (mkdir(pki, 0700) && errno != EEXIST) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", pki, strerror(errno));
		return ret;
	}
	snprintf(log, sizeof(log), "%s/openssl.log", pki);
	remove(log);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
		 "-nodes -days 2 -subj /CN=soak-ca -keyout ca.key -out ca.pem",
		 pki);
	ret = sh(cmd, log, err, errlen);
	for (int i = 0; !ret && i < n; i++) {
		const char *h = hosts[i].label;

		snprintf(
		    cmd, sizeof(cmd),
		    "cd '%s' && openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
		    "-subj /CN=soak-host-%s -keyout host-%s.key -out host-%s.csr && "
		    "echo subjectAltName=IP:127.0.0.1 > host-%s.ext && "
		    "openssl x509 -req -in host-%s.csr -CA ca.pem -CAkey ca.key "
		    "-CAcreateserial -days 2 -extfile host-%s.ext -out host-%s.pem",
		    pki, h, h, h, h, h, h, h);
		ret = sh(cmd, log, err, errlen);
		snprintf(hosts[i].tls_cert, sizeof(hosts[i].tls_cert), "%s/host-%s.pem", pki, h);
		snprintf(hosts[i].tls_key, sizeof(hosts[i].tls_key), "%s/host-%s.key", pki, h);
		snprintf(hosts[i].tls_ca, sizeof(hosts[i].tls_ca), "%s/ca.pem", pki);
	}
	return ret;
}
