// SPDX-License-Identifier: Apache-2.0
/*
 * workload_blk.c - write and verify a pattern on the virtio-blk disk, for
 * migration tests with a disk.
 *
 * The disk's first BLK_MAX_SECTORS sectors (fewer on a smaller disk) are
 * cut into 4 KiB blocks, one request each. Pass p writes every block with
 * the record of generation p and, once the device acknowledged the write
 * with OK, notes p in gen_of[] in guest RAM; then a FLUSH; then it reads
 * every block back and checks it against its noted generation. gen_of[]
 * migrates with the guest's memory, so a write the source acknowledged
 * before the switchover must read back on the target: a lost or stale
 * write, or a block at the wrong place, is a CORRUPTION line.
 *
 * A record is key(sector, gen) + i * GOLDEN in word i: one splitmix64 per
 * block and an add per word, because the guest may be emulated at about a
 * microsecond per instruction. The key also hashes run_key, taken from the
 * TSC at boot, so a block left on the disk by an earlier run never passes
 * for this run's write.
 *
 * A read-only disk is read only: each pass reads the blocks and checks
 * nothing, after one write (of what block 0 already holds, so a device
 * that wrongly takes it changes nothing) that the device must refuse with
 * IOERR (virtio 1.2, 5.2.6.2).
 *
 * One request at a time, each waited for (bounded: virtq_wait()).
 */
#include "virtio.h"

#define BLK_SECTOR	      512u
#define BLK_BLOCK	      VMM_PAGE_SIZE /* one request, one page of buffer */
#define BLK_SECTORS_PER_BLOCK (BLK_BLOCK / BLK_SECTOR)
#define BLK_WORDS	      (BLK_BLOCK / 8u)
/* 1 MiB: 256 requests a pass, about a second when the guest is emulated. */
#define BLK_MAX_SECTORS 2048u
#define BLK_MAX_BLOCKS	(BLK_MAX_SECTORS / BLK_SECTORS_PER_BLOCK)
#define BLK_QUEUE_SIZE	16u /* one request of three descriptors in flight */

#define VIRTIO_BLK_F_RO	   5
#define VIRTIO_BLK_F_FLUSH 9

#define VIRTIO_BLK_T_IN	   0u
#define VIRTIO_BLK_T_OUT   1u
#define VIRTIO_BLK_T_FLUSH 4u

#define VIRTIO_BLK_S_OK	   0u
#define VIRTIO_BLK_S_IOERR 1u
#define STATUS_UNWRITTEN   0xffu /* what the status byte holds until the device writes it */

#define GOLDEN 0x9E3779B97F4A7C15ull

struct blk_req_hdr {
	uint32_t type;
	uint32_t reserved;
	uint64_t sector;
};

static struct {
	struct virtio_dev dev;
	struct virtq q;
	struct blk_req_hdr *hdr;  /* device-readable */
	volatile uint8_t *status; /* device-writable, on the header's page */
	uint64_t *data;		  /* one block */
	uint64_t capacity;	  /* sectors */
	uint32_t blocks;
	bool ro, flush;
} blk;

/* In guest RAM on purpose: these migrate with the guest (see the top). */
static uint64_t gen_of[BLK_MAX_BLOCKS];
static uint64_t run_key;

