/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_proof: what the decision proofs (migration/wire/proof.h) cost, and
 * which of it the switchover's blackout pays.
 *
 * Warm: --n times per decision, in this process, once everything is loaded:
 *   keygen   mig_keys_new() of one key (getrandom, the public key derived)
 *   sign     mig_proof_sign() (the private key is parsed on every call)
 *   verify   mig_proof_verify()
 * Cold: the same calls as the first ones of a fresh process (a child per
 * run, --cold runs of it), in the order a migration makes them:
 *   source   its four keys (setup, before VM_DESC), then COMMIT's proof
 *   target   its operator's two keys, then the verification of COMMIT;
 *            again with mig_proof_warm() after the keys, as vmm does now
 * The first libcrypto call of a process loads its provider and fetches the
 * algorithm, and the first signature or verification fetches that method:
 * whatever of that falls between the pause and the target's resume is
 * downtime. The last table says what lies inside it.
 *
 * usage: bench_proof [--n N] [--cold N] [--csv FILE]
 */
#include <openssl/crypto.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "bench_util.h"
#include "proof.h"

#define PROG "bench_proof"

/* The cold sequence's steps, as the children measure them (µs). */
enum {
	C_SRC_KEYS,
	C_SRC_SIGN,
	C_SRC_SIGN2,
	C_TGT_KEYS,
	C_TGT_VERIFY,
	C_TGT_VERIFY2,
	C_TGT_WARM,
	C_TGT_WARM_VERIFY,
	C_TGT_WARM_VERIFY2,
	C_STEPS
};
static const char *const cold_names[C_STEPS] = {
    "source: 4 keys (first libcrypto use)",
    "source: first sign (COMMIT)",
    "source: second sign",
    "target: 2 keys (first libcrypto use)",
    "target: first verify (COMMIT), after the keys",
    "target: second verify",
    "target: mig_proof_warm() after the keys",
    "target: first verify (COMMIT), after mig_proof_warm()",
    "target: second verify, after mig_proof_warm()",
};

struct stat3 {
	double p50, p99, mean;
};

static struct stat3 stats(double *v, int n)
{
	struct stat3 s = {0};

	for (int i = 0; i < n; i++)
		s.mean += v[i] / n;
	qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
	s.p50 = v[n / 2];
	s.p99 = v[(int)((double)n * 0.99) < n ? (int)((double)n * 0.99) : n - 1];
	return s;
}

static double now_us(void)
{
	return bench_now_ms() * 1000.0;
}

/* One fresh process's first calls, in a migration's order; out[C_STEPS] in µs. */
static int cold_child(int fd)
{
	static const uint8_t bind[MIG_BIND_LEN];
	struct mig_keys src;
	uint8_t sig[MIG_SIG_LEN];
	double out[C_STEPS], t;
	char err[128];
	bool ok = true;

	t = now_us();
	ok &= !mig_keys_new(&src, MIG_DECIDE_COMMIT, MIG_SOURCE_DECISIONS, err, sizeof(err));
	out[C_SRC_KEYS] = now_us() - t;
	t = now_us();
	ok &= !mig_proof_sign(&src, MIG_DECIDE_COMMIT, 42, 0, bind, sig, err, sizeof(err));
	out[C_SRC_SIGN] = now_us() - t;
	t = now_us();
	ok &= !mig_proof_sign(&src, MIG_DECIDE_RELEASE, 42, 0, bind, sig, err, sizeof(err));
	out[C_SRC_SIGN2] = now_us() - t;
	mig_keys_wipe(&src);
	/* The target is another process: its first calls are cold_target_child's. */
	out[C_TGT_KEYS] = out[C_TGT_VERIFY] = out[C_TGT_VERIFY2] = 0;
	if (!ok)
		return 1;
	return write(fd, out, sizeof(out)) == (ssize_t)sizeof(out) ? 0 : 1;
}

/*
 * The target's first calls: its keys, then (warm) mig_proof_warm(), then
 * COMMIT's verification (a proof from the parent); out[0..3).
 */
static int cold_target(int fd, bool warm)
{
	static const uint8_t bind[MIG_BIND_LEN];
	/* A COMMIT proof under a key the parent drew, read from the socket. */
	struct {
		uint8_t pub[MIG_KEY_LEN];
		uint8_t sig[MIG_SIG_LEN];
	} in;
	struct mig_keys own;
	double out[3], t;
	char err[128];
	bool ok = true;

	if (read(fd, &in, sizeof(in)) != (ssize_t)sizeof(in))
		return 1;
	t = now_us();
	ok &= !mig_keys_new(&own, MIG_DECIDE_RUN, 2, err, sizeof(err));
	out[0] = now_us() - t;
	if (warm) {
		t = now_us();
		ok &= !mig_proof_warm(err, sizeof(err));
		out[0] = now_us() - t;
	}
	t = now_us();
	ok &= mig_proof_verify(in.pub, MIG_DECIDE_COMMIT, 42, 0, bind, in.sig, MIG_SIG_LEN);
	out[1] = now_us() - t;
	t = now_us();
	ok &= mig_proof_verify(in.pub, MIG_DECIDE_COMMIT, 42, 0, bind, in.sig, MIG_SIG_LEN);
	out[2] = now_us() - t;
	mig_keys_wipe(&own);
	if (!ok)
		return 1;
	return write(fd, out, sizeof(out)) == (ssize_t)sizeof(out) ? 0 : 1;
}

