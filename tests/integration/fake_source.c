/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_source: a migration source that sends a malformed stream, so tests
 * can check that the target refuses it with a clear error and no crash.
 * Records are built with the codec (codec.h), then broken on purpose: the
 * encoders serialise whatever they are given.
 *
 * The cases that go wrong before the VM exists (bad-magic, garbage,
 * wrong-version, data-first, huge-record, truncated-desc, desc-bad-lengths,
 * busy) are refused on their own by a target that keeps waiting: they
 * wait (30 s at most) for its ERROR record, print it on stdout as
 * "fake_source: target says: ..." and fail (exit 3) without one. idle
 * connects and says nothing for 60 s. tsc-1khz describes a VM whose guest
 * TSC runs at 1 kHz: the target cannot create it and answers ERROR.
 * desc:SETS sends a description whose config has SETS (section.key=value
 * separated by ';', e.g. "disk.path=/srv/d.img") and prints the answer.
 *
 * usage: fake_source HOST:PORT CASE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zstd.h>

#include "channel.h"
#include "codec.h"
#include "config.h"

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

/* A bare record header, whatever its length says. */
static void send_rec_hdr(struct mig_chan *c, uint32_t type, uint32_t len)
{
	uint8_t h[MIG_REC_HDR_LEN];

	mig_rec_hdr_encode(h, type, len);
	chan_write(c, h, sizeof(h));
}

/*
 * A valid VM_DESC for a 256 MiB, 1 vCPU VM in one slot, one data connection,
 * its config changed by `sets`: "section.key=value" assignments separated
 * by ';' (e.g. "vm.tsc_khz=1": a guest TSC no host runs).
 */
static void send_desc_sets(struct mig_chan *c, uint32_t shard_pages, const char *sets)
{
	struct vm_config cfg;
	char err[256], *list = strdup(sets), *save = NULL;
	uint8_t hdr[MIG_VM_DESC_LEN], body[MIG_SLOT_DESC_LEN + 16384];
	struct mig_slot_desc slot = {.gpa = 0, .size = 256u << 20};
	struct mig_vm_desc d = {.memory = 256u << 20,
				.page_size = MIG_PAGE_SIZE,
				.nslots = 1,
				.nvcpus = 1,
				.connections = 1,
				.shard_pages = shard_pages};
	int len;

	config_defaults(&cfg);
	if (!list || config_set(&cfg, "vm.memory=256M", err, sizeof(err)))
		exit(1);
	for (char *one = strtok_r(list, ";", &save); one; one = strtok_r(NULL, ";", &save))
		if (config_set(&cfg, one, err, sizeof(err))) {
			fprintf(stderr, "fake_source: %s\n", err);
			exit(1);
		}
	free(list);
	len =
	    config_format(&cfg, (char *)body + MIG_SLOT_DESC_LEN, sizeof(body) - MIG_SLOT_DESC_LEN);
	if (len < 0)
		exit(1);
	d.config_len = (uint32_t)len;
	mig_vm_desc_encode(hdr, &d);
	mig_slot_desc_encode(body, &slot);
	chan_send_record(c, MIG_REC_VM_DESC, hdr, sizeof(hdr), body,
			 MIG_SLOT_DESC_LEN + (uint32_t)len);
}

static void send_desc(struct mig_chan *c, uint32_t shard_pages)
{
	send_desc_sets(c, shard_pages, "vm.tsc_khz=0");
}

static void send_pages(struct mig_chan *c, const char *kase)
{
	uint8_t page[4096], ph_buf[MIG_PAGES_HDR_LEN], idx[4], rh[MIG_REC_HDR_LEN];
	struct mig_pages_hdr ph = {
	    .slot = 0, .nzero = 0, .ndata = 1, .encoding = MIG_ENC_RAW, .data_len = 4096};
	uint32_t page_index = 5;
	uint32_t len = (uint32_t)mig_pages_len(&ph); /* of the valid record */
	struct iovec iov[4];

	memset(page, 0xab, sizeof(page));
	if (!strcmp(kase, "page-outside-slot"))
		page_index = 65536; /* a 256 MiB slot has 65536 pages: 0..65535 */
	if (!strcmp(kase, "pages-bad-length"))
		len += 7;
	if (!strcmp(kase, "pages-too-many"))
		ph.ndata = 100000;
	if (!strcmp(kase, "pages-bad-zstd"))
		ph.encoding = MIG_ENC_ZSTD; /* the raw page is no zstd frame */
	mig_rec_hdr_encode(rh, MIG_REC_PAGES, len);
	mig_pages_hdr_encode(ph_buf, &ph);
	le_put32(idx, page_index);
	iov[0] = (struct iovec){rh, sizeof(rh)};
	iov[1] = (struct iovec){ph_buf, sizeof(ph_buf)};
	iov[2] = (struct iovec){idx, sizeof(idx)};
	/* Truncated: the header promises a page, 100 bytes come. */
	iov[3] = (struct iovec){page, !strcmp(kase, "pages-truncated") ? 100 : sizeof(page)};
	chan_writev(c, iov, 4);
}