static uint64_t splitmix(uint64_t z)
{
	z += GOLDEN;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint64_t block_key(uint64_t sector, uint64_t gen)
{
	return splitmix(run_key ^ splitmix(sector ^ splitmix(gen)));
}

static __attribute__((noreturn)) void device_error(void)
{
	fw_exit(VMM_GUEST_EXIT_DEVICE);
}

/* One request, waited for: returns the status byte the device wrote. */
static uint8_t blk_request(uint32_t type, uint64_t sector, bool with_data)
{
	struct virtq_buf b[3];
	uint32_t n = 0, len;
	void *token;

	blk.hdr->type = type;
	blk.hdr->reserved = 0;
	blk.hdr->sector = sector;
	*blk.status = STATUS_UNWRITTEN;
	b[n++] = (struct virtq_buf){blk.hdr, sizeof(*blk.hdr), false};
	if (with_data)
		b[n++] = (struct virtq_buf){blk.data, BLK_BLOCK, type == VIRTIO_BLK_T_IN};
	b[n++] = (struct virtq_buf){(void *)blk.status, 1, true};
	if (virtq_add(&blk.q, b, n, &blk)) {
		fw_log("blk: no free descriptors (a request still in flight?)");
		device_error();
	}
	virtq_kick(&blk.q);
	if (virtq_wait(&blk.q, &token, &len)) {
		fw_log("blk: request timed out");
		fw_log("blk: request type %u sector %lu got no completion in %u ms (device status "
		       "0x%x)",
		       type, sector, VIRTIO_TIMEOUT_MS, virtio_status(&blk.dev));
		device_error();
	}
	return *blk.status;
}

/* A request that must succeed. */
static void blk_must(uint32_t type, uint64_t sector, bool with_data)
{
	uint8_t s = blk_request(type, sector, with_data);

	if (s != VIRTIO_BLK_S_OK) {
		fw_log("blk: request type %u sector %lu failed with status %u", type, sector, s);
		device_error();
	}
}

static void fill_block(uint64_t sector, uint64_t gen)
{
	uint64_t v = block_key(sector, gen);
	uint32_t i;

	for (i = 0; i < BLK_WORDS; i++, v += GOLDEN)
		blk.data[i] = v;
}

static void check_block(uint64_t sector, uint64_t gen)
{
	uint64_t v = block_key(sector, gen);
	uint32_t i;

	for (i = 0; i < BLK_WORDS; i++, v += GOLDEN) {
		if (blk.data[i] == v)
			continue;
		fw_log(
		    "CORRUPTION blk sector %lu word %u: read 0x%016lx expected 0x%016lx (gen %lu)",
		    sector + i / (BLK_SECTOR / 8u), i % (BLK_SECTOR / 8u), blk.data[i], v, gen);
		fw_exit(VMM_GUEST_EXIT_CORRUPTION);
	}
}

static void blk_setup(void)
{
	uint8_t *page;
	uint64_t area;

	if (virtio_find(VIRTIO_ID_BLOCK, &blk.dev))
		fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
	if (virtio_start(&blk.dev, 1ull << VIRTIO_BLK_F_RO | 1ull << VIRTIO_BLK_F_FLUSH) ||
	    virtq_init(&blk.q, &blk.dev, 0, BLK_QUEUE_SIZE) || virtio_driver_ok(&blk.dev)) {
		virtio_fail(&blk.dev);
		device_error();
	}
	blk.ro = blk.dev.features >> VIRTIO_BLK_F_RO & 1;
	blk.flush = blk.dev.features >> VIRTIO_BLK_F_FLUSH & 1;
	virtio_config_read(&blk.dev, 0, &blk.capacity, sizeof(blk.capacity));

	page = fw_alloc_pages(2);
	blk.hdr = (struct blk_req_hdr *)page;
	blk.status = page + 64; /* its own descriptor, any address does */
	blk.data = (uint64_t *)(page + VMM_PAGE_SIZE);
	area = blk.capacity < BLK_MAX_SECTORS ? blk.capacity : BLK_MAX_SECTORS;
	blk.blocks = (uint32_t)(area / BLK_SECTORS_PER_BLOCK);
	run_key = splitmix(rdtsc());
}

/* Reports progress at most every heartbeat-ms, as the dirty workload does. */
static void heartbeat(uint64_t pass, bool last)
{
	static uint64_t last_tsc;
	static bool printed;
	uint64_t now = rdtsc();

	if (!last && printed && fw_params.heartbeat_ms && now >= last_tsc &&
	    now - last_tsc < ms_to_tsc(fw_params.heartbeat_ms))
		return;
	if (blk.ro)
		fw_log("blk: pass %lu ok, %u blocks read (read-only)", pass, blk.blocks);
	else
		fw_log("blk: pass %lu ok, %u blocks written and verified", pass, blk.blocks);
	last_tsc = now;
	printed = true;
}

static void rw_pass(uint64_t pass)
{
	uint32_t k;

	for (k = 0; k < blk.blocks; k++) {
		uint64_t sector = (uint64_t)k * BLK_SECTORS_PER_BLOCK;

		fill_block(sector, pass);
		blk_must(VIRTIO_BLK_T_OUT, sector, true);
		gen_of[k] = pass; /* acknowledged: from now on it must read back */
	}
	if (blk.flush)
		blk_must(VIRTIO_BLK_T_FLUSH, 0, false);
	for (k = 0; k < blk.blocks; k++) {
		uint64_t sector = (uint64_t)k * BLK_SECTORS_PER_BLOCK;

		blk_must(VIRTIO_BLK_T_IN, sector, true);
		check_block(sector, gen_of[k]);
	}
}

static void ro_pass(void)
{
	uint32_t k;

	for (k = 0; k < blk.blocks; k++)
		blk_must(VIRTIO_BLK_T_IN, (uint64_t)k * BLK_SECTORS_PER_BLOCK, true);
}

/* The device must refuse a write; block 0's own bytes are written back. */
static void ro_probe(void)
{
	uint8_t s;

	blk_must(VIRTIO_BLK_T_IN, 0, true);
	s = blk_request(VIRTIO_BLK_T_OUT, 0, true);
	if (s != VIRTIO_BLK_S_IOERR) {
		fw_log("blk: write to a read-only disk was not refused (status %u, expected %u)", s,
		       VIRTIO_BLK_S_IOERR);
		device_error();
	}
	fw_log("blk: write to a read-only disk refused (status %u)", s);
}

void workload_blk(uint32_t index)
{
	const struct fw_params *p = &fw_params;
	uint64_t pass, floor = ms_to_tsc(p->min_pass_ms), t0;

	if (index)
		halt_forever(); /* as idle: vCPU 0 alone drives the device */
	blk_setup();
	fw_log("blk: disk of %lu sectors, %s", blk.capacity, blk.ro ? "read-only" : "read-write");
	fw_release_secondaries();
	if (!blk.blocks) {
		fw_log("blk: the disk is smaller than one %u-byte block", BLK_BLOCK);
		fw_exit(VMM_GUEST_EXIT_BAD_PARAMS);
	}
	if (blk.ro) {
		fw_log("blk: read-only: passes read the first %u blocks and verify nothing",
		       blk.blocks);
		ro_probe();
	}
	for (pass = 1;; pass++) {
		t0 = rdtsc();
		if (blk.ro)
			ro_pass();
		else
			rw_pass(pass);
		/* As dirty's floor: a run of N passes lasts about as long on any host. */
		for (;;) {
			uint64_t now = rdtsc();

			if (!floor || now < t0 || now - t0 >= floor)
				break;
			cpu_relax();
		}
		if (p->passes && pass == p->passes)
			break;
		heartbeat(pass, false);
	}
	heartbeat(pass, true);
	fw_log("blk: done, %lu passes %s", pass, blk.ro ? "read" : "verified");
	fw_exit(VMM_GUEST_EXIT_OK);
}
