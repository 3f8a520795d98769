/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_target: a migration target that plays along until the postcopy
 * switchover is acknowledged and then asks for a page outside the guest,
 * so a test can check that the source refuses it and keeps its memory.
 * The source must migrate with --mode postcopy --postcopy-after 0 (no
 * precopy pass, so no SYNC to answer). Records are read through the
 * record table and built with the codec (codec.h).
 *
 * With "busy" it plays a target whose gate is full instead: every
 * connection gets, at its accept, a plain ERROR record "busy: ..." and is
 * closed, before anything is read (as the gate refuses one it has no slot
 * for, TLS or not), until it is killed.
 *
 * usage: fake_target HOST:PORT [busy]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"
#include "codec.h"

static void *drain(void *arg)
{
	struct mig_chan *c = arg;
	char buf[65536];

	while (recv(c->fd, buf, sizeof(buf), 0) > 0)
		;
	return NULL;
}

static void die(const char *what)
{
	fprintf(stderr, "fake_target: %s\n", what);
	exit(1);
}

/* Every connection refused at its accept, as a full gate does. */
static _Noreturn void busy(int lfd)
{
	const char *why = "busy: too many connections in their handshake (fake_target)";
	char err[256];

	printf("fake_target: busy\n");
	fflush(stdout);
	for (;;) {
		struct mig_chan c;

		if (chan_accept(lfd, &c, 0, err, sizeof(err)))
			continue;
		chan_set_timeout(&c, 1000);
		chan_send_record(&c, MIG_REC_ERROR, why, mig_error_len(why), NULL, 0);
		chan_close(&c);
	}
}

int main(int argc, char **argv)
{
	struct mig_chan main_c = {.fd = -1}, urgent = {.fd = -1}, data[16];
	struct mig_vm_desc_view desc;
	struct mig_hello h;
	struct mig_rec_hdr rh;
	char err[256];
	uint8_t *p;
	unsigned ndata = 0;
	int lfd;

	if (argc != 2 && (argc != 3 || strcmp(argv[2], "busy")))
		die("usage: fake_target HOST:PORT [busy]");
	if (chan_listen(argv[1], &lfd, err, sizeof(err)))
		die(err);
	if (argc == 3)
		busy(lfd);
	if (chan_accept(lfd, &main_c, 30000, err, sizeof(err)) ||
	    chan_recv_hello(&main_c, &h, err, sizeof(err)))
		die(err);
	if (chan_recv_rec(&main_c, 0, &rh, err, sizeof(err)))
		die(err);
	if (rh.type != MIG_REC_VM_DESC)
		die("no VM_DESC");
	p = malloc(rh.len);
	if (!p || chan_read(&main_c, p, rh.len))
		die("short VM_DESC");
	if (mig_vm_desc_decode(p, rh.len, &(struct mig_desc_limits){.max_connections = 16}, &desc,
			       err, sizeof(err)))
		die(err);
	{
		/* The answer to VM_DESC: this fake plays a target that can do postcopy. */
		uint8_t caps[MIG_CAPS_LEN];

		mig_caps_encode(caps, MIG_CAPS_POSTCOPY, NULL);
		chan_send_record(&main_c, MIG_REC_CAPS, caps, sizeof(caps), NULL, 0);
	}
	while (ndata < desc.d.connections || urgent.fd < 0) {
		struct mig_chan c;
		pthread_t t;

		if (chan_accept(lfd, &c, 10000, err, sizeof(err)) ||
		    chan_recv_hello(&c, &h, err, sizeof(err)))
			die(err);
		if (h.role == MIG_ROLE_URGENT) {
			urgent = c;
			continue;
		}
		data[ndata] = c;
		pthread_create(&t, NULL, drain, &data[ndata]);
		ndata++;
	}
	/* Main: everything up to END, then acknowledge as if the VM runs here. */
	free(p);
	for (;;) {
		if (chan_recv_rec(&main_c, 0, &rh, err, sizeof(err)))
			die(err);
		p = malloc(rh.len + 1);
		if (!p || chan_read(&main_c, p, rh.len))
			die("short record");
		free(p);
		if (rh.type == MIG_REC_POSTCOPY)
			chan_send_record(&main_c, MIG_REC_POSTCOPY_ARMED, NULL, 0, NULL, 0);
		if (rh.type == MIG_REC_END)
			break;
	}
	{
		uint8_t ack[MIG_COMMITTED_LEN], prep[MIG_PREPARED_LEN], rq[MIG_PAGE_REQ_LEN];

		/* The commit as a real target plays it: PREPARED, the source's COMMIT, COMMITTED.
		 */
		mig_prepared_encode(prep, &(struct mig_prepared){0});
		chan_send_record(&main_c, MIG_REC_PREPARED, prep, sizeof(prep), NULL, 0);
		uint8_t proof[MIG_SIG_LEN];

		if (chan_recv_rec(&main_c, 0, &rh, err, sizeof(err)) || rh.type != MIG_REC_COMMIT ||
		    chan_read(&main_c, proof, sizeof(proof)))
			die("expected COMMIT");
		mig_committed_encode(ack, &(struct mig_committed){0});
		mig_page_req_encode(rq, &(struct mig_page_req){.slot = 9999, .page = 0});
		chan_send_record(&main_c, MIG_REC_COMMITTED, ack, sizeof(ack), NULL, 0);
		chan_send_record(&urgent, MIG_REC_PAGE_REQ, rq, sizeof(rq), NULL, 0);
	}
	sleep(2);
	return 0;
}
