// SPDX-License-Identifier: Apache-2.0
/*
 * workload_dirty.c - dirty and verify working-set pages, for migration tests.
 *
 * Each vCPU owns a contiguous share of the working set. In pass p it checks
 * that every page still holds what it wrote in pass p-1 (all zero for
 * p == 1) and then stamps the page for pass p. A page the migration lost or
 * copied stale fails the check on the target. Only five words per page are
 * touched: the guest is emulated at ~1 us per instruction, so the inner
 * loop must stay tiny for the VM to dirty pages quickly.
 */
#include "fw.h"

#define PAGE_WORDS	(VMM_PAGE_SIZE / 8u)
#define PACE_BACKLOG_MS 100u /* after a stall (e.g. a pause), do not burst */

enum { W_MAGIC, W_INDEX, W_PASS, W_CHECK, W_TAIL, W_COUNT };

/* Last pass each vCPU completed; vCPU 0 reports the minimum. */
static uint64_t done_pass[FW_MAX_VCPUS];

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
	if (!pass) { /* guest memory starts zeroed */
		w[W_MAGIC] = w[W_INDEX] = w[W_PASS] = w[W_CHECK] = w[W_TAIL] = 0;
		return;
	}
	w[W_MAGIC] = VMM_DIRTY_MAGIC | (vcpu & 0xffffu);
	w[W_INDEX] = index;
	w[W_PASS] = pass;
	w[W_CHECK] = w[W_TAIL] = page_check(index, pass);
}

/* Is [start, end) covered by the memory regions (adjacent ones chain)? */
static bool inside_memory(uint64_t start, uint64_t end)
{
	const struct fw_params *p = &fw_params;
	uint64_t cur = start;
	uint32_t i;
	bool progress = true;

	while (cur < end && progress) {
		progress = false;
		for (i = 0; i < p->nr_mem_regions; i++) {
			const struct fw_mem_region *r = &p->mem[i];

			if (cur >= r->base && cur < r->base + r->size) {
				cur = r->base + r->size;
				progress = true;
			}
		}
	}
	return cur >= end;
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
	if (!inside_memory(start, start + size)) {
		fw_log("dirty: working set [0x%lx, 0x%lx) is not inside guest memory", start,
		       start + size);
		return -1;
	}
	return 0;
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
						 uint64_t pass, const uint64_t *e, const uint64_t *f)
{
	fw_log("CORRUPTION vcpu=%u page=%lu gpa=0x%lx pass=%lu expected magic=0x%016lx "
	       "index=%lu pass=%lu check=0x%016lx tail=0x%016lx found magic=0x%016lx "
	       "index=%lu pass=%lu check=0x%016lx tail=0x%016lx",
	       vcpu, index, gpa, pass, e[W_MAGIC], e[W_INDEX], e[W_PASS], e[W_CHECK], e[W_TAIL],
	       f[W_MAGIC], f[W_INDEX], f[W_PASS], f[W_CHECK], f[W_TAIL]);
	fw_exit(VMM_GUEST_EXIT_CORRUPTION);
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
	uint64_t share, first, count, rate, tpp = 0, backlog, next, pass, i;

	if (index == 0) {
		if (check_working_set())
			fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
		fw_log("dirty working set %lu MiB at 0x%lx, rate %lu pages/s, passes %lu",
		       p->working_set >> 20, p->free_start, p->dirty_rate, p->passes);
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
	next = rdtsc();

	for (pass = 1;; pass++) {
		for (i = 0; i < count; i++) {
			if (tpp) {
				uint64_t now;

				while ((now = rdtsc()) < next)
					cpu_relax();
				if (now - next > backlog)
					next = now;
				next += tpp;
			}
			dirty_page(index, first + i, pass);
		}
		__atomic_store_n(&done_pass[index], pass, __ATOMIC_RELEASE);
		if (index == 0)
			heartbeat(pages);
		if (p->passes && pass == p->passes)
			break;
	}
	if (index)
		halt_forever();

	while (min_done_pass() < p->passes) {
		heartbeat(pages);
		cpu_relax();
	}
	heartbeat(pages);
	fw_log("dirty done: %lu passes verified", p->passes);
	fw_exit(VMM_GUEST_EXIT_OK);
}