/* A postcopy switchover with one bad record on the main connection. */
static void send_bitmap(struct mig_chan *c, const char *kase)
{
	struct mig_postcopy pc = {.pass = 0, .flags = 0};
	uint8_t z[64], pc_buf[MIG_POSTCOPY_LEN], bh_buf[MIG_BITMAP_HDR_LEN];
	uint8_t be_buf[MIG_BITMAP_END_LEN];
	uint64_t raw[1024] = {0}; /* 65536 pages: 8 KiB of bitmap (little endian) */
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
	mig_postcopy_encode(pc_buf, &pc);
	mig_bitmap_hdr_encode(bh_buf, &bh);
	mig_bitmap_end_encode(be_buf, &be);
	if (strcmp(kase, "bitmap-before-postcopy"))
		chan_send_record(c, MIG_REC_POSTCOPY, pc_buf, sizeof(pc_buf), NULL, 0);
	chan_send_record(c, MIG_REC_BITMAP, bh_buf, sizeof(bh_buf), z, bh.data_len);
	chan_send_record(c, MIG_REC_BITMAP_END, be_buf, sizeof(be_buf), NULL, 0);
}

/* The target's refusal: one ERROR record on main, printed. */
static int expect_error(struct mig_chan *c)
{
	struct mig_rec_hdr h;
	uint8_t buf[1024];
	char msg[512], err[256];

	/* The target answers as on a main connection, whatever role we claimed. */
	chan_set_role(c, MIG_ROLE_MAIN, MIG_DIR_T2S);
	chan_set_timeout(c, 30000);
	if (chan_recv_record(c, 0, &h, buf, sizeof(buf), err, sizeof(err))) {
		fprintf(stderr, "fake_source: no ERROR from the target: %s\n", err);
		return 3;
	}
	if (h.type != MIG_REC_ERROR ||
	    mig_error_decode(buf, h.len, msg, sizeof(msg), err, sizeof(err))) {
		fprintf(stderr, "fake_source: expected ERROR, got %s\n", mig_rec_name(h.type));
		return 3;
	}
	printf("fake_source: target says: %s\n", msg);
	return 0;
}

