/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_source: a migration source that sends a malformed stream, so tests
 * can check that the target refuses it with a clear error and no crash.
 *
 * usage: fake_source HOST:PORT CASE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "channel.h"
#include "config.h"
#include "protocol.h"

static struct mig_chan connect_or_die(const char *addr)
{
	struct mig_chan c;
	char err[256];

	for (int i = 0; i < 100; i++) {
		if (chan_connect(&c, addr, 2000, err, sizeof(err)) == 0)
			return c;
		usleep(100000);
	}
	fprintf(stderr, "fake_source: %s\n", err);
	exit(1);
}

/* A valid VM_DESC for a 256 MiB, 1 vCPU VM in one slot, one data connection. */
static void send_desc(struct mig_chan *c, uint32_t shard_pages)
{
	struct vm_config cfg;
	char ini[16384], err[256];
	struct mig_slot_desc slot = {.gpa = 0, .size = 256u << 20};
	struct mig_vm_desc d = {.memory = 256u << 20,
				.page_size = 4096,
				.nslots = 1,
				.nvcpus = 1,
				.nconnections = 1,
				.shard_pages = shard_pages};
	int len;

	config_defaults(&cfg);
	if (config_set(&cfg, "vm.memory=256M", err, sizeof(err)))
		exit(1);
	len = config_format(&cfg, ini, sizeof(ini));
	if (len < 0)
		exit(1);
	d.config_len = (uint32_t)len;
	struct mig_rec_hdr h = {.type = MIG_REC_VM_DESC,
				.len = (uint32_t)(sizeof(d) + sizeof(slot) + (size_t)len)};
	chan_write(c, &h, sizeof(h));
	chan_write(c, &d, sizeof(d));
	chan_write(c, &slot, sizeof(slot));
	chan_write(c, ini, (size_t)len);
}

static void send_pages(struct mig_chan *c, const char *kase)
{
	uint8_t page[4096];
	struct mig_pages_hdr ph = {.slot = 0, .nzero = 0, .ndata = 1, .encoding = MIG_ENC_RAW,
				   .data_len = 4096};
	uint32_t idx = 5;
	struct mig_rec_hdr h = {.type = MIG_REC_PAGES,
				.len = sizeof(ph) + sizeof(idx) + 4096};

	memset(page, 0xab, sizeof(page));
	if (!strcmp(kase, "page-outside-slot"))
		idx = 65536; /* a 256 MiB slot has 65536 pages: 0..65535 */
	if (!strcmp(kase, "pages-bad-length"))
		h.len += 7;
	if (!strcmp(kase, "pages-too-many"))
		ph.ndata = 100000;
	if (!strcmp(kase, "pages-bad-zstd"))
		ph.encoding = MIG_ENC_ZSTD;
	chan_write(c, &h, sizeof(h));
	chan_write(c, &ph, sizeof(ph));
	chan_write(c, &idx, sizeof(idx));
	if (!strcmp(kase, "pages-truncated")) {
		chan_write(c, page, 100);
		return;
	}
	chan_write(c, page, sizeof(page));
}

/* A postcopy switchover with one bad record on the main connection. */
static void send_bitmap(struct mig_chan *c, const char *kase)
{
	struct mig_postcopy pc = {.pass = 0, .flags = 0};
	uint8_t z[64];
	uint64_t raw[1024] = {0}; /* 65536 pages: 8 KiB of bitmap */
	struct mig_bitmap_hdr bh = {.slot = 0, .raw_len = sizeof(raw)};
	struct mig_bitmap_end be = {.nbitmaps = 1, .pages = 1};
	size_t n;

	raw[0] = 1;
	n = ZSTD_compress(z, sizeof(z), raw, sizeof(raw), 1);
	if (ZSTD_isError(n))
		exit(1);
	bh.data_len = (uint32_t)n;
	if (!strcmp(kase, "bitmap-bad-slot"))
		bh.slot = 7;
	if (!strcmp(kase, "bitmap-bad-zstd"))
		memset(z, 0x5a, n);
	if (!strcmp(kase, "bitmap-end-mismatch"))
		be.pages = 2;
	if (strcmp(kase, "bitmap-before-postcopy"))
		chan_send_record(c, MIG_REC_POSTCOPY, &pc, sizeof(pc), NULL, 0);
	chan_send_record(c, MIG_REC_BITMAP, &bh, sizeof(bh), z, bh.data_len);
	chan_send_record(c, MIG_REC_BITMAP_END, &be, sizeof(be), NULL, 0);
}

int main(int argc, char **argv)
{
	struct mig_chan main_c, data_c;
	const char *kase;

	if (argc != 3) {
		fprintf(stderr, "usage: fake_source HOST:PORT CASE\n");
		return 2;
	}
	kase = argv[2];
	main_c = connect_or_die(argv[1]);
	if (!strcmp(kase, "bad-magic")) {
		chan_write(&main_c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n\0\0\0\0\0", 32);
	} else if (!strcmp(kase, "huge-record")) {
		struct mig_rec_hdr h = {.type = MIG_REC_VM_DESC, .len = 0xffffff00u};

		chan_send_hello(&main_c, 42, MIG_ROLE_MAIN, 0);
		chan_write(&main_c, &h, sizeof(h));
	} else if (!strcmp(kase, "truncated-desc")) {
		struct mig_rec_hdr h = {.type = MIG_REC_VM_DESC, .len = 200};

		chan_send_hello(&main_c, 42, MIG_ROLE_MAIN, 0);
		chan_write(&main_c, &h, sizeof(h));
		chan_write(&main_c, "short", 5);
	} else if (!strcmp(kase, "desc-bad-lengths")) {
		struct mig_vm_desc d = {.memory = 1 << 28, .page_size = 4096, .nslots = 1000,
					.nvcpus = 1, .nconnections = 1, .config_len = 10,
					.shard_pages = 512};
		struct mig_rec_hdr h = {.type = MIG_REC_VM_DESC, .len = sizeof(d) + 20};

		chan_send_hello(&main_c, 42, MIG_ROLE_MAIN, 0);
		chan_write(&main_c, &h, sizeof(h));
		chan_write(&main_c, &d, sizeof(d));
		chan_write(&main_c, "01234567890123456789", 20);
	} else {
		struct mig_chan urgent_c;

		chan_send_hello(&main_c, 42, MIG_ROLE_MAIN, 0);
		send_desc(&main_c, 512);
		data_c = connect_or_die(argv[1]);
		chan_send_hello(&data_c, 42, MIG_ROLE_DATA, 0);
		urgent_c = connect_or_die(argv[1]);
		chan_send_hello(&urgent_c, 42, MIG_ROLE_URGENT, 0);
		if (!strncmp(kase, "bitmap-", 7))
			send_bitmap(&main_c, kase);
		else
			send_pages(&data_c, kase);
		sleep(1);
		chan_close(&urgent_c);
		/* Leave the connections open a moment so the target judges the data, not EOF. */
		sleep(1);
		chan_close(&data_c);
	}
	if (main_c.error) {
		fprintf(stderr, "fake_source: send failed\n");
	}
	sleep(1);
	chan_close(&main_c);
	return 0;
}
