/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_commit.c - the switchover commit's exchange over loopback, with
 * and without the blackout's bounded poll (migration/wire/spin_wait.h).
 *
 * Two threads play the source and the target on one connection (a UNIX
 * socketpair or TCP on 127.0.0.1, tuned as migration connections are) and
 * exchange records of the commit's sizes: END (4 data connections), then
 * PREPARED, COMMIT, COMMITTED. The target may "work" between END and
 * PREPARED (--target-work-us, a busy loop standing in for loading the
 * state), which is when a sleeping source pays a wake-up. One run is END
 * sent to COMMITTED received on the source's clock: the commit's share of
 * blackout_ack_us without the proofs and the state. Each mode runs
 * --runs times, interleaved in blocks so that the host's load hits both
 * alike; median, p90, p99 and max in microseconds, and the waits that
 * slept per run, as a table and as CSV (--csv FILE).
 *
 * --boost 1 runs both threads SCHED_FIFO, as vmm runs its blackout's
 * threads (sched_boost.h; needs CAP_SYS_NICE): on a loaded host an
 * unboosted poller shares its CPU with the load, a boosted one does not.
 *
 * usage: bench_commit [--runs N] [--poll-us N] [--target-work-us N[,N...]]
 *                     [--transport unix|tcp|both] [--boost 0|1] [--csv FILE]
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_util.h"
#include "channel.h"
#include "clock.h"
#include "rec_table.h"
#include "sched_boost.h"
#include "spin_wait.h"

#define END_LEN	      (MIG_REC_HDR_LEN + MIG_END_LEN + 4 * 8)
#define PREPARED_LEN  (MIG_REC_HDR_LEN + MIG_PREPARED_LEN)
#define COMMIT_LEN    (MIG_REC_HDR_LEN + MIG_SIG_LEN)
#define COMMITTED_LEN (MIG_REC_HDR_LEN + MIG_COMMITTED_LEN)
#define BLOCK	      50 /* runs of one mode before the other's */

struct side {
	struct mig_chan c;
	uint64_t spin_ns; /* 0: blocking, as before */
	struct spin_stats st;
	uint64_t work_ns;
	int runs;
	bool boost;
};

static int recv_len(struct side *s, size_t len)
{
	uint8_t b[256];

	spin_readable(&s->c, s->spin_ns, &s->st);
	return chan_read(&s->c, b, len);
}

static int send_len(struct side *s, size_t len)
{
	uint8_t b[256] = {0};

	return chan_write(&s->c, b, len);
}

static void *target_main(void *arg)
{
	struct side *t = arg;
	struct sched_prev prev;

	if (t->boost)
		sched_boost(pthread_self(), &prev);
	for (int i = 0; i < t->runs; i++) {
		uint64_t t0;

		if (recv_len(t, END_LEN))
			return (void *)1;
		t0 = now_ns();
		while (now_ns() - t0 < t->work_ns)
			; /* the state's loading */
		if (send_len(t, PREPARED_LEN) || recv_len(t, COMMIT_LEN) ||
		    send_len(t, COMMITTED_LEN))
			return (void *)1;
	}
	return NULL;
}

static int connect_pair(const char *transport, struct mig_chan *a, struct mig_chan *b)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	char addr[64], err[256];
	int sv[2], lfd;

	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	if (!strcmp(transport, "unix")) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
			return -errno;
		a->fd = sv[0];
		b->fd = sv[1];
		return 0;
	}
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl))
		return -errno;
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(sa.sin_port));
	if (chan_connect(a, addr, 5000, err, sizeof(err)) ||
	    chan_accept(lfd, b, 5000, err, sizeof(err))) {
		fprintf(stderr, "bench_commit: %s\n", err);
		close(lfd);
		return -EIO;
	}
	close(lfd);
	return 0;
}

/* One block of `n` runs in one mode; the run times in us into out. */
static int run_block(const char *transport, uint64_t spin_ns, uint64_t work_ns, bool boost, int n,
		     double *out, uint64_t *slept)
{
	struct side s = {.spin_ns = spin_ns},
		    t = {.spin_ns = spin_ns, .work_ns = work_ns, .runs = n, .boost = boost};
	pthread_t th;
	void *r = NULL;
	int ret = connect_pair(transport, &s.c, &t.c);

	if (ret)
		return ret;
	chan_set_timeout(&s.c, 10000);
	chan_set_timeout(&t.c, 10000);
	if (pthread_create(&th, NULL, target_main, &t))
		return -EAGAIN;
	for (int i = 0; i < n && !ret; i++) {
		uint64_t t0 = now_ns();

		ret = send_len(&s, END_LEN) || recv_len(&s, PREPARED_LEN) ||
		      send_len(&s, COMMIT_LEN) || recv_len(&s, COMMITTED_LEN);
		out[i] = (double)(now_ns() - t0) / 1000.0;
	}
	if (ret)
		chan_abort(&s.c);
	pthread_join(th, &r);
	*slept += s.st.slept + t.st.slept;
	chan_close(&s.c);
	chan_close(&t.c);
	return ret || r ? -EIO : 0;
}

static double pct(const double *sorted, int n, double p)
{
	int i = (int)(p * (n - 1) + 0.5);

	return sorted[i < n ? i : n - 1];
}

