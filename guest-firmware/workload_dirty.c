// SPDX-License-Identifier: Apache-2.0
/*
 * workload_dirty.c - dirty and verify working-set pages, for migration tests.
 *
 * Each vCPU owns a contiguous share of the working set. In pass p it checks
 * that every page still holds what it wrote in pass p-1 (all zero for
 * p == 1, or the VMM's pseudo-random fill with [workload] fill = random) and
 * then stamps the page for pass p. A page the migration lost or
 * copied stale fails the check on the target. Only five words per page are
 * touched: the guest is emulated at ~1 us per instruction, so the inner
 * loop must stay tiny for the VM to dirty pages quickly.
 *
 * [workload] order = random walks each share in a new permutation every
 * pass (pass_order), so postcopy faults are spread over the working set;
 * latency = true times every page (latency.c) and prints a line a pass.
 *
 * Paced ([workload] dirty_rate), each vCPU writes its share of the rate
 * against the TSC. A vCPU that fell behind (its host did not run it) makes
 * up at most catch_up_ms of lag at full speed and drops the rest, as a
 * server drops the requests it could not serve: with catch_up_ms = 0, time
 * the vCPU did not get is work it does not do, so a throttle or a stall
 * shows in the guest's own work. work_ms > 0 makes vCPU 0 print, at most
 * that often, the pages all vCPUs have written since boot ("dirty work N
 * pages at T ms", T on the guest's TSC): the guest's work rate, which a
 * benchmark reads across a migration.
 */
#include "fw.h"
#include "latency.h"

#define PAGE_WORDS	(VMM_PAGE_SIZE / 8u)
#define PACE_BACKLOG_MS 100u /* next this far ahead of the TSC: the TSC went back */

enum { W_MAGIC, W_INDEX, W_PASS, W_CHECK, W_TAIL, W_COUNT };

/* Last pass each vCPU completed; vCPU 0 reports the minimum. */
static uint64_t done_pass[FW_MAX_VCPUS];
/* Pages each vCPU wrote (work_ms only); vCPU 0 reports the sum. */
static uint64_t written[FW_MAX_VCPUS];

