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
 * desc-config-nul describes a VM whose config text has a NUL byte in a
 * value (the target must refuse it, not cut the value there). On a UNIX
 * socket, the local handover's RAM_FD that is no sealed memfd of the VM's
 * size: ramfd-devzero (/dev/zero), ramfd-size (a sealed memfd of half the
 * size); each is refused before the VM exists and the target keeps
 * waiting.
 *
 * With FAKE_SOURCE_TLS=CERT,KEY,CA in the environment each connection
 * runs a TLS handshake first, as a source of that CA does.
 *
 * The orderings of target_failed.sh fix in which order a source's
 * connections end around a target that then fails (ordering() below):
 * create-fails, desc-then-close, caps-then-close, data-end-first,
 * main-end-first.
 *
 * desc:SETS sends a description whose config has SETS (section.key=value
 * separated by ';', e.g. "disk.path=/srv/d.img") and prints the answer.
 *
 * usage: fake_source HOST:PORT CASE
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <zstd.h>

#include "channel.h"
#include "codec.h"
#include "config.h"
#include "tls.h"

/* FAKE_SOURCE_TLS=CERT,KEY,CA: the client context, made once; NULL: plain. */
static struct tls_ctx *tls_client(void)
{
	static struct tls_ctx *t;
	static bool made;
	static char cert[1024], key[1024], ca[1024];
	struct tls_files f = {cert, key, ca};
	const char *env = getenv("FAKE_SOURCE_TLS");
	char err[256] = "expected CERT,KEY,CA";

	if (made || !env)
		return t;
	made = true;
	if (sscanf(env, "%1023[^,],%1023[^,],%1023s", cert, key, ca) != 3 ||
	    tls_ctx_new(&t, false, &f, err, sizeof(err)) || !t) {
		fprintf(stderr, "fake_source: FAKE_SOURCE_TLS: %s\n", err);
		exit(1);
	}
	return t;
}

static struct mig_chan connect_or_die(const char *addr)
{
	struct mig_chan c;
	char err[256];
	int ret;