static void usage(void)
{
	fprintf(stderr,
		"usage: bench_commit [--runs N] [--poll-us N] [--target-work-us N[,N...]]\n"
		"                    [--transport unix|tcp|both] [--boost 0|1] [--csv FILE]\n"
		"  --runs N            exchanges per mode and row, at least %d (default 2000)\n"
		"  --poll-us N         the poll's bound (default 2000, vmm's blackout_poll_us)\n"
		"  --target-work-us L  the target's busy time before PREPARED, us; one row each "
		"(default 0,150)\n"
		"  --transport T       UNIX socketpair, TCP loopback, or both (default)\n"
		"  --boost 1           both threads SCHED_FIFO, as vmm's blackout (CAP_SYS_NICE)\n"
		"  --csv FILE          one CSV row per transport, mode and target work\n",
		BLOCK);
}

struct opts {
	int runs;
	bool boost;
	uint64_t poll_us;
	const char *transport;
};

/* Both modes on one transport with one target work: two table rows, two CSV rows. */
static int run_row(const struct opts *o, const char *tr, uint64_t work_us, FILE *f)
{
	double *v[2];
	uint64_t slept[2] = {0, 0};
	int runs = o->runs;

	v[0] = calloc((size_t)runs, sizeof(double));
	v[1] = calloc((size_t)runs, sizeof(double));
	if (!v[0] || !v[1])
		return -ENOMEM;
	/* Interleaved blocks: blocking, poll, blocking, ... */
	for (int done = 0; done < runs; done += BLOCK) {
		int n = runs - done < BLOCK ? runs - done : BLOCK;

		for (int m = 0; m < 2; m++)
			if (run_block(tr, m ? spin_bound_ns(o->poll_us) : 0, work_us * 1000,
				      o->boost, n, v[m] + done, &slept[m])) {
				fprintf(stderr, "bench_commit: %s exchange failed\n", tr);
				return -EIO;
			}
	}
	for (int m = 0; m < 2; m++) {
		const char *mode = m ? "poll" : "blocking";

		qsort(v[m], (size_t)runs, sizeof(double), bench_cmp_double);
		printf("%-9s %-9s %8llu %10.1f %10.1f %10.1f %10.1f %14.2f\n", tr, mode,
		       (unsigned long long)work_us, pct(v[m], runs, 0.5), pct(v[m], runs, 0.9),
		       pct(v[m], runs, 0.99), v[m][runs - 1], (double)slept[m] / runs);
		if (f)
			fprintf(f, "%s,%s,%d,%llu,%d,%.1f,%.1f,%.1f,%.1f,%.2f\n", tr, mode,
				o->boost, (unsigned long long)work_us, runs, pct(v[m], runs, 0.5),
				pct(v[m], runs, 0.9), pct(v[m], runs, 0.99), v[m][runs - 1],
				(double)slept[m] / runs);
		free(v[m]);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {.runs = 2000, .poll_us = 2000, .transport = "both"};
	const char *ts[2] = {"unix", "tcp"}, *csv = NULL, *works = "0,150";
	struct sched_prev prev;
	FILE *f = NULL;

	if (argc % 2 == 0) {
		usage();
		return 2;
	}
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--runs"))
			o.runs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--poll-us"))
			o.poll_us = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--target-work-us"))
			works = argv[i + 1];
		else if (!strcmp(argv[i], "--transport"))
			o.transport = argv[i + 1];
		else if (!strcmp(argv[i], "--boost"))
			o.boost = atoi(argv[i + 1]) != 0;
		else if (!strcmp(argv[i], "--csv"))
			csv = argv[i + 1];
		else {
			usage();
			return 2;
		}
	}
	if (o.runs < BLOCK || (strcmp(o.transport, "both") && strcmp(o.transport, "unix") &&
			       strcmp(o.transport, "tcp"))) {
		usage();
		return 2;
	}
	if (!spin_bound_ns(o.poll_us))
		fprintf(stderr,
			"bench_commit: one CPU (or --poll-us 0): 'poll' cannot poll here\n");
	if (o.boost && sched_boost(pthread_self(), &prev)) {
		fprintf(stderr, "bench_commit: --boost 1: no SCHED_FIFO here (CAP_SYS_NICE)\n");
		return 1;
	}
	if (csv && !(f = fopen(csv, "w"))) {
		perror(csv);
		return 1;
	}
	if (f)
		fprintf(f,
			"transport,mode,boost,target_work_us,runs,median_us,p90_us,p99_us,max_us,"
			"sleeps_per_run\n");
	printf("commit exchange (END, PREPARED, COMMIT, COMMITTED), %d runs each%s; us\n", o.runs,
	       o.boost ? ", SCHED_FIFO" : "");
	printf("%-9s %-9s %8s %10s %10s %10s %10s %14s\n", "transport", "mode", "work_us", "median",
	       "p90", "p99", "max", "sleeps/run");
	for (const char *w = works; *w;) {
		char *end;
		uint64_t work_us = strtoull(w, &end, 10);

		if (end == w) {
			usage();
			return 2;
		}
		for (int ti = 0; ti < 2; ti++)
			if ((!strcmp(o.transport, "both") || !strcmp(o.transport, ts[ti])) &&
			    run_row(&o, ts[ti], work_us, f))
				return 1;
		w = *end == ',' ? end + 1 : end;
	}
	if (f)
		fclose(f);
	return 0;
}
