/* SPDX-License-Identifier: Apache-2.0 */
/* log_limit.c - a few lines per interval, the rest counted (log_limit.h). */
#include "log_limit.h"

void log_limit_init(struct log_limit *l, unsigned burst, uint64_t interval_ms)
{
	pthread_mutex_init(&l->lock, NULL);
	l->interval_ns = interval_ms * 1000000ull;
	l->burst = burst ? burst : 1;
	l->window_start_ns = 0;
	l->passed = 0;
	l->left_out = 0;
}

void log_limit_destroy(struct log_limit *l)
{
	pthread_mutex_destroy(&l->lock);
}

bool log_limit_pass(struct log_limit *l, uint64_t now_ns, uint64_t *left_out)
{
	bool pass;

	pthread_mutex_lock(&l->lock);
	if (!l->passed || now_ns - l->window_start_ns >= l->interval_ns) {
		l->window_start_ns = now_ns;
		l->passed = 0;
	}
	pass = l->passed < l->burst;
	*left_out = 0;
	if (pass) {
		l->passed++;
		*left_out = l->left_out;
		l->left_out = 0;
	} else {
		l->left_out++;
	}
	pthread_mutex_unlock(&l->lock);
	return pass;
}
