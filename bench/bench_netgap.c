/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_netgap: what the guest's clients see of a live migration, vmm
 * against QEMU microvm, the same firmware guest (vmm-firmware.elf; QEMU
 * boots it through its PVH entry) with the same device on the same host,
 * interleaved (per rep and mode: vmm, then QEMU) so host noise hits both.
 * Both: 256 MiB, 1 vCPU, the same MAC, a 300 ms downtime limit, no
 * bandwidth limit, migrated over the loopback; postcopy after the first
 * full pass (vmm's default --postcopy-after 1; QEMU's migrate-start-postcopy
 * at dirty-sync-count 2, as qemu_mig.c does).
 *
 * Part ping: the firmware's net workload (answers ARP and ICMP echo at
 * 10.99.0.2) on a virtio-net device on a tap. The bench makes a network
 * namespace of its own with a bridge br0 (10.99.0.1/24) and, per run, two
 * fresh taps on it, the source's and the target's; every VMM process and
 * the client run in the namespace. `ping -D -n -i 0.005` runs from when
 * the source's guest answers until 2 s after the migration completed (up
 * to 30 s when the target has not answered by then). From the ping log:
 * replies, requests, replies lost, the largest gap between two consecutive
 * replies (what the client saw of the migration) and the largest gap
 * before the migration started (the host's own noise, same run); and the
 * downtime as each VMM reports it (vmm's --json downtime_us, QEMU's
 * query-migrate downtime). A run whose target's guest never answers after
 * the migration counts as failed. The goal (the issue's): the largest gap
 * under 20 ms with the firmware responder, and below QEMU's in the same run.
 *
 * Part blk: the firmware's blk workload (a pass writes 256 blocks of
 * 4 KiB, flushes, reads them back and verifies them; a console line per
 * pass) on a 4 MiB disk file in the temp dir, which the target opens too
 * (vmm: [disk] path, pread/pwrite and fdatasync on FLUSH; QEMU:
 * virtio-blk-device on a raw -drive with its default cache=writeback, the
 * same page-cache semantics). Each pass line is stamped on the host as it
 * is read; the guest's progress is interpolated between them and its
 * throughput (2 MiB per pass: written + read) given for the 3 s before the
 * migration, during it (the migration's start to its end as the host sees
 * them) and the 3 s after; plus the longest interval between two passes
 * that overlaps the migration.
 *
 * No assertions: a table per part (median and range over the reps) and the
 * vmm/QEMU ratios of the same run; with --csv every run, a section per
 * part. Needs root (the namespace, the taps), ip (iproute2), ping
 * (iputils-ping). Without QEMU it runs the vmm side only and says so.
 *
 * Files (consoles, stderr, ping logs, QMP sockets) go to a temp dir, removed
 * at the end unless a run failed, or to --work DIR, which stays.
 *
 * usage: bench_netgap [--reps N] [--quick] [--part ping|blk|all] [--csv FILE]
 *                     [--vmm PATH] [--qemu PATH] [--firmware PATH] [--work DIR]
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "bench_util.h"
#include "harness_json.h"
#include "harness_net.h"
#include "harness_run.h"
#include "qemu_mig.h"

#define PROG		 "bench_netgap"
#define MAXREPS		 32
#define MEM		 "256M"
#define DOWNTIME_MS	 300
#define BRIDGE_ADDR	 "10.99.0.1/24"
#define GUEST_IP	 "10.99.0.2"
#define GUEST_MAC	 "52:54:00:99:00:02"
#define NET_HEARTBEAT_MS 500
#define NET_UP		 "net: mac [0-9a-f:]+ ip [0-9.]+ up"
#define BLK_PASS	 "blk: pass [0-9]+ ok"
#define BLK_WARMUP	 2   /* passes before the window (the first write fills the file) */
#define BLK_PASS_MIB	 2.0 /* 256 blocks of 4 KiB written, and read back */
#define DISK_BYTES	 (4 << 20)
#define WINDOW_MS	 3000.0 /* part blk: the windows before and after the migration */
#define GOAL_GAP_MS	 20.0

/* Bounds of every wait (the emulated KVM of the build hosts is 20-100x slower). */
#define BOOT_TIMEOUT_MS	      (180 * 1000) /* spawn to the guest's first line */
#define PING_READY_REPLIES    200	   /* and WINDOW_MS of them, before migrating */
#define PING_READY_TIMEOUT_MS (60 * 1000)
#define MIGRATE_TIMEOUT_MS    (300 * 1000)
#define PING_AFTER_MS	      2000	  /* the client goes on this long after the migration */
#define ANSWER_TIMEOUT_MS     (30 * 1000) /* for the target's guest's first reply */
#define BLK_AFTER_TIMEOUT_MS  (120 * 1000)
#define LISTEN_TIMEOUT_MS     (60 * 1000)

#define QEMU_BASE                                                                                  \
	"-M microvm,acpi=off -enable-kvm -cpu max,vendor=GenuineIntel,-arch-capabilities -smp 1 "  \
	"-nodefaults -no-user-config -nographic -serial stdio -no-reboot "                         \
	"-device isa-debug-exit,iobase=0x501,iosize=4 -global virtio-mmio.force-legacy=false"

enum part { P_PING, P_BLK };
static const char *const part_names[] = {"ping", "blk"};

static const char *vmm_bin = VMM_BINARY, *qemu_bin = "qemu-system-x86_64", *firmware = VMM_FIRMWARE;
static char tmpdir[64], ns[32], ns_wrap[64];
static bool ns_made, keep_files;
static int failed_runs;
static int run_seq;	    /* numbers each run's taps and files */
static pid_t ping_pid = -1; /* the client while it runs */

#define die(...) bench_die(PROG, tmpdir, __VA_ARGS__)

/* ---- the host side: shell commands, the namespace, taps ------------------------ */

/* Runs the formatted shell command: its exit status (-1: could not run it). */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st == -1)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * At exit, also after SIGINT/SIGTERM/SIGHUP: the namespace and the temp dir
 * go. The VMMs die with this process (the harness's PR_SET_PDEATHSIG), and
 * their taps with the namespace once they have; ping, which has file
 * capabilities, is killed here by its pid rather than trusted to.
 */
static void cleanup(void)
{
	if (ping_pid > 0) {
		kill(ping_pid, SIGKILL);
		ping_pid = -1;
	}
	if (ns_made) {
		sh("ip netns del %s 2>/dev/null", ns);
		ns_made = false;
	}
	if (!keep_files && !failed_runs)
		bench_rm_tree(tmpdir);
	else if (tmpdir[0])
		fprintf(stderr, PROG ": the runs' files are in %s\n", tmpdir);
	tmpdir[0] = '\0';
}

static void on_signal(int sig)
{
	exit(128 + sig); /* atexit: cleanup */
}

/* The namespace: lo, the bridge with the client's address, no IPv6 chatter for the guest. */
static int ns_setup(char *err, size_t errlen)
{
	snprintf(ns, sizeof(ns), "netgap%d", (int)getpid());
	snprintf(ns_wrap, sizeof(ns_wrap), "ip netns exec %s", ns);
	if (sh("ip netns add %s", ns)) {
		snprintf(err, errlen, "cannot create the network namespace %s (ip netns add)", ns);
		return -EPERM;
	}
	ns_made = true;
	/* best effort: router solicitations and MLD reports would only be ignored by the guest */
	sh("%s sh -c 'echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6; "
	   "echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6' 2>/dev/null",
	   ns_wrap);
	if (sh("ip -n %s link set lo up && ip -n %s link add br0 type bridge && "
	       "ip -n %s addr add " BRIDGE_ADDR " dev br0 && ip -n %s link set br0 up",
	       ns, ns, ns, ns)) {
		snprintf(err, errlen, "cannot set up the bridge br0 in %s", ns);
		return -EIO;
	}
	return 0;
}

static int tap_add(const char *tap, char *err, size_t errlen)
{
	if (sh("ip -n %s tuntap add dev %s mode tap && ip -n %s link set %s master br0 && "
	       "ip -n %s link set %s up",
	       ns, tap, ns, tap, ns, tap)) {
		snprintf(err, errlen, "cannot add the tap %s to br0 in %s", tap, ns);
		return -EIO;
	}
	return 0;
}

static void tap_del(const char *tap)
{
	sh("ip -n %s link del %s 2>/dev/null", ns, tap);
}

/* hx_watch_until's condition for "just pump the consoles for a while". */
static int never(void *arg)
{
	(void)arg;
	return 0;
}

/* ---- one migration of the guest, by either VMM ------------------------------------ */

/* A source and a target of one run, vmm (through the harness) or QEMU (QMP). */
struct side {
	bool qemu, postcopy;
	enum part part;
	char name[48];
	char stems[3][64];   /* vmm: the harness keeps pointers to these for the whole run */
	struct hx_run r;     /* vmm */
	struct qvm src, dst; /* QEMU */
	struct hx_watch qw;  /* QEMU's two consoles */
	int port;	     /* QEMU's -incoming */
	/* both */
	struct hx_watch *watch;
	struct hx_console *src_out, *dst_out;
	struct hx_proc *src_proc, *dst_proc;
};

/* vmm's --json parts of the downtime (docs/api.md), in this order; QEMU reports none. */
static const char *const blackout_keys[] = {"blackout_pause_us", "blackout_send_us",
					    "blackout_state_us", "blackout_ack_us",
					    "target_restore_us"};
#define NBLACKOUT 5

/* What a migration reported. */
struct mig {
	double t0, t1; /* CLOCK_MONOTONIC ms: the migration started / completed (host's view) */
	double downtime_ms, total_ms;
	double blackout_us[NBLACKOUT]; /* NaN: not reported */
	bool postcopy_used;
};

static int vmm_start(struct side *s, const char *tap_s, const char *tap_d, const char *disk,
		     char *err, size_t errlen)
{
	char cfg[PATH_MAX];
	struct hx_argv sa = {0}, ta = {0};
	FILE *f;
	int ret;

	snprintf(cfg, sizeof(cfg), "%s/%s.cfg", tmpdir, part_names[s->part]);
	f = fopen(cfg, "w");
	if (!f) {
		snprintf(err, errlen, "%s: %s", cfg, strerror(errno));
		return -errno;
	}
	fprintf(f, "[vm]\nmemory = " MEM "\nvcpus = 1\n[firmware]\npath = %s\n", firmware);
	if (s->part == P_PING)
		fprintf(f,
			"cmdline = ip=" GUEST_IP "\n[workload]\nkind = net\nheartbeat_ms = %d\n"
			"[net]\nmac = " GUEST_MAC "\n",
			NET_HEARTBEAT_MS);
	else
		fprintf(f, "[workload]\nkind = blk\nheartbeat_ms = 0\n");
	fclose(f);
	hx_argv_add(&sa, "--set=console.input=none");
	hx_argv_add(&ta, "--set=console.input=none");
	if (s->part == P_PING) {
		hx_argv_addf(&sa, "--set=net.tap=%s", tap_s);
		hx_argv_addf(&ta, "--set=net.tap=%s", tap_d);
	} else {
		hx_argv_addf(&sa, "--set=disk.path=%s", disk);
	}
	snprintf(s->stems[0], sizeof(s->stems[0]), "%s.src", s->name);
	snprintf(s->stems[1], sizeof(s->stems[1]), "%s.dst", s->name);
	snprintf(s->stems[2], sizeof(s->stems[2]), "%s.mig", s->name);
	struct hx_run_opts o = {
	    .vmm = vmm_bin,
	    .dir = tmpdir,
	    .src_stem = s->stems[0],
	    .dst_stem = s->stems[1],
	    .mig_stem = s->stems[2],
	    .pipes = true,
	    .name = s->name,
	    .config = cfg,
	    .source_args = sa.v,
	    .target_args = ta.v,
	    .source_wrap = s->part == P_PING ? ns_wrap : NULL,
	    .target_wrap = s->part == P_PING ? ns_wrap : NULL,
	    .listen_timeout_ms = LISTEN_TIMEOUT_MS,
	};
	ret = hx_run_start(&s->r, &o, err, errlen);
	hx_argv_free(&sa);
	hx_argv_free(&ta);
	s->watch = &s->r.watch;
	s->src_out = &s->r.src_out;
	s->dst_out = &s->r.dst_out;
	s->src_proc = &s->r.src;
	s->dst_proc = &s->r.dst;
	return ret;
}

static int qemu_spawn(struct side *s, struct qvm *q, bool incoming, const char *tap,
		      const char *disk, char *err, size_t errlen)
{
	char name[64];
	struct hx_argv a = {0};
	int r;

	snprintf(name, sizeof(name), "%s.%s", s->name, incoming ? "dst" : "src");
	if (s->part == P_PING)
		hx_argv_split(&a, ns_wrap);
	hx_argv_add(&a, qemu_bin);
	hx_argv_split(&a, QEMU_BASE);
	hx_argv_add(&a, "-m");
	hx_argv_add(&a, MEM);
	hx_argv_add(&a, "-kernel");
	hx_argv_add(&a, firmware);
	hx_argv_add(&a, "-append");
	if (s->part == P_PING) {
		hx_argv_addf(&a, "vmm.workload=net ip=" GUEST_IP " vmm.heartbeat_ms=%d",
			     NET_HEARTBEAT_MS);
		hx_argv_add(&a, "-netdev");
		hx_argv_addf(&a, "tap,id=n0,ifname=%s,script=no,downscript=no", tap);
		hx_argv_add(&a, "-device");
		hx_argv_add(&a, "virtio-net-device,netdev=n0,mac=" GUEST_MAC);
	} else {
		hx_argv_add(&a, "vmm.workload=blk vmm.heartbeat_ms=0");
		hx_argv_add(&a, "-drive");
		hx_argv_addf(&a, "if=none,id=d0,file=%s,format=raw", disk);
		hx_argv_add(&a, "-device");
		hx_argv_add(&a, "virtio-blk-device,drive=d0");
	}
	r = qvm_start(q, name, tmpdir, a.v, incoming ? s->port : 0, err, errlen);
	hx_argv_free(&a);
	return r;
}

static int qemu_start(struct side *s, const char *tap_s, const char *tap_d, const char *disk,
		      char *err, size_t errlen)
{
	struct qvm_mig_opts mo = {.downtime_ms = DOWNTIME_MS, .postcopy = s->postcopy};
	int ret;

	memset(&s->src, 0, sizeof(s->src));
	memset(&s->dst, 0, sizeof(s->dst));
	s->src.qmp.fd = s->dst.qmp.fd = -1;
	s->port = hx_free_port();
	s->watch = &s->qw;
	s->src_out = &s->src.out;
	s->dst_out = &s->dst.out;
	s->src_proc = &s->src.proc;
	s->dst_proc = &s->dst.proc;
	if (s->port < 0) {
		snprintf(err, errlen, "no free port: %s", strerror(-s->port));
		return s->port;
	}
	ret = qemu_spawn(s, &s->dst, true, tap_d, disk, err, errlen);
	if (!ret)
		ret = qemu_spawn(s, &s->src, false, tap_s, disk, err, errlen);
	hx_watch_add(&s->qw, &s->src.out);
	hx_watch_add(&s->qw, &s->dst.out);
	if (!ret)
		ret = qvm_prepare(&s->dst, &mo, err, errlen);
	if (!ret)
		ret = qvm_prepare(&s->src, &mo, err, errlen);
	return ret;
}

static int side_start(struct side *s, bool qemu, enum part part, bool postcopy, int rep,
		      const char *tap_s, const char *tap_d, const char *disk, char *err,
		      size_t errlen)
{
	memset(s, 0, sizeof(*s));
	s->qemu = qemu;
	s->part = part;
	s->postcopy = postcopy;
	snprintf(s->name, sizeof(s->name), "%s-%s-%s-%d", qemu ? "qemu" : "vmm", part_names[part],
		 postcopy ? "post" : "pre", rep);
	return qemu ? qemu_start(s, tap_s, tap_d, disk, err, errlen)
		    : vmm_start(s, tap_s, tap_d, disk, err, errlen);
}

static int side_migrate(struct side *s, struct mig *m, char *err, size_t errlen)
{
	int ret;

	for (int i = 0; i < NBLACKOUT; i++)
		m->blackout_us[i] = NAN;
	if (s->qemu) {
		struct qvm_mig_result mr = {0};

		m->t0 = bench_now_ms();
		ret = qvm_migrate(&s->src, &s->qw, s->port, s->postcopy, MIGRATE_TIMEOUT_MS, &mr,
				  err, errlen);
		m->t1 = bench_now_ms();
		m->downtime_ms = mr.downtime_ms;
		m->total_ms = mr.total_ms;
		m->postcopy_used = s->postcopy && mr.postcopy_bytes > 0;
		return ret;
	}
	struct hx_argv a = {0};
	struct hx_cmd c = {0};
	char used[32] = "";

	hx_argv_add(&a, "--mode");
	hx_argv_add(&a, s->postcopy ? "postcopy" : "precopy");
	hx_argv_addf(&a, "--downtime-ms=%d", DOWNTIME_MS);
	hx_argv_add(&a, "--json");
	m->t0 = bench_now_ms();
	ret = hx_run_migrate(&s->r, a.v, MIGRATE_TIMEOUT_MS, &c, err, errlen);
	m->t1 = bench_now_ms();
	hx_argv_free(&a);
	if (!ret && (c.code != 0 || !c.json)) {
		snprintf(err, errlen, "vmm migrate exited %d (see %s)", c.code, c.err_path);
		ret = -EIO;
	}
	if (!ret) {
		m->downtime_ms = hx_json_num(c.json, "downtime_us") / 1000.0;
		m->total_ms = hx_json_num(c.json, "total_ms");
		m->postcopy_used = hx_json_text(c.json, "mode_used", used, sizeof(used)) &&
				   !strcmp(used, "postcopy");
		for (int i = 0; i < NBLACKOUT; i++) {
			double v = hx_json_num(c.json, blackout_keys[i]);

			m->blackout_us[i] = v >= 0 ? v : NAN;
		}
	}
	hx_cmd_free(&c);
	return ret;
}

/* The guest runs on the target after the migration. */
static bool side_target_runs(struct side *s)
{
	return s->qemu ? hx_running(&s->dst.proc) && qvm_guest_running(&s->dst)
		       : hx_running(&s->r.dst);
}

static void side_end(struct side *s)
{
	char sock[PATH_MAX];

	if (s->qemu) {
		qvm_end(&s->src);
		qvm_end(&s->dst);
		/* no sockets left in a --work dir (a copy of it would trip on them) */
		for (int i = 0; i < 2 && s->name[0]; i++) {
			snprintf(sock, sizeof(sock), "%s/%s.%s.qmp", tmpdir, s->name,
				 i ? "dst" : "src");
			unlink(sock);
		}
	} else {
		hx_run_end(&s->r);
	}
}

/* CORRUPTION on either console (the blk guest's verification failed): -EIO. */
static int no_corruption(struct side *s, char *err, size_t errlen)
{
	const char *c = hx_console_corruption(s->dst_out);

	if (!c)
		c = hx_console_corruption(s->src_out);
	if (!c)
		return 0;
	snprintf(err, errlen, "the guest reports: %s", c);
	return -EIO;
}

/* ---- part ping ------------------------------------------------------------------------ */

struct reply {
	double t; /* CLOCK_MONOTONIC ms */
	long seq; /* unwrapped icmp_seq */
};

struct replies {
	struct reply *v;
	size_t n, cap;
};

/* CLOCK_REALTIME - CLOCK_MONOTONIC in ms: ping -D stamps replies with the former. */
static double realtime_offset_ms(void)
{
	struct timespec r;

	clock_gettime(CLOCK_REALTIME, &r);
	return (double)r.tv_sec * 1e3 + (double)r.tv_nsec / 1e6 - bench_now_ms();
}

/* The replies of a `ping -D` log, in arrival order: "[UNIX] 64 bytes from ...: icmp_seq=N". */
static void replies_read(const char *path, double rt_off, struct replies *out)
{
	char *line = NULL;
	size_t len = 0;
	long last = -1, wraps = 0;
	FILE *f = fopen(path, "r");

	out->n = 0;
	if (!f)
		return;
	while (getline(&line, &len, f) > 0) {
		const char *q;
		char *e;
		double t;
		long seq;

		if (line[0] != '[' || !strstr(line, " bytes from ") ||
		    !(q = strstr(line, "icmp_seq=")))
			continue;
		t = strtod(line + 1, &e);
		if (*e != ']')
			continue;
		seq = strtol(q + 9, NULL, 10);
		if (last >= 0 && seq + wraps * 65536 < last - 32768)
			wraps++; /* icmp_seq is 16 bits */
		seq += wraps * 65536;
		last = seq;
		if (out->n == out->cap) {
			size_t cap = out->cap ? 2 * out->cap : 4096;
			struct reply *v = realloc(out->v, cap * sizeof(*v));

			if (!v)
				break;
			out->v = v;
			out->cap = cap;
		}
		out->v[out->n++] = (struct reply){t * 1e3 - rt_off, seq};
	}
	free(line);
	fclose(f);
}

struct ping_stats {
	int replies, requests, lost;
	int after;	    /* replies after the migration completed */
	double gap_ms;	    /* the largest gap between consecutive replies */
	double gap_at_ms;   /* where it began, from the migration's start */
	double base_gap_ms; /* the largest gap that ended before the migration started */
};

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

static void ping_analyse(const struct replies *r, double t0, double t1, struct ping_stats *s)
{
	long *seqs = malloc((r->n ? r->n : 1) * sizeof(long)), lo = LONG_MAX, hi = LONG_MIN;
	int distinct = 0;

	memset(s, 0, sizeof(*s));
	s->gap_at_ms = NAN;
	for (size_t i = 0; i < r->n; i++) {
		const struct reply *p = &r->v[i];

		if (seqs)
			seqs[i] = p->seq;
		lo = p->seq < lo ? p->seq : lo;
		hi = p->seq > hi ? p->seq : hi;
		s->after += p->t > t1;
		if (i) {
			double g = p->t - r->v[i - 1].t;

			if (g > s->gap_ms) {
				s->gap_ms = g;
				s->gap_at_ms = r->v[i - 1].t - t0;
			}
			if (p->t <= t0 && g > s->base_gap_ms)
				s->base_gap_ms = g;
		}
	}
	if (seqs && r->n) {
		qsort(seqs, r->n, sizeof(long), cmp_long);
		for (size_t i = 0; i < r->n; i++)
			distinct += !i || seqs[i] != seqs[i - 1];
	}
	free(seqs);
	s->replies = (int)r->n;
	s->requests = r->n ? (int)(hi - lo + 1) : 0;
	s->lost = s->requests - distinct;
}

struct pinger {
	struct hx_proc proc;
	char log[PATH_MAX];
};

static int ping_start(struct pinger *p, const char *name, char *err, size_t errlen)
{
	char errlog[PATH_MAX + 8];
	struct hx_argv a = {0};
	int fd, r;

	snprintf(p->log, sizeof(p->log), "%s/%s.ping", tmpdir, name);
	snprintf(errlog, sizeof(errlog), "%s.err", p->log);
	hx_argv_split(&a, ns_wrap);
	hx_argv_split(&a, "ping -D -n -i 0.005 -W 1 " GUEST_IP);
	struct hx_spawn s = {.argv = a.v, .out_path = p->log, .err_path = errlog};
	r = hx_spawn(&p->proc, "ping", &s, &fd, err, errlen);
	hx_argv_free(&a);
	if (!r)
		ping_pid = p->proc.pid;
	return r;
}

static void ping_stop(struct pinger *p)
{
	hx_signal(&p->proc, SIGINT);
	hx_reap(&p->proc, 3000);
	ping_pid = -1;
}

/* A wait on the ping log: `want` replies after `since` (ms), the first `span` ms ago. */
struct ping_wait {
	struct pinger *p;
	struct hx_proc *guest; /* the source, while it must run */
	struct replies rs;
	double rt_off, since, span;
	size_t want;
};

static int ping_enough(void *arg)
{
	struct ping_wait *w = arg;
	double first = 0;
	size_t n = 0;

	replies_read(w->p->log, w->rt_off, &w->rs);
	for (size_t i = 0; i < w->rs.n; i++)
		if (w->rs.v[i].t > w->since && !n++)
			first = w->rs.v[i].t;
	if (n >= w->want && bench_now_ms() - first >= w->span)
		return 1;
	if (!hx_running(&w->p->proc))
		return -ESRCH;
	if (w->guest && !hx_running(w->guest))
		return -ECHILD;
	return 0;
}

struct ping_result {
	bool ok;
	bool analysed; /* the migration completed: st holds the ping log's numbers */
	struct ping_stats st;
	struct mig m;
};

static int ping_once(bool qemu, bool postcopy, int rep, struct ping_result *res)
{
	char err[PATH_MAX + 256], tap_s[16], tap_d[16];
	struct side s;
	struct pinger p = {0};
	struct ping_wait w = {0};
	struct replies rs = {0};
	double t_first = 0;
	int ret, n = ++run_seq;

	snprintf(tap_s, sizeof(tap_s), "ng%ds", n);
	snprintf(tap_d, sizeof(tap_d), "ng%dd", n);
	memset(res, 0, sizeof(*res));
	memset(&s, 0, sizeof(s)); /* side_end() of a side never started does nothing */
	s.qemu = qemu;
	s.src.qmp.fd = s.dst.qmp.fd = -1;
	sh("ip -n %s neigh flush dev br0 2>/dev/null", ns); /* the client ARPs afresh */
	ret = tap_add(tap_s, err, sizeof(err));
	if (!ret)
		ret = tap_add(tap_d, err, sizeof(err));
	if (!ret)
		ret = side_start(&s, qemu, P_PING, postcopy, rep, tap_s, tap_d, NULL, err,
				 sizeof(err));
	if (!ret)
		ret = hx_wait_line(s.watch, s.src_out, NET_UP, 1, 0, BOOT_TIMEOUT_MS, err,
				   sizeof(err));
	if (!ret)
		ret = ping_start(&p, s.name, err, sizeof(err));
	if (!ret) {
		w.p = &p;
		w.guest = s.src_proc;
		w.rt_off = realtime_offset_ms();
		w.since = -1e300;
		w.want = PING_READY_REPLIES;
		w.span = WINDOW_MS;
		ret = hx_watch_until(s.watch, ping_enough, &w, PING_READY_TIMEOUT_MS);
		if (ret)
			snprintf(err, sizeof(err),
				 "%d of %d replies from the source's guest after %d s (%s; see %s)",
				 (int)w.rs.n, PING_READY_REPLIES, PING_READY_TIMEOUT_MS / 1000,
				 ret == -ESRCH	  ? "ping exited"
				 : ret == -ECHILD ? "the source exited"
						  : "timeout",
				 p.log);
	}
	if (!ret)
		ret = side_migrate(&s, &res->m, err, sizeof(err));
	if (!ret) {
		/* The client goes on 2 s; longer (bounded) until the target's guest answers. */
		hx_watch_until(s.watch, never, NULL, PING_AFTER_MS);
		w.guest = NULL;
		w.since = res->m.t1;
		w.want = 1;
		w.span = 0;
		if (hx_watch_until(s.watch, ping_enough, &w, ANSWER_TIMEOUT_MS - PING_AFTER_MS) ==
		    0) {
			for (size_t i = 0; i < w.rs.n && !t_first; i++)
				if (w.rs.v[i].t > res->m.t1)
					t_first = w.rs.v[i].t;
			if (t_first > res->m.t1 + PING_AFTER_MS) /* late: a little more after it */
				hx_watch_until(s.watch, never, NULL, 1000);
		}
	}
	ping_stop(&p);
	if (!ret) {
		replies_read(p.log, w.rt_off, &rs);
		ping_analyse(&rs, res->m.t0, res->m.t1, &res->st);
		res->analysed = true;
		if (!res->st.after) {
			snprintf(err, sizeof(err),
				 "the target's guest did not answer within %d s of the migration "
				 "(see %s)",
				 ANSWER_TIMEOUT_MS / 1000, p.log);
			ret = -ETIMEDOUT;
		} else if (!side_target_runs(&s)) {
			snprintf(err, sizeof(err), "the target does not run its guest any more");
			ret = -EIO;
		}
	}
	res->ok = !ret;
	failed_runs += !res->ok;
	if (ret)
		fprintf(stderr, PROG ": %s: %s\n", s.name[0] ? s.name : tap_s, err);
	side_end(&s);
	tap_del(tap_s);
	tap_del(tap_d);
	free(w.rs.v);
	free(rs.v);
	return ret;
}

/* ---- part blk ----------------------------------------------------------------------- */

struct pt {
	double t, pass;
};

static int cmp_pt(const void *a, const void *b)
{
	double x = ((const struct pt *)a)->t, y = ((const struct pt *)b)->t;

	return (x > y) - (x < y);
}

/* Every "blk: pass P ok" line of c: (its host time, P), appended to v. */
static size_t pass_points(const struct hx_console *c, struct pt *v, size_t n)
{
	for (size_t i = 0; i < c->nlines; i++) {
		const char *l = strstr(hx_console_line(c, i), "blk: pass ");
		unsigned long p;

		if (l && sscanf(l, "blk: pass %lu ok", &p) == 1)
			v[n++] = (struct pt){c->lines[i].t_ms, (double)p};
	}
	return n;
}

/* The guest's progress (passes) at time t, linear between two lines; NaN outside them. */
static double progress_at(const struct pt *v, size_t n, double t)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (v[i].t <= t && t <= v[i + 1].t) {
			double d = v[i + 1].t - v[i].t;

			return d > 0 ? v[i].pass + (v[i + 1].pass - v[i].pass) * (t - v[i].t) / d
				     : v[i + 1].pass;
		}
	return NAN;
}