static int cold_target_child(int fd)
{
	return cold_target(fd, false);
}

static int cold_target_warm_child(int fd)
{
	return cold_target(fd, true);
}

/* Runs fn in a child with one end of a socketpair; reads n doubles back. */
static int in_child(int (*fn)(int), const void *give, size_t glen, double *out, size_t n)
{
	int sv[2], status;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(sv[0]);
		_exit(fn(sv[1]));
	}
	close(sv[1]);
	if (glen && write(sv[0], give, glen) != (ssize_t)glen)
		return -1;
	if (read(sv[0], out, n * sizeof(double)) != (ssize_t)(n * sizeof(double)))
		n = 0;
	close(sv[0]);
	waitpid(pid, &status, 0);
	return n && WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

static int cold_run(double out[C_STEPS])
{
	static const uint8_t bind[MIG_BIND_LEN];
	struct {
		uint8_t pub[MIG_KEY_LEN];
		uint8_t sig[MIG_SIG_LEN];
	} give;
	struct mig_keys k;
	char err[128];

	if (in_child(cold_child, NULL, 0, out, C_STEPS))
		return -1;
	if (mig_keys_new(&k, MIG_DECIDE_COMMIT, 1, err, sizeof(err)) ||
	    mig_proof_sign(&k, MIG_DECIDE_COMMIT, 42, 0, bind, give.sig, err, sizeof(err)))
		return -1;
	memcpy(give.pub, k.pub[MIG_DECIDE_COMMIT], MIG_KEY_LEN);
	mig_keys_wipe(&k);
	if (in_child(cold_target_child, &give, sizeof(give), out + C_TGT_KEYS, 3) ||
	    in_child(cold_target_warm_child, &give, sizeof(give), out + C_TGT_WARM, 3))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	static const uint8_t bind[MIG_BIND_LEN];
	const char *csv_path = NULL;
	int n = 2000, ncold = 20;
	double *ts, *cold[C_STEPS], cm[C_STEPS];
	struct stat3 keygen, sign[MIG_DECISIONS], verify[MIG_DECISIONS];
	struct mig_keys k;
	uint8_t sig[MIG_SIG_LEN];
	char err[128];
	FILE *csv = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--cold") && i + 1 < argc)
			ncold = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--csv") && i + 1 < argc)
			csv_path = argv[++i];
		else if (!strcmp(argv[i], "--quick"))
			n = 200, ncold = 5;
		else {
			fprintf(stderr,
				"usage: " PROG " [--n N] [--cold N] [--quick] [--csv FILE]\n");
			return 2;
		}
	}
	if (n < 1 || ncold < 1) {
		fprintf(stderr, PROG ": --n and --cold must be at least 1\n");
		return 2;
	}
	ts = calloc((size_t)n, sizeof(double));
	for (int s = 0; s < C_STEPS; s++)
		cold[s] = calloc((size_t)ncold, sizeof(double));
	if (!ts || !cold[C_STEPS - 1]) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	/* Each cold run is a fresh child: it does not matter what this process loaded. */
	for (int r = 0; r < ncold; r++) {
		double out[C_STEPS];

		if (cold_run(out)) {
			fprintf(stderr, PROG ": a cold run failed\n");
			return 1;
		}
		for (int s = 0; s < C_STEPS; s++)
			cold[s][r] = out[s];
	}
	for (int s = 0; s < C_STEPS; s++)
		cm[s] = bench_median(cold[s], ncold);

	for (int i = 0; i < n; i++) {
		double t = now_us();

		if (mig_keys_new(&k, MIG_DECIDE_COMMIT, 1, err, sizeof(err))) {
			fprintf(stderr, PROG ": %s\n", err);
			return 1;
		}
		ts[i] = now_us() - t;
	}
	keygen = stats(ts, n);
	if (mig_keys_new(&k, MIG_DECIDE_COMMIT, MIG_DECISIONS, err, sizeof(err))) {
		fprintf(stderr, PROG ": %s\n", err);
		return 1;
	}
	for (unsigned d = 0; d < MIG_DECISIONS; d++) {
		for (int i = 0; i < n; i++) {
			double t = now_us();

			if (mig_proof_sign(&k, d, 42, 0, bind, sig, err, sizeof(err))) {
				fprintf(stderr, PROG ": %s\n", err);
				return 1;
			}
			ts[i] = now_us() - t;
		}
		sign[d] = stats(ts, n);
		for (int i = 0; i < n; i++) {
			double t = now_us();

			if (!mig_proof_verify(k.pub[d], d, 42, 0, bind, sig, MIG_SIG_LEN)) {
				fprintf(stderr, PROG ": a proof did not verify\n");
				return 1;
			}
			ts[i] = now_us() - t;
		}
		verify[d] = stats(ts, n);
	}
	mig_keys_wipe(&k);

	printf("Decision proofs (Ed25519, %s), warm: %d calls each, microseconds\n",
	       OpenSSL_version(OPENSSL_VERSION), n);
	printf("| decision | sign p50 | sign p99 | verify p50 | verify p99 |\n");
	printf("|---|---|---|---|---|\n");
	for (unsigned d = 0; d < MIG_DECISIONS; d++)
		printf("| %s | %.1f | %.1f | %.1f | %.1f |\n", mig_decision_name(d), sign[d].p50,
		       sign[d].p99, verify[d].p50, verify[d].p99);
	printf("| (keygen, one key) | %.1f | %.1f | | |\n\n", keygen.p50, keygen.p99);

	printf("Cold: the first calls of a fresh process, median of %d, microseconds\n", ncold);
	printf("| step | us |\n|---|---|\n");
	for (int s = 0; s < C_STEPS; s++)
		printf("| %s | %.1f |\n", cold_names[s], cm[s]);
	printf("\nInside the blackout (the source's pause to the target's resume), medians:\n");
	printf("| | source | target | sum (us) |\n|---|---|---|---|\n");
	printf("| 6.0 as merged: COMMIT signed at the decision, the target's keys drawn at "
	       "PREPARED (first libcrypto use without TLS) | %.1f | %.1f | %.1f |\n",
	       cm[C_SRC_SIGN], cm[C_TGT_KEYS] + cm[C_TGT_VERIFY],
	       cm[C_SRC_SIGN] + cm[C_TGT_KEYS] + cm[C_TGT_VERIFY]);
	printf("| now: COMMIT signed before the pause, keys and mig_proof_warm() at VM_DESC | 0 "
	       "| %.1f | %.1f |\n",
	       cm[C_TGT_WARM_VERIFY], cm[C_TGT_WARM_VERIFY]);
	printf("| (warm floor: one verification) | 0 | %.1f | %.1f |\n",
	       verify[MIG_DECIDE_COMMIT].p50, verify[MIG_DECIDE_COMMIT].p50);

	if (csv_path) {
		csv = fopen(csv_path, "w");
		if (!csv) {
			fprintf(stderr, PROG ": %s: %s\n", csv_path, strerror(errno));
			return 1;
		}
		fprintf(csv, "op,decision,kind,n,p50_us,p99_us,mean_us\n");
		fprintf(csv, "keygen,-,warm,%d,%.2f,%.2f,%.2f\n", n, keygen.p50, keygen.p99,
			keygen.mean);
		for (unsigned d = 0; d < MIG_DECISIONS; d++) {
			fprintf(csv, "sign,%s,warm,%d,%.2f,%.2f,%.2f\n", mig_decision_name(d), n,
				sign[d].p50, sign[d].p99, sign[d].mean);
			fprintf(csv, "verify,%s,warm,%d,%.2f,%.2f,%.2f\n", mig_decision_name(d), n,
				verify[d].p50, verify[d].p99, verify[d].mean);
		}
		for (int s = 0; s < C_STEPS; s++)
			fprintf(csv, "\"%s\",-,cold,%d,%.2f,,\n", cold_names[s], ncold, cm[s]);
		/* A second section (bench/run: a blank line): what the blackout pays. */
		fprintf(csv, "\nin the blackout,source_us,target_us,sum_us\n");
		fprintf(csv,
			"6.0 as merged (COMMIT signed at the decision; keys at PREPARED),%.1f,%.1f,"
			"%.1f\n",
			cm[C_SRC_SIGN], cm[C_TGT_KEYS] + cm[C_TGT_VERIFY],
			cm[C_SRC_SIGN] + cm[C_TGT_KEYS] + cm[C_TGT_VERIFY]);
		fprintf(
		    csv,
		    "now (COMMIT signed before the pause; keys and warm-up first),0,%.1f,%.1f\n",
		    cm[C_TGT_WARM_VERIFY], cm[C_TGT_WARM_VERIFY]);
		fprintf(csv, "warm floor (one verification),0,%.1f,%.1f\n",
			verify[MIG_DECIDE_COMMIT].p50, verify[MIG_DECIDE_COMMIT].p50);
		fclose(csv);
	}
	free(ts);
	for (int s = 0; s < C_STEPS; s++)
		free(cold[s]);
	return 0;
}