/* A hello from another major version of the protocol. */
static void send_hello_version(struct mig_chan *c, uint32_t major)
{
	uint8_t h[MIG_HELLO_LEN];

	mig_hello_encode(h, 42, MIG_ROLE_MAIN, 0);
	le_put32(h + 8, major);
	le_put32(h + 12, 7);
	chan_write(c, h, sizeof(h));
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
	if (!strcmp(kase, "idle")) {
		sleep(60);
		return 0;
	}
	if (!strcmp(kase, "bad-magic")) {
		chan_write(&main_c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n\0\0\0\0\0", MIG_HELLO_LEN);
		return expect_error(&main_c);
	} else if (!strcmp(kase, "garbage")) {
		uint8_t junk[MIG_HELLO_LEN];

		for (unsigned i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)(i * 37 + 11);
		chan_write(&main_c, junk, sizeof(junk));
		return expect_error(&main_c);
	} else if (!strcmp(kase, "wrong-version")) {
		send_hello_version(&main_c, MIG_VERSION_MAJOR + 1);
		return expect_error(&main_c);
	} else if (!strcmp(kase, "data-first")) {
		chan_send_hello(&main_c, 42, MIG_ROLE_DATA, 0);
		return expect_error(&main_c);
	} else if (!strcmp(kase, "busy")) {
		chan_send_hello(&main_c, 42, MIG_ROLE_MAIN, 0);
		send_desc(&main_c, 512);
		return expect_error(&main_c);
	} else if (!strcmp(kase, "tsc-1khz")) {
		/* A guest TSC no host runs: the target refuses the VM before taking data. */
		chan_send_hello(&main_c, 42, MIG_ROLE_MAIN, 0);
		send_desc_sets(&main_c, 512, "vm.tsc_khz=1");
		return expect_error(&main_c);
	} else if (!strncmp(kase, "desc:", 5)) {
		/* A description with config changes (a device, say): the target's answer. */
		chan_send_hello(&main_c, 42, MIG_ROLE_MAIN, 0);
		send_desc_sets(&main_c, 512, kase + 5);
		return expect_error(&main_c);
	} else if (!strncmp(kase, "forge-recover:", 14)) {
		/*
		 * A party that read the session id off the wire opens a recover
		 * connection and claims the decision without the commit secret.
		 */
		uint64_t session = strtoull(kase + 14, NULL, 16);
		uint8_t guess[MIG_SIG_LEN], buf[MIG_ERROR_MAX];
		struct mig_rec_hdr h;
		char err[256], msg[MIG_ERROR_MAX + 1];

		memset(guess, 0x41, sizeof(guess));
		chan_set_timeout(&main_c, 30000);
		chan_send_hello(&main_c, session, MIG_ROLE_RECOVER, 0);
		if (chan_recv_record(&main_c, 0, &h, buf, sizeof(buf), err, sizeof(err)) ||
		    h.type != MIG_REC_RECOVER_STATE) {
			printf("fake_source: no RECOVER_STATE: %s\n", err);
			return 3;
		}
		printf("fake_source: RECOVER_STATE %u\n", le_get32(buf));
		chan_send_record(&main_c, MIG_REC_COMMIT, guess, sizeof(guess), NULL, 0);
		chan_send_record(&main_c, MIG_REC_RELEASE, guess, sizeof(guess), NULL, 0);
		if (chan_recv_record(&main_c, 0, &h, buf, sizeof(buf), err, sizeof(err))) {
			printf("fake_source: the target closed the connection: %s\n", err);
			return 0;
		}
		if (h.type == MIG_REC_ERROR) {
			mig_error_decode(buf, h.len, msg, sizeof(msg), NULL, 0);
			printf("fake_source: target says: %s\n", msg);
			return 0;
		}
		printf("fake_source: the target answered the forged COMMIT with %s\n",
		       mig_rec_name(h.type));
		return 1;
	} else if (!strncmp(kase, "forge-resume:", 13)) {
		/*
		 * The same party opens a resumed session's main (attempt 1): first
		 * with a COMMIT (protocol 5's opening), then, on a second
		 * connection, with a RESUME whose proof is made up. Both refused,
		 * each saying what was wrong.
		 */
		uint64_t session = strtoull(kase + 13, NULL, 16);
		uint8_t guess[MIG_SIG_LEN], buf[MIG_ERROR_MAX];
		uint32_t types[2] = {MIG_REC_COMMIT, MIG_REC_RESUME};
		struct mig_rec_hdr h;
		char err[256], msg[MIG_ERROR_MAX + 1];
		int answered = 0;

		memset(guess, 0x41, sizeof(guess));
		for (int i = 0; i < 2; i++) {
			struct mig_chan c = i ? connect_or_die(argv[1]) : main_c;

			chan_set_timeout(&c, 30000);
			chan_send_hello(&c, session, MIG_ROLE_MAIN_RESUME,
					MIG_HELLO_SET_ATTEMPT(0, 1));
			chan_send_record(&c, types[i], guess, sizeof(guess), NULL, 0);
			if (chan_recv_record(&c, 0, &h, buf, sizeof(buf), err, sizeof(err))) {
				printf("fake_source: %s: the target closed the connection: %s\n",
				       mig_rec_name(types[i]), err);
			} else if (h.type == MIG_REC_ERROR) {
				mig_error_decode(buf, h.len, msg, sizeof(msg), NULL, 0);
				printf("fake_source: %s: target says: %s\n", mig_rec_name(types[i]),
				       msg);
			} else {
				printf("fake_source: the target answered the forged %s with %s\n",
				       mig_rec_name(types[i]), mig_rec_name(h.type));
				answered = 1;
			}
			if (i)
				chan_close(&c);
		}
		return answered;
	} else if (!strcmp(kase, "huge-record")) {
		chan_send_hello(&main_c, 42, MIG_ROLE_MAIN, 0);
		send_rec_hdr(&main_c, MIG_REC_VM_DESC, 0xffffff00u);
		return expect_error(&main_c);
	} else if (!strcmp(kase, "truncated-desc")) {
		chan_send_hello(&main_c, 42, MIG_ROLE_MAIN, 0);
		send_rec_hdr(&main_c, MIG_REC_VM_DESC, 200);
		chan_write(&main_c, "short", 5);
		/* The stream ends there; the answer can still come back. */
		shutdown(main_c.fd, SHUT_WR);
		return expect_error(&main_c);
	} else if (!strcmp(kase, "desc-bad-lengths")) {
		/* 1000 slots announced, 20 bytes of slots and config sent. */
		struct mig_vm_desc d = {.memory = 1 << 28,
					.page_size = MIG_PAGE_SIZE,
					.nslots = 1000,
					.nvcpus = 1,
					.connections = 1,
					.config_len = 10,
					.shard_pages = 512};
		uint8_t hdr[MIG_VM_DESC_LEN];

		mig_vm_desc_encode(hdr, &d);
		chan_send_hello(&main_c, 42, MIG_ROLE_MAIN, 0);
		chan_send_record(&main_c, MIG_REC_VM_DESC, hdr, sizeof(hdr), "01234567890123456789",
				 20);
		return expect_error(&main_c);
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
