/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tap.h - a tap device for the virtio-net device: one Ethernet frame per
 * read() and write(), no packet information header (IFF_NO_PI) and no
 * virtio-net header (the device adds and strips it: no offloads are
 * offered, so the header is always the plain one).
 */
#ifndef VMM_TAP_H
#define VMM_TAP_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Attaches to the tap `name`, creating it (and setting it up) when no
 * interface of that name exists. Main thread. Returns the non-blocking fd,
 * or -errno with one line in err naming the tap and what to do about it.
 * *created says whether this call made it (it then vanishes with the fd).
 */
int tap_open(const char *name, bool *created, char *err, size_t errlen);

#endif /* VMM_TAP_H */
