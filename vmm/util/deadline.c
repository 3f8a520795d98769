/* SPDX-License-Identifier: Apache-2.0 */
#include "deadline.h"

#include <errno.h>
#include <limits.h>

#include "clock.h"

int deadline_poll_ms(uint64_t deadline, uint64_t now)
{
	uint64_t ms;

	if (!deadline)
		return -1;
	if (now >= deadline)
		return 0;
	ms = (deadline - now) / 1000000u + ((deadline - now) % 1000000u != 0);
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

int deadline_poll(struct pollfd *fds, nfds_t n, uint64_t deadline)
{
	for (;;) {
		int r = poll(fds, n, deadline_poll_ms(deadline, now_ns()));

		/* Past INT_MAX ms, or a clock that disagrees with poll's: time is left. */
		if (r == 0 && deadline && now_ns() < deadline)
			continue;
		if (r >= 0)
			return r;
		if (errno != EINTR)
			return -errno;
	}
}