	for (int i = 0; i < 100; i++) {
		if (chan_connect(&c, addr, 2000, err, sizeof(err)) == 0) {
			ret = tls_client()
				  ? chan_start_tls(&c, tls_client(), addr, err, sizeof(err))
				  : 0;
			if (!ret)
				return c;
			/* A refusal before TLS is the target's answer; any other failure is not. */
			if (ret == -ECONNREFUSED) {
				printf("fake_source: target says: %s\n", err);
				exit(0);
			}
			fprintf(stderr, "fake_source: %s\n", err);
			exit(3);
		}
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
 * A valid VM_DESC for a 256 MiB, 1 vCPU VM in one slot, `connections` data
 * connections (0: a local handover), its config changed by `sets`:
 * "section.key=value" assignments separated by ';' (e.g. "vm.tsc_khz=1": a
 * guest TSC no host runs); nul: a NUL byte in the VM's name in the config text.
 */
static void send_desc_full(struct mig_chan *c, uint32_t shard_pages, const char *sets,
			   uint32_t connections, bool nul)
{
	struct vm_config cfg;
	char err[256], *list = strdup(sets), *save = NULL;
	uint8_t hdr[MIG_VM_DESC_LEN], body[MIG_SLOT_DESC_LEN + 16384];
	struct mig_slot_desc slot = {.gpa = 0, .size = 256u << 20};
	struct mig_vm_desc d = {.memory = 256u << 20,
				.page_size = MIG_PAGE_SIZE,
				.nslots = 1,
				.nvcpus = 1,
				.connections = connections,
				.shard_pages = shard_pages};
	char *text = (char *)body + MIG_SLOT_DESC_LEN, *name;
	int len;

	config_defaults(&cfg);
	if (!list || config_set(&cfg, "vm.memory=256M", err, sizeof(err)) ||
	    (nul && config_set(&cfg, "vm.name=fakevm-with-a-tail", err, sizeof(err))) ||
	    (!connections && config_set(&cfg, "vm.memory_backend=memfd", err, sizeof(err))))
		exit(1);
	for (char *one = strtok_r(list, ";", &save); one; one = strtok_r(NULL, ";", &save))
		if (config_set(&cfg, one, err, sizeof(err))) {
			fprintf(stderr, "fake_source: %s\n", err);
			exit(1);
		}
	free(list);
	len = config_format(&cfg, text, sizeof(body) - MIG_SLOT_DESC_LEN);
	if (len < 0)
		exit(1);
	/* "fakevm\0with-a-tail": a reader that stops at the NUL takes "fakevm". */
	name = nul ? strstr(text, "fakevm-with") : NULL;
	if (name)
		name[6] = '\0';
	d.config_len = (uint32_t)len;
	mig_vm_desc_encode(hdr, &d);
	mig_slot_desc_encode(body, &slot);
	chan_send_record(c, MIG_REC_VM_DESC, hdr, sizeof(hdr), body,
			 MIG_SLOT_DESC_LEN + (uint32_t)len);
}

static void send_desc_sets(struct mig_chan *c, uint32_t shard_pages, const char *sets)
{
	send_desc_full(c, shard_pages, sets, 1, false);
}

static void send_desc(struct mig_chan *c, uint32_t shard_pages)
{
	send_desc_sets(c, shard_pages, "vm.tsc_khz=0");
}

/* A local handover's RAM_FD for 256 MiB carrying fd. */
static void send_ram_fd(struct mig_chan *c, int fd)
{
	struct mig_ram_fd r = {.size = 256u << 20, .nfds = 1};
	uint8_t b[MIG_RAM_FD_LEN];

	mig_ram_fd_encode(b, &r);
	chan_send_record_fds(c, MIG_REC_RAM_FD, b, sizeof(b), &fd, 1);
}

/* ramfd-devzero: /dev/zero; ramfd-size: a memfd of 128 MiB, sealed as a real one is. */
static int bad_ram_fd(const char *kase)
{
	int fd;

	if (!strcmp(kase, "ramfd-devzero"))
		return open("/dev/zero", O_RDWR | O_CLOEXEC);
	fd = memfd_create("fake-guest-ram", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, 128u << 20) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		exit(1);
	return fd;
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

#define ORDERING_WAIT_MS 120000 /* a bound, for a target held at a test step meanwhile */

/* The target's next record on main, of type `want`; 3 (printed) if another or none. */
static int recv_main(struct mig_chan *c, uint32_t want, void *buf, size_t cap, uint32_t *len)
{
	struct mig_rec_hdr h;
	char err[256];

	chan_set_role(c, MIG_ROLE_MAIN, MIG_DIR_T2S);
	chan_set_timeout(c, ORDERING_WAIT_MS);
	if (chan_recv_record(c, 0, &h, buf, cap, err, sizeof(err))) {
		fprintf(stderr, "fake_source: no %s from the target: %s\n", mig_rec_name(want),
			err);
		return 3;
	}
	if (h.type != want) {
		fprintf(stderr, "fake_source: expected %s, got %s\n", mig_rec_name(want),
			mig_rec_name(h.type));
		return 3;
	}
	if (len)
		*len = h.len;
	return 0;
}

/* The target's ERROR on main, printed as expect_error() does. */
static int error_on_main(struct mig_chan *c)
{
	uint8_t buf[1024];
	char msg[512], err[256];
	uint32_t len;

	if (recv_main(c, MIG_REC_ERROR, buf, sizeof(buf), &len))
		return 3;
	if (mig_error_decode(buf, len, msg, sizeof(msg), err, sizeof(err))) {
		fprintf(stderr, "fake_source: a bad ERROR: %s\n", err);
		return 3;
	}
	printf("fake_source: target says: %s\n", msg);
	return 0;
}

/*
 * A VM the target can create (or, create-fails, one no host runs), whose
 * source then ends in a fixed order, never left to timing:
 *   create-fails     the description asks for a 1 kHz guest TSC: the target
 *                    fails creating the VM and answers ERROR
 *   desc-then-close  main closes right after its VM_DESC, while the
 *                    target's gate still holds it
 *   caps-then-close  main closes once CAPS came, no data connection opened
 *   data-end-first   once the target's receiver runs (its SYNC_ACK came),
 *                    data 0 ends inside a PAGES record; main stays open and
 *                    the target's ERROR is read from it
 *   main-end-first   once the receiver runs, main closes; data 0 stays open
 *                    until the target closes it
 * A target held at a test step (target_failed.sh) answers late: every wait
 * here is ORDERING_WAIT_MS.
 */
static int ordering(const char *addr, const char *kase, struct mig_chan *main_c)
{
	struct mig_chan data_c, urgent_c;
	uint8_t buf[1024], sync[MIG_SYNC_LEN];
	int ret;

	chan_send_hello(main_c, 42, MIG_ROLE_MAIN, 0);
	send_desc_sets(main_c, 512,
		       !strcmp(kase, "create-fails") ? "vm.tsc_khz=1" : "vm.tsc_khz=0");
	if (!strcmp(kase, "create-fails"))
		return error_on_main(main_c);
	if (!strcmp(kase, "desc-then-close")) {
		chan_close(main_c);
		printf("fake_source: closed main after VM_DESC\n");
		return 0;
	}
	ret = recv_main(main_c, MIG_REC_CAPS, buf, sizeof(buf), NULL);
	if (ret)
		return ret;
	if (!strcmp(kase, "caps-then-close")) {
		chan_close(main_c);
		printf("fake_source: closed main after CAPS\n");
		return 0;
	}
	data_c = connect_or_die(addr);
	chan_send_hello(&data_c, 42, MIG_ROLE_DATA, 0);
	urgent_c = connect_or_die(addr);
	chan_send_hello(&urgent_c, 42, MIG_ROLE_URGENT, 0);
	/* SYNC 1 on data 0: its ACK on main says the target's receiver runs. */
	mig_sync_encode(sync, &(struct mig_sync){.seq = 1});
	chan_send_record(&data_c, MIG_REC_SYNC, sync, sizeof(sync), NULL, 0);
	ret = recv_main(main_c, MIG_REC_SYNC_ACK, buf, sizeof(buf), NULL);
	if (ret)
		return ret;
	if (!strcmp(kase, "data-end-first")) {
		send_pages(&data_c, "pages-truncated");
		chan_close(&data_c);
		return error_on_main(main_c);
	}
	chan_close(main_c);
	chan_set_timeout(&data_c, ORDERING_WAIT_MS);
	ret = chan_read(&data_c, buf, 1);
	if (!ret || ret == -ETIMEDOUT) {
		fprintf(stderr, "fake_source: the target kept data connection 0 open\n");
		return 3;
	}
	printf("fake_source: the target closed data connection 0\n");
	chan_close(&urgent_c);
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
	signal(SIGPIPE, SIG_IGN); /* as vmm: a target's reset is an error, not a signal */
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
	} else if (!strcmp(kase, "desc-config-nul")) {
		chan_send_hello(&main_c, 42, MIG_ROLE_MAIN, 0);
		send_desc_full(&main_c, 512, "vm.tsc_khz=0", 1, true);
		return expect_error(&main_c);
	} else if (!strncmp(kase, "ramfd-", 6)) {
		int fd = bad_ram_fd(kase);

		if (fd < 0)
			return 1;
		chan_send_hello(&main_c, 42, MIG_ROLE_MAIN, 0);
		send_desc_full(&main_c, 512, "vm.tsc_khz=0", 0, false);
		send_ram_fd(&main_c, fd);
		close(fd);
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
	} else if (!strcmp(kase, "create-fails") || !strcmp(kase, "desc-then-close") ||
		   !strcmp(kase, "caps-then-close") || !strcmp(kase, "data-end-first") ||
		   !strcmp(kase, "main-end-first")) {
		return ordering(argv[1], kase, &main_c);
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
