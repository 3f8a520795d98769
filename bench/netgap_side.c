/* SPDX-License-Identifier: Apache-2.0 */
/*
 * netgap_side.c - bench_netgap's host side (shell commands, the network
 * namespace and its taps, cleanup at exit and on signals) and one migration
 * of the firmware guest by either VMM: vmm through the migration harness,
 * QEMU microvm over QMP (qemu_mig.c); start, migrate, end, the corruption
 * check. Single-threaded, like the whole benchmark (netgap.h).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "bench_util.h"
#include "harness_json.h"
#include "harness_net.h"
#include "harness_run.h"
#include "netgap.h"
#include "qemu_mig.h"

#define QEMU_BASE                                                                                  \
	"-M microvm,acpi=off -enable-kvm -cpu max,vendor=GenuineIntel,-arch-capabilities -smp 1 "  \
	"-nodefaults -no-user-config -nographic -serial stdio -no-reboot "                         \
	"-device isa-debug-exit,iobase=0x501,iosize=4 -global virtio-mmio.force-legacy=false"

const char *const ng_part_names[] = {"ping", "blk"};

char ng_ns[32], ng_ns_wrap[64];
pid_t ng_ping_pid = -1;
static bool ns_made;

/* ---- the host side: shell commands, the namespace, taps ------------------------ */

/* Runs the formatted shell command: its exit status (-1: could not run it). */
int ng_sh(const char *fmt, ...)
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
void ng_cleanup(void)
{
	if (ng_ping_pid > 0) {
		kill(ng_ping_pid, SIGKILL);
		ng_ping_pid = -1;
	}
	if (ns_made) {
		ng_sh("ip netns del %s 2>/dev/null", ng_ns);
		ns_made = false;
	}
	if (!ng_opt.keep_files && !ng_failed_runs)
		bench_rm_tree(ng_tmpdir);
	else if (ng_tmpdir[0])
		fprintf(stderr, PROG ": the runs' files are in %s\n", ng_tmpdir);
	ng_tmpdir[0] = '\0';
}

void ng_on_signal(int sig)
{
	exit(128 + sig); /* atexit: ng_cleanup */
}

/* The namespace: lo, the bridge with the client's address, no IPv6 chatter for the guest. */
int ng_ns_setup(char *err, size_t errlen)
{
	snprintf(ng_ns, sizeof(ng_ns), "netgap%d", (int)getpid());
	snprintf(ng_ns_wrap, sizeof(ng_ns_wrap), "ip netns exec %s", ng_ns);
	if (ng_sh("ip netns add %s", ng_ns)) {
		snprintf(err, errlen, "cannot create the network namespace %s (ip netns add)",
			 ng_ns);
		return -EPERM;
	}
	ns_made = true;
	/* best effort: router solicitations and MLD reports would only be ignored by the guest */
	ng_sh("%s sh -c 'echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6; "
	      "echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6' 2>/dev/null",
	      ng_ns_wrap);
	if (ng_sh("ip -n %s link set lo up && ip -n %s link add br0 type bridge && "
		  "ip -n %s addr add " BRIDGE_ADDR " dev br0 && ip -n %s link set br0 up",
		  ng_ns, ng_ns, ng_ns, ng_ns)) {
		snprintf(err, errlen, "cannot set up the bridge br0 in %s", ng_ns);
		return -EIO;
	}
	return 0;
}

int ng_tap_add(const char *tap, char *err, size_t errlen)
{
	if (ng_sh("ip -n %s tuntap add dev %s mode tap && ip -n %s link set %s master br0 && "
		  "ip -n %s link set %s up",
		  ng_ns, tap, ng_ns, tap, ng_ns, tap)) {
		snprintf(err, errlen, "cannot add the tap %s to br0 in %s", tap, ng_ns);
		return -EIO;
	}
	return 0;
}

void ng_tap_del(const char *tap)
{
	ng_sh("ip -n %s link del %s 2>/dev/null", ng_ns, tap);
}

/* hx_watch_until's condition for "just pump the consoles for a while". */
int ng_never(void *arg)
{
	(void)arg;
	return 0;
}

/* ---- one migration of the guest, by either VMM ------------------------------------ */

/* vmm's --json parts of the downtime (docs/api.md), in this order (netgap.h). */
const char *const ng_blackout_keys[] = {
    "blackout_pause_us", "blackout_send_us",	 "blackout_state_us", "blackout_ack_us",
    "target_restore_us", "blackout_round_trips", "blackout_sleeps"};