/* MiB/s moved by the guest between a and b (ms). */
static double blk_rate(const struct pt *v, size_t n, double a, double b)
{
	return (progress_at(v, n, b) - progress_at(v, n, a)) * BLK_PASS_MIB / ((b - a) / 1e3);
}

struct blk_result {
	bool ok;
	double before, during, after; /* MiB/s */
	double pass_ms;		      /* median interval between passes before the migration */
	double longest_ms;	      /* the longest interval between passes overlapping it */
	struct mig m;
};

/* A pass line on the target stamped at or after *(double *)arg; -ESRCH once it exited. */
struct blk_wait {
	struct side *s;
	double at;
};

static int blk_passed(void *arg)
{
	struct blk_wait *w = arg;
	const struct hx_console *c = w->s->dst_out;

	for (size_t i = c->nlines; i-- > 0;) {
		if (c->lines[i].t_ms < w->at)
			break;
		if (strstr(hx_console_line(c, i), "blk: pass "))
			return 1;
	}
	return hx_running(w->s->dst_proc) ? 0 : -ESRCH;
}

static void blk_analyse(struct side *s, struct blk_result *res)
{
	size_t cap = s->src_out->nlines + s->dst_out->nlines, n = 0, k = 0;
	struct pt *v = malloc((cap ? cap : 1) * sizeof(*v));
	double *iv = malloc((cap ? cap : 1) * sizeof(double));
	const struct mig *m = &res->m;

	res->before = res->during = res->after = res->pass_ms = res->longest_ms = NAN;
	if (!v || !iv) {
		free(v);
		free(iv);
		return;
	}
	n = pass_points(s->src_out, v, n);
	n = pass_points(s->dst_out, v, n);
	qsort(v, n, sizeof(*v), cmp_pt);
	res->before = blk_rate(v, n, m->t0 - WINDOW_MS, m->t0);
	res->during = blk_rate(v, n, m->t0, m->t1);
	res->after = blk_rate(v, n, m->t1, m->t1 + WINDOW_MS);
	res->longest_ms = 0;
	for (size_t i = 0; i + 1 < n; i++) {
		double d = v[i + 1].t - v[i].t;

		if (v[i + 1].t <= m->t0)
			iv[k++] = d;
		else if (v[i].t < m->t1 && d > res->longest_ms)
			res->longest_ms = d;
	}
	res->pass_ms = k ? bench_median(iv, (int)k) : NAN;
	free(v);
	free(iv);
}