/* splitmix64 of the page's identity, so a page from another pass or index differs. */
static uint64_t page_check(uint64_t index, uint64_t pass)
{
	uint64_t z = (index * 0x9E3779B97F4A7C15ull) ^ pass;

	z += 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static void page_words(uint32_t vcpu, uint64_t index, uint64_t pass, uint64_t w[W_COUNT])
{
	if (!pass && fw_params.fill_random) { /* the VMM's fill (vmm_abi.h) */
		uint64_t gpa = fw_params.free_start + index * VMM_PAGE_SIZE;

		w[W_MAGIC] = vmm_fill_word(gpa);
		w[W_INDEX] = vmm_fill_word(gpa + 8);
		w[W_PASS] = vmm_fill_word(gpa + 16);
		w[W_CHECK] = vmm_fill_word(gpa + 24);
		w[W_TAIL] = vmm_fill_word(gpa + VMM_PAGE_SIZE - 8);
		return;
	}
	if (!pass) { /* guest memory starts zeroed */
		w[W_MAGIC] = w[W_INDEX] = w[W_PASS] = w[W_CHECK] = w[W_TAIL] = 0;
		return;
	}
	w[W_MAGIC] = VMM_DIRTY_MAGIC | (vcpu & 0xffffu);
	w[W_INDEX] = index;
	w[W_PASS] = pass;
	w[W_CHECK] = w[W_TAIL] = page_check(index, pass);
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/*
 * The visiting order of a pass with [workload] order = random: i -> (a*i + b)
 * mod n, a full-period permutation because gcd(a, n) = 1; a and b come from
 * the pass and the vCPU, so every pass and every vCPU walks differently.
 * Walked incrementally (j += a, minus n on overflow): no multiply or divide
 * per page. With order = seq, a = 1 and b = 0.
 */
static void pass_order(uint64_t n, uint32_t vcpu, uint64_t pass, uint64_t *a, uint64_t *b)
{
	uint64_t h = page_check(vcpu, pass ^ 0x6f72646572ull); /* "order" */

	*a = 1;
	*b = 0;
	if (!fw_params.order_random || n < 3)
		return;
	*b = h % n;
	*a = 2 + (h >> 32) % (n - 2); /* 2..n-1: never the sequential step */
	while (gcd(*a, n) != 1)
		*a = *a + 1 < n ? *a + 1 : 2;
}

static int check_working_set(void)
{
	const struct fw_params *p = &fw_params;
	uint64_t start = p->free_start, size = p->working_set;

	if (!p->has_working_set || !p->has_free_start) {
		fw_log("dirty: /chosen needs vmm,working-set and vmm,free-start");
		return -1;
	}
	if (!size || (size | start) % VMM_PAGE_SIZE || start + size < start) {
		fw_log("dirty: bad working set 0x%lx bytes at 0x%lx (page multiples, non-empty)",
		       size, start);
		return -1;
	}
	if (!fw_inside_memory(start, start + size)) {
		fw_log("dirty: working set [0x%lx, 0x%lx) is not inside guest memory", start,
		       start + size);
		return -1;
	}
	return 0;
}

/* Booted by another VMM (pvh.c): write the fill vmm would have written. */
static void self_fill(void)
{
	volatile uint64_t *w = (volatile uint64_t *)(uintptr_t)fw_params.free_start;
	uint64_t i, n = fw_params.working_set / 8;

	for (i = 0; i < n; i++)
		w[i] = vmm_fill_word(fw_params.free_start + i * 8);
}

static uint64_t min_done_pass(void)
{
	uint64_t m = UINT64_MAX, v;
	uint32_t i;

	for (i = 0; i < fw_params.nr_vcpus; i++) {
		v = __atomic_load_n(&done_pass[i], __ATOMIC_ACQUIRE);
		if (v < m)
			m = v;
	}
	return m;
}

/*
 * Waits for the latency ring's slot of `pass`; vCPU 0 frees slots as it
 * reports the passes every vCPU has done (the others only wait for it).
 */
static void lat_wait_slot(uint32_t index, uint64_t pass)
{
	while (!lat_slot_free(pass)) {
		if (index == 0)
			lat_report(min_done_pass());
		cpu_relax();
	}
}

/* vCPU 0 only: report progress when it advanced, at most every heartbeat-ms. */
static void heartbeat(uint64_t pages)
{
	static uint64_t last_pass, last_tsc;
	static bool printed;
	uint64_t m = min_done_pass(), now;

	if (m <= last_pass)
		return;
	now = rdtsc();
	if (printed && fw_params.heartbeat_ms && now - last_tsc < ms_to_tsc(fw_params.heartbeat_ms))
		return;
	fw_log("dirty pass %lu ok (%lu pages, %u vCPUs)", m, pages, fw_params.nr_vcpus);
	last_pass = m;
	last_tsc = now;
	printed = true;
}

static __attribute__((noreturn)) void corruption(uint32_t vcpu, uint64_t index, uint64_t gpa,
						 uint64_t pass, const uint64_t *e,
						 const uint64_t *f)
{
	fw_log("CORRUPTION vcpu=%u page=%lu gpa=0x%lx pass=%lu expected magic=0x%016lx "
	       "index=%lu pass=%lu check=0x%016lx tail=0x%016lx found magic=0x%016lx "
	       "index=%lu pass=%lu check=0x%016lx tail=0x%016lx",
	       vcpu, index, gpa, pass, e[W_MAGIC], e[W_INDEX], e[W_PASS], e[W_CHECK], e[W_TAIL],
	       f[W_MAGIC], f[W_INDEX], f[W_PASS], f[W_CHECK], f[W_TAIL]);
	fw_exit(VMM_GUEST_EXIT_CORRUPTION);
}

/* vCPU 0, every work_ms: the pages all vCPUs wrote so far, and when on the guest's clock. */
static void work_line(uint64_t now, uint64_t t0, uint64_t *due)
{
	uint64_t sum = 0, khz = fw_params.tsc_khz ? fw_params.tsc_khz : 1;
	uint32_t i;

	if (now < *due)
		return;
	for (i = 0; i < fw_params.nr_vcpus; i++)
		sum += __atomic_load_n(&written[i], __ATOMIC_RELAXED);
	fw_log("dirty work %lu pages at %lu ms", sum, (now - t0) / khz);
	*due = now + ms_to_tsc(fw_params.work_ms);
}

/* The TSC read earlier than a value this vCPU already saw: printed, once per jump. */
static void tsc_went_back(uint32_t vcpu, uint64_t seen, uint64_t now)
{
	uint64_t khz = fw_params.tsc_khz ? fw_params.tsc_khz : 1;

	fw_log("dirty: vCPU %u: the TSC went back %lu ms (0x%lx after 0x%lx)", vcpu,
	       (seen - now) / khz, now, seen);
}

/* Verify the page against pass-1, then stamp it for pass. */
static void dirty_page(uint32_t vcpu, uint64_t index, uint64_t pass)
{
	uint64_t gpa = fw_params.free_start + index * VMM_PAGE_SIZE;
	volatile uint64_t *pg = (volatile uint64_t *)(uintptr_t)gpa;
	uint64_t e[W_COUNT], f[W_COUNT];

	page_words(vcpu, index, pass - 1, e);
	f[W_MAGIC] = pg[0];
	f[W_INDEX] = pg[1];
	f[W_PASS] = pg[2];
	f[W_CHECK] = pg[3];
	f[W_TAIL] = pg[PAGE_WORDS - 1];
	if (f[W_MAGIC] != e[W_MAGIC] || f[W_INDEX] != e[W_INDEX] || f[W_PASS] != e[W_PASS] ||
	    f[W_CHECK] != e[W_CHECK] || f[W_TAIL] != e[W_TAIL])
		corruption(vcpu, index, gpa, pass, e, f);

	page_words(vcpu, index, pass, e);
	pg[0] = e[W_MAGIC];
	pg[1] = e[W_INDEX];
	pg[2] = e[W_PASS];
	pg[3] = e[W_CHECK];
	pg[PAGE_WORDS - 1] = e[W_TAIL];
}

void workload_dirty(uint32_t index)
{
	const struct fw_params *p = &fw_params;
	uint64_t pages = p->working_set / VMM_PAGE_SIZE;
	uint32_t n = p->nr_vcpus;
	uint64_t share, first, count, rate, tpp = 0, backlog, catch_up, next, pass, i, j, step;
	uint64_t floor = ms_to_tsc(p->min_pass_ms), t_floor, t_pass = 0, t0 = rdtsc(), due = t0;
	bool work = p->work_ms != 0;
	struct lat_pass lat;
	bool timed = p->latency;

	if (index == 0) {
		if (check_working_set())
			fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
		if (p->fill_random && p->fill_self)
			self_fill();
		fw_log("dirty working set %lu MiB at 0x%lx, rate %lu pages/s, passes %lu, fill %s, "
		       "order %s",
		       p->working_set >> 20, p->free_start, p->dirty_rate, p->passes,
		       p->fill_random ? "random" : "zero", p->order_random ? "random" : "seq");
		fw_release_secondaries();
	}

	share = pages / n;
	first = index * share;
	count = index == n - 1 ? pages - first : share;

	/* Busy-wait pacing against the TSC: the VM-wide rate split evenly. */
	rate = p->dirty_rate / n;
	if (p->dirty_rate && !rate)
		rate = 1;
	if (rate)
		tpp = (uint64_t)p->tsc_khz * 1000u / rate;
	backlog = ms_to_tsc(PACE_BACKLOG_MS);
	/* At least a page's time: the jitter of the pacing loop itself is not lag. */
	catch_up = ms_to_tsc(p->catch_up_ms);
	if (catch_up < tpp)
		catch_up = tpp;
	next = rdtsc();
	memset(&lat, 0, sizeof(lat));

	for (pass = 1;; pass++) {
		pass_order(count, index, pass, &step, &j);
		t_floor = rdtsc();
		if (timed) {
			lat_wait_slot(index, pass);
			t_pass = rdtsc();
		}
		for (i = 0; i < count; i++) {
			if (tpp) {
				uint64_t now;

				while ((now = rdtsc()) < next) {
					/*
					 * next is at most one page's time ahead of a TSC
					 * read before: far ahead means the TSC went back
					 * (a restore or a migration that set it wrong).
					 * Say so once and pace from here, rather than
					 * spin until it catches up.
					 */
					if (next - now > backlog) {
						tsc_went_back(index, next - tpp, now);
						next = now;
						break;
					}
					cpu_relax();
				}
				if (now - next > catch_up)
					next = now;
				next += tpp;
			}
			if (timed) {
				uint64_t t0 = rdtsc();

				dirty_page(index, first + j, pass);
				lat_record(&lat, rdtsc() - t0);
			} else {
				dirty_page(index, first + j, pass);
			}
			if (work) {
				__atomic_store_n(&written[index], written[index] + 1,
						 __ATOMIC_RELAXED);
				if (index == 0)
					work_line(rdtsc(), t0, &due);
			}
			j += step;
			if (j >= count)
				j -= count;
		}
		if (timed)
			lat_publish(pass, &lat, rdtsc() - t_pass);
		/* The floor keeps a run of N passes about as long on a fast host as on
		 * a slow one, so a test's migration still finds the guest running. */
		while (floor && rdtsc() - t_floor < floor)
			cpu_relax();
		__atomic_store_n(&done_pass[index], pass, __ATOMIC_RELEASE);
		if (index == 0) {
			heartbeat(pages);
			if (timed)
				lat_report(min_done_pass());
		}
		if (p->passes && pass == p->passes)
			break;
	}
	if (index)
		halt_forever();

	while (min_done_pass() < p->passes) {
		heartbeat(pages);
		if (timed)
			lat_report(min_done_pass());
		cpu_relax();
	}
	heartbeat(pages);
	if (timed)
		lat_report(p->passes);
	fw_log("dirty done: %lu passes verified", p->passes);
	fw_exit(VMM_GUEST_EXIT_OK);
}