static int vmm_start(struct side *s, const char *tap_s, const char *tap_d, const char *disk,
		     char *err, size_t errlen)
{
	char cfg[PATH_MAX];
	struct hx_argv sa = {0}, ta = {0};
	FILE *f;
	int ret;

	snprintf(cfg, sizeof(cfg), "%s/%s.cfg", ng_tmpdir, ng_part_names[s->part]);
	f = fopen(cfg, "w");
	if (!f) {
		snprintf(err, errlen, "%s: %s", cfg, strerror(errno));
		return -errno;
	}
	fprintf(f, "[vm]\nmemory = " MEM "\nvcpus = 1\n[firmware]\npath = %s\n", ng_opt.firmware);
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
		/* The same shared file; a target binds it itself (docs/config.md). */
		hx_argv_addf(&sa, "--set=disk.path=%s", disk);
		hx_argv_addf(&ta, "--set=disk.path=%s", disk);
	}
	snprintf(s->stems[0], sizeof(s->stems[0]), "%s.src", s->name);
	snprintf(s->stems[1], sizeof(s->stems[1]), "%s.dst", s->name);
	snprintf(s->stems[2], sizeof(s->stems[2]), "%s.mig", s->name);
	struct hx_run_opts o = {
	    .vmm = ng_opt.vmm_bin,
	    .dir = ng_tmpdir,
	    .src_stem = s->stems[0],
	    .dst_stem = s->stems[1],
	    .mig_stem = s->stems[2],
	    .pipes = true,
	    .name = s->name,
	    .config = cfg,
	    .source_args = sa.v,
	    .target_args = ta.v,
	    .source_wrap = s->part == P_PING ? ng_ns_wrap : NULL,
	    .target_wrap = s->part == P_PING ? ng_ns_wrap : NULL,
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
		hx_argv_split(&a, ng_ns_wrap);
	hx_argv_add(&a, ng_opt.qemu_bin);
	hx_argv_split(&a, QEMU_BASE);
	hx_argv_add(&a, "-m");
	hx_argv_add(&a, MEM);
	hx_argv_add(&a, "-kernel");
	hx_argv_add(&a, ng_opt.firmware);
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
	r = qvm_start(q, name, ng_tmpdir, a.v, incoming ? s->port : 0, err, errlen);
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

int ng_side_start(struct side *s, bool qemu, enum part part, bool postcopy, int rep,
		  const char *tap_s, const char *tap_d, const char *disk, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	s->qemu = qemu;
	s->part = part;
	s->postcopy = postcopy;
	snprintf(s->name, sizeof(s->name), "%s-%s-%s-%d", qemu ? "qemu" : "vmm",
		 ng_part_names[part], postcopy ? "post" : "pre", rep);
	return qemu ? qemu_start(s, tap_s, tap_d, disk, err, errlen)
		    : vmm_start(s, tap_s, tap_d, disk, err, errlen);
}

int ng_side_migrate(struct side *s, struct mig *m, char *err, size_t errlen)
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
			double v = hx_json_num(c.json, ng_blackout_keys[i]);

			m->blackout_us[i] = v >= 0 ? v : NAN;
		}
	}
	hx_cmd_free(&c);
	return ret;
}

/* The guest runs on the target after the migration. */
bool ng_side_target_runs(struct side *s)
{
	return s->qemu ? hx_running(&s->dst.proc) && qvm_guest_running(&s->dst)
		       : hx_running(&s->r.dst);
}

void ng_side_end(struct side *s)
{
	char sock[PATH_MAX];

	if (s->qemu) {
		qvm_end(&s->src);
		qvm_end(&s->dst);
		/* no sockets left in a --work dir (a copy of it would trip on them) */
		for (int i = 0; i < 2 && s->name[0]; i++) {
			snprintf(sock, sizeof(sock), "%s/%s.%s.qmp", ng_tmpdir, s->name,
				 i ? "dst" : "src");
			unlink(sock);
		}
	} else {
		hx_run_end(&s->r);
	}
}

/* CORRUPTION on either console (the blk guest's verification failed): -EIO. */
int ng_no_corruption(struct side *s, char *err, size_t errlen)
{
	const char *c = hx_console_corruption(s->dst_out);

	if (!c)
		c = hx_console_corruption(s->src_out);
	if (!c)
		return 0;
	snprintf(err, errlen, "the guest reports: %s", c);
	return -EIO;
}