static int blk_once(bool qemu, bool postcopy, int rep, struct blk_result *res)
{
	char err[PATH_MAX + 256], disk[PATH_MAX];
	struct side s;
	struct blk_wait bw = {&s, 0};
	double wait;
	int ret, fd;

	memset(res, 0, sizeof(*res));
	snprintf(disk, sizeof(disk), "%s/disk%d.img", tmpdir, ++run_seq);
	fd = open(disk, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, DISK_BYTES)) {
		fprintf(stderr, PROG ": %s: %s\n", disk, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	close(fd);
	ret = side_start(&s, qemu, P_BLK, postcopy, rep, NULL, NULL, disk, err, sizeof(err));
	if (!ret)
		ret = hx_wait_line(s.watch, s.src_out, BLK_PASS, BLK_WARMUP + 2, 0, BOOT_TIMEOUT_MS,
				   err, sizeof(err));
	if (!ret) {
		/* A full window of passes after the warm-up ones, before the migration. */
		regex_t re;
		double warm = 0;
		int k = 0;

		regcomp(&re, BLK_PASS, REG_EXTENDED | REG_NOSUB);
		for (size_t i = 0; i < s.src_out->nlines && !warm; i++)
			if (!regexec(&re, hx_console_line(s.src_out, i), 0, NULL, 0) &&
			    ++k == BLK_WARMUP)
				warm = s.src_out->lines[i].t_ms;
		regfree(&re);
		wait = warm + WINDOW_MS + 200 - bench_now_ms();
		if (wait > 0)
			hx_watch_until(s.watch, never, NULL, (int)wait);
		if (!hx_running(s.src_proc)) {
			snprintf(err, sizeof(err), "the source exited before the migration");
			ret = -ESRCH;
		}
	}
	if (!ret)
		ret = side_migrate(&s, &res->m, err, sizeof(err));
	if (!ret) {
		bw.at = res->m.t1 + WINDOW_MS;
		ret = hx_watch_until(s.watch, blk_passed, &bw, BLK_AFTER_TIMEOUT_MS);
		if (ret)
			snprintf(err, sizeof(err),
				 "no pass on the target %g s after the migration (%s)",
				 WINDOW_MS / 1e3, ret == -ESRCH ? "it exited" : "timeout");
	}
	if (!ret)
		ret = no_corruption(&s, err, sizeof(err));
	if (!ret && !side_target_runs(&s)) {
		snprintf(err, sizeof(err), "the target does not run its guest any more");
		ret = -EIO;
	}
	if (!ret)
		blk_analyse(&s, res);
	res->ok = !ret;
	failed_runs += !res->ok;
	if (ret)
		fprintf(stderr, PROG ": %s: %s\n", s.name, err);
	side_end(&s);
	unlink(disk);
	return ret;
}

/* ---- tables ------------------------------------------------------------------------- */

/* Per part, mode and VMM: the values of the good runs, and per rep (NaN: failed). */
struct series {
	int runs, ok, pc_used;
	double v[6][MAXREPS];
	int n;
	double by_rep[MAXREPS]; /* the compared value (ping: largest gap) */
};

static void series_add(struct series *s, int rep, bool ok, bool pc_used, const double *vals,
		       int nvals, double compared)
{
	s->runs++;
	s->by_rep[rep] = ok ? compared : NAN;
	if (!ok)
		return;
	s->ok++;
	s->pc_used += pc_used;
	for (int k = 0; k < nvals; k++)
		s->v[k][s->n] = vals[k];
	s->n++;
}

static double med(const struct series *s, int k)
{
	double c[MAXREPS];
	int n = 0;

	for (int i = 0; i < s->n; i++)
		if (!isnan(s->v[k][i]))
			c[n++] = s->v[k][i];
	return n ? bench_median(c, n) : NAN;
}

/* "median (min-max)" of value k, or "-". */
static const char *cell(char *buf, size_t len, const struct series *s, int k, const char *fmt)
{
	double c[MAXREPS];
	char f[64];
	int n = 0;

	for (int i = 0; i < s->n; i++)
		if (!isnan(s->v[k][i]))
			c[n++] = s->v[k][i];
	if (!n)
		return "-";
	if (n == 1) {
		snprintf(buf, len, fmt, c[0]);
		return buf;
	}
	snprintf(f, sizeof(f), "%s (%s-%s)", fmt, fmt, fmt);
	snprintf(buf, len, f, bench_median(c, n), bench_min(c, n), bench_max(c, n));
	return buf;
}

static void csv_num(FILE *f, double v, const char *fmt)
{
	fputc(',', f);
	if (!isnan(v))
		fprintf(f, fmt, v);
}

static void csv_blackout_head(FILE *f)
{
	for (int i = 0; i < NBLACKOUT; i++)
		fprintf(f, ",%s", blackout_keys[i]);
	fputc('\n', f);
}

static void csv_blackout(FILE *f, const struct mig *m, bool ok)
{
	for (int i = 0; i < NBLACKOUT; i++)
		csv_num(f, ok ? m->blackout_us[i] : NAN, "%.0f");
}

/* vmm's downtime in parts, for the per-run line ("" for QEMU). */
static const char *blackout_text(char *buf, size_t len, const struct mig *m)
{
	if (isnan(m->blackout_us[0]))
		return "";
	snprintf(buf, len,
		 " (pause %.1f, send %.1f, state %.1f, commit %.1f; target restore %.1f ms)",
		 m->blackout_us[0] / 1e3, m->blackout_us[1] / 1e3, m->blackout_us[2] / 1e3,
		 m->blackout_us[3] / 1e3, m->blackout_us[4] / 1e3);
	return buf;
}

enum { PV_GAP, PV_LOST, PV_DOWN, PV_BASE, PV_REPLIES };

static void part_ping(FILE *csv, int reps, bool have_qemu)
{
	static struct series s[2][2]; /* [postcopy][qemu] */
	char b[4][64];

	printf(
	    "\n== ping: the firmware's ICMP responder on virtio-net (tap, bridge), ping -i 0.005 "
	    "from the host; %d interleaved run(s) per mode and VMM\n",
	    reps);
	if (csv)
		fprintf(
		    csv,
		    "part,mode,vmm,run,ok,mode_used,replies,requests,lost,largest_gap_ms,"
		    "gap_at_ms,baseline_gap_ms,replies_after,downtime_ms,total_ms,migration_ms");
	if (csv)
		csv_blackout_head(csv);
	for (int rep = 1; rep <= reps; rep++)
		for (int pc = 0; pc < 2; pc++)
			for (int q = 0; q < (have_qemu ? 2 : 1); q++) {
				struct ping_result r;
				const struct ping_stats *t = &r.st;
				char bt[160];

				ping_once(q, pc, rep, &r);
				series_add(&s[pc][q], rep - 1, r.ok, r.m.postcopy_used,
					   (double[]){t->gap_ms, t->lost, r.m.downtime_ms,
						      t->base_gap_ms, t->replies},
					   5, t->gap_ms);
				fprintf(stderr, "  %s %-8s run %d: ", q ? "qemu" : "vmm ",
					pc ? "postcopy" : "precopy", rep);
				if (r.analysed)
					fprintf(
					    stderr,
					    "%s: %d replies, %d lost, largest gap %.1f ms (%.0f "
					    "ms after the start), before the migration %.1f ms; "
					    "downtime %.1f ms%s, total %.0f ms%s\n",
					    r.ok ? "ok" : "FAILED", t->replies, t->lost, t->gap_ms,
					    t->gap_at_ms, t->base_gap_ms, r.m.downtime_ms,
					    blackout_text(bt, sizeof(bt), &r.m), r.m.total_ms,
					    pc && !r.m.postcopy_used ? " (completed as precopy)"
								     : "");
				else
					fprintf(stderr, "FAILED\n");
				if (!csv)
					continue;
				fprintf(csv, "ping,%s,%s,%d,%d,%s", pc ? "postcopy" : "precopy",
					q ? "qemu" : "vmm", rep, r.ok,
					!r.analysed	    ? ""
					: r.m.postcopy_used ? "postcopy"
							    : "precopy");
				if (r.analysed) {
					fprintf(csv, ",%d,%d,%d", t->replies, t->requests, t->lost);
					csv_num(csv, t->gap_ms, "%.2f");
					csv_num(csv, t->gap_at_ms, "%.1f");
					csv_num(csv, t->base_gap_ms, "%.2f");
					fprintf(csv, ",%d", t->after);
					csv_num(csv, r.m.downtime_ms, "%.3f");
					csv_num(csv, r.m.total_ms, "%.1f");
					csv_num(csv, r.m.t1 - r.m.t0, "%.1f");
				} else {
					fprintf(csv, ",,,,,,,,,,");
				}
				csv_blackout(csv, &r.m, r.analysed);
				fputc('\n', csv);
				fflush(csv);
			}
	printf("| mode | VMM | runs ok | largest gap ms | replies lost | downtime ms | largest gap "
	       "before the migration ms | postcopy used |\n|---|---|---|---|---|---|---|---|\n");
	for (int pc = 0; pc < 2; pc++)
		for (int q = 0; q < (have_qemu ? 2 : 1); q++) {
			const struct series *x = &s[pc][q];

			printf(
			    "| %s | %s | %d/%d | %s | %s | %s | %s | ", pc ? "postcopy" : "precopy",
			    q ? "QEMU" : "vmm", x->ok, x->runs, cell(b[0], 64, x, PV_GAP, "%.1f"),
			    cell(b[1], 64, x, PV_LOST, "%.0f"), cell(b[2], 64, x, PV_DOWN, "%.1f"),
			    cell(b[3], 64, x, PV_BASE, "%.1f"));
			if (pc)
				printf("%d/%d |\n", x->pc_used, x->ok);
			else
				printf("- |\n");
		}
	printf("(medians, range in brackets; the gap is the longest time between two replies the "
	       "client saw)\n");
	if (!have_qemu) {
		printf("no QEMU: no ratios\n");
		for (int pc = 0; pc < 2; pc++)
			printf("%s: vmm's largest gap (median) %s the goal of %.0f ms\n",
			       pc ? "postcopy" : "precopy",
			       med(&s[pc][0], PV_GAP) < GOAL_GAP_MS ? "meets" : "misses",
			       GOAL_GAP_MS);
		return;
	}
	printf("\n| mode | largest gap vmm/QEMU (medians) | per rep | vmm below QEMU | vmm under "
	       "%.0f ms |\n|---|---|---|---|---|\n",
	       GOAL_GAP_MS);
	for (int pc = 0; pc < 2; pc++) {
		const struct series *v = &s[pc][0], *q = &s[pc][1];
		double mv = med(v, PV_GAP), mq = med(q, PV_GAP);
		int below = 0, both = 0, under = 0;
		char per[256] = "";
		size_t off = 0;

		for (int r = 0; r < reps && r < MAXREPS; r++) {
			if (isnan(v->by_rep[r]))
				continue;
			under += v->by_rep[r] < GOAL_GAP_MS;
			if (isnan(q->by_rep[r]) || q->by_rep[r] <= 0)
				continue;
			both++;
			below += v->by_rep[r] < q->by_rep[r];
			off += (size_t)snprintf(per + off,
						off < sizeof(per) ? sizeof(per) - off : 0, "%s%.2f",
						off ? ", " : "", v->by_rep[r] / q->by_rep[r]);
			if (off >= sizeof(per))
				off = sizeof(per) - 1;
		}
		if (!isnan(mv) && !isnan(mq) && mq > 0)
			printf("| %s | %.2f | %s | %d/%d | %d/%d |\n", pc ? "postcopy" : "precopy",
			       mv / mq, per[0] ? per : "-", below, both, under, v->ok);
		else
			printf("| %s | - | %s | %d/%d | %d/%d |\n", pc ? "postcopy" : "precopy",
			       per[0] ? per : "-", below, both, under, v->ok);
	}
}

enum { BV_BEFORE, BV_DURING, BV_AFTER, BV_LONGEST, BV_MIG, BV_PASS };

static void part_blk(FILE *csv, int reps, bool have_qemu)
{
	static struct series s[2][2];
	char b[6][64];

	printf("\n== blk: the firmware writing, flushing, reading back and verifying 256 blocks of "
	       "4 KiB a pass on a virtio-blk disk file; guest throughput (written + read) %g s "
	       "before, during and %g s after the migration; %d interleaved run(s) per mode and "
	       "VMM\n",
	       WINDOW_MS / 1e3, WINDOW_MS / 1e3, reps);
	if (csv)
		fprintf(csv,
			"part,mode,vmm,run,ok,mode_used,pass_ms_before,before_mibs,during_mibs,"
			"after_mibs,longest_interval_ms,migration_ms,downtime_ms,total_ms");
	if (csv)
		csv_blackout_head(csv);
	for (int rep = 1; rep <= reps; rep++)
		for (int pc = 0; pc < 2; pc++)
			for (int q = 0; q < (have_qemu ? 2 : 1); q++) {
				struct blk_result r;
				double mig_ms;
				char bt[160];

				blk_once(q, pc, rep, &r);
				mig_ms = r.m.t1 - r.m.t0;
				series_add(&s[pc][q], rep - 1, r.ok, r.m.postcopy_used,
					   (double[]){r.before, r.during, r.after, r.longest_ms,
						      mig_ms, r.pass_ms},
					   6, r.during);
				fprintf(stderr, "  %s %-8s run %d: ", q ? "qemu" : "vmm ",
					pc ? "postcopy" : "precopy", rep);
				if (r.ok)
					fprintf(
					    stderr,
					    "ok: %.2f / %.2f / %.2f MiB/s before / during / "
					    "after, migration %.0f ms, longest interval %.0f ms "
					    "(%.0f ms a pass before), downtime %.1f ms%s%s\n",
					    r.before, r.during, r.after, mig_ms, r.longest_ms,
					    r.pass_ms, r.m.downtime_ms,
					    blackout_text(bt, sizeof(bt), &r.m),
					    pc && !r.m.postcopy_used ? " (completed as precopy)"
								     : "");
				else
					fprintf(stderr, "FAILED\n");
				if (!csv)
					continue;
				fprintf(csv, "blk,%s,%s,%d,%d,%s", pc ? "postcopy" : "precopy",
					q ? "qemu" : "vmm", rep, r.ok,
					!r.ok		    ? ""
					: r.m.postcopy_used ? "postcopy"
							    : "precopy");
				csv_num(csv, r.ok ? r.pass_ms : NAN, "%.1f");
				csv_num(csv, r.ok ? r.before : NAN, "%.3f");
				csv_num(csv, r.ok ? r.during : NAN, "%.3f");
				csv_num(csv, r.ok ? r.after : NAN, "%.3f");
				csv_num(csv, r.ok ? r.longest_ms : NAN, "%.1f");
				csv_num(csv, r.ok ? mig_ms : NAN, "%.1f");
				csv_num(csv, r.ok ? r.m.downtime_ms : NAN, "%.3f");
				csv_num(csv, r.ok ? r.m.total_ms : NAN, "%.1f");
				csv_blackout(csv, &r.m, r.ok);
				fputc('\n', csv);
				fflush(csv);
			}
	printf("| mode | VMM | runs ok | before MiB/s | during MiB/s | after MiB/s | migration ms "
	       "| longest interval between passes ms | a pass before ms | postcopy used |\n"
	       "|---|---|---|---|---|---|---|---|---|---|\n");
	for (int pc = 0; pc < 2; pc++)
		for (int q = 0; q < (have_qemu ? 2 : 1); q++) {
			const struct series *x = &s[pc][q];

			printf("| %s | %s | %d/%d | %s | %s | %s | %s | %s | %s | ",
			       pc ? "postcopy" : "precopy", q ? "QEMU" : "vmm", x->ok, x->runs,
			       cell(b[0], 64, x, BV_BEFORE, "%.2f"),
			       cell(b[1], 64, x, BV_DURING, "%.2f"),
			       cell(b[2], 64, x, BV_AFTER, "%.2f"),
			       cell(b[3], 64, x, BV_MIG, "%.0f"),
			       cell(b[4], 64, x, BV_LONGEST, "%.0f"),
			       cell(b[5], 64, x, BV_PASS, "%.0f"));
			if (pc)
				printf("%d/%d |\n", x->pc_used, x->ok);
			else
				printf("- |\n");
		}
	printf("(medians, range in brackets)\n");
	for (int pc = 0; pc < 2; pc++) {
		const struct series *v = &s[pc][0], *q = &s[pc][1];
		double vb = med(v, BV_BEFORE), vd = med(v, BV_DURING);

		printf("%s:", pc ? "postcopy" : "precopy");
		if (v->n && vb > 0)
			printf(" vmm during/before %.2f;", vd / vb);
		if (have_qemu && q->n) {
			double qb = med(q, BV_BEFORE), qd = med(q, BV_DURING);

			if (qb > 0)
				printf(" QEMU during/before %.2f;", qd / qb);
			if (v->n && qd > 0)
				printf(" vmm/QEMU during %.2f, migration time %.2f;", vd / qd,
				       med(v, BV_MIG) / med(q, BV_MIG));
		}
		printf("\n");
	}
}

/* ---- main ------------------------------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr,
		"usage: " PROG " [--reps N] [--quick] [--part ping|blk|all] [--csv FILE]\n"
		"                    [--vmm PATH] [--qemu PATH] [--firmware PATH] [--work DIR]\n"
		"  --reps N   interleaved runs per mode and VMM (default 3; --quick: 1)\n"
		"  --work DIR the runs' files there, kept (default: a temp dir, removed\n"
		"             unless a run failed); UNIX sockets: a local file system\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *part = "all", *csv_path = NULL, *work = NULL;
	char err[256];
	int reps = 3;
	bool have_qemu, ping, blk;
	struct stat st;
	FILE *csv = NULL;

	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--quick")) {
			reps = 1;
			continue;
		}
		if (!v)
			usage();
		if (!strcmp(argv[i], "--reps")) {
			char *end;

			reps = (int)strtol(v, &end, 10);
			if (*end || reps < 1 || reps > MAXREPS) {
				fprintf(stderr, PROG ": --reps: '%s' is not a number in 1..%d\n", v,
					MAXREPS);
				return 2;
			}
		} else if (!strcmp(argv[i], "--part"))
			part = v;
		else if (!strcmp(argv[i], "--csv"))
			csv_path = v;
		else if (!strcmp(argv[i], "--vmm"))
			vmm_bin = v;
		else if (!strcmp(argv[i], "--qemu"))
			qemu_bin = v;
		else if (!strcmp(argv[i], "--firmware"))
			firmware = v;
		else if (!strcmp(argv[i], "--work"))
			work = v;
		else
			usage();
		i++;
	}
	ping = !strcmp(part, "ping") || !strcmp(part, "all");
	blk = !strcmp(part, "blk") || !strcmp(part, "all");
	if (!ping && !blk)
		usage();
	if (geteuid() != 0) {
		fprintf(stderr, PROG ": needs root: it makes a network namespace and taps "
				     "(and vmm needs /dev/kvm)\n");
		return 1;
	}
	if (stat(vmm_bin, &st) || stat(firmware, &st)) {
		fprintf(stderr,
			PROG ": %s or %s is missing: build the vmm and vmm-firmware targets\n",
			vmm_bin, firmware);
		return 1;
	}
	if (ping && (!bench_on_path("ip") || !bench_on_path("ping"))) {
		fprintf(stderr, PROG ": part ping needs ip (iproute2) and ping (iputils-ping): "
				     "scripts/install-deps.sh\n");
		return 1;
	}
	have_qemu = bench_on_path(qemu_bin);
	if (!have_qemu)
		printf(PROG ": %s is not installed (apt-get install qemu-system-x86): the vmm side "
			    "only, no comparison\n",
		       qemu_bin);
	if (work) {
		/* socket paths (sun_path, 108 bytes) are DIR + a name of up to ~40 */
		if (strlen(work) >= sizeof(tmpdir) || (mkdir(work, 0755) && errno != EEXIST)) {
			fprintf(stderr, PROG ": --work %s: %s\n", work,
				strlen(work) >= sizeof(tmpdir) ? "longer than 63 characters"
							       : strerror(errno));
			return 1;
		}
		snprintf(tmpdir, sizeof(tmpdir), "%s", work);
		setenv("VMM_RUN_DIR", tmpdir, 1);
		keep_files = true;
		if (csv_path && !(csv = fopen(csv_path, "w"))) {
			perror(csv_path);
			return 1;
		}
	} else if (bench_open_outputs(PROG, csv_path, &csv, tmpdir, sizeof(tmpdir))) {
		return 1;
	}
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, SIG_IGN);
	printf("bench_netgap: the firmware guest (" MEM ", 1 vCPU) under vmm and QEMU microvm "
	       "(PVH, virtio-mmio), migrated over the loopback, downtime limit %d ms, postcopy "
	       "after the first pass\n",
	       DOWNTIME_MS);
	if (ping) {
		if (ns_setup(err, sizeof(err)))
			die("%s", err);
		part_ping(csv, reps, have_qemu);
	}
	if (blk) {
		if (csv && ping)
			fprintf(csv, "\n\n"); /* a section of its own (gnuplot: a data block) */
		part_blk(csv, reps, have_qemu);
	}
	if (csv)
		fclose(csv);
	return 0; /* atexit: the namespace and the temp dir go */
}
