/* SPDX-License-Identifier: Apache-2.0 */
/*
 * soak_pki.h - the soak's TLS files: a throwaway CA and one certificate per
 * host, made with the openssl tool in DIR/pki at the start of a run. Both
 * hosts are 127.0.0.1, and each is a target in turn, so both certificates
 * carry the IP SAN the source checks (docs/config.md, [migration] tls_cert).
 */
#ifndef VMM_SOAK_PKI_H
#define VMM_SOAK_PKI_H

#include <stddef.h>

#include "soak_node.h"

/* Makes the CA and a certificate for each of the n hosts; sets their tls_* paths. */
int soak_pki_make(const char *dir, struct soak_host *hosts, int n, char *err, size_t errlen);

#endif /* VMM_SOAK_PKI_H */
