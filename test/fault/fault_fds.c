/*
 * fault_fds.c - a rank that runs out of file descriptors for a while does
 * not take its peers for dead: once descriptors are free again, what was
 * posted meanwhile completes.
 *
 * Run as `xdevrun -n 2 fault_fds dialer|acceptor`. One rank (rank 0 for
 * "dialer", rank 1 for "acceptor") fills its descriptor table with dup()s
 * right after xdev_init, before either rank has sent anything, so the first
 * contact between them meets EMFILE on that rank: where it would open the
 * connection ("dialer": it sends first) or where it would take it
 * ("acceptor": rank 0 sends first, to a rank that cannot accept). For HOLD_MS the
 * starved rank drives progress; the peer must not be dead to it, and nothing
 * may have failed (over shm, which needs no descriptor, the message may
 * come). Then it closes the dup()s and both messages must
 * arrive whole, both ways, and xdev_finalize succeed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 9
#define TAG 3
#define LEN 100000 /* a rendezvous on every transport: it needs both ways */
#define HOLD_MS 600
#define START_MS 300 /* the starved rank's head start over the first send */

static int hoard[1 << 16];
static int nhoard;

/* Take every free descriptor; true if the table is full (EMFILE). */
static int fill_descriptor_table(void)
{
    while (nhoard < (int)(sizeof hoard / sizeof hoard[0])) {
        int fd = dup(2);
        if (fd < 0)
            return errno == EMFILE;
        hoard[nhoard++] = fd;
    }
    return 0;
}

static void free_descriptor_table(void)
{
    while (nhoard > 0)
        close(hoard[--nhoard]);
}

int main(int argc, char **argv)
{
    fault_setup("fault_fds", 100);
    REQUIRE(argc == 2 && (!strcmp(argv[1], "dialer") || !strcmp(argv[1], "acceptor")),
            "usage: fault_fds dialer|acceptor");
    xdev_t *dev;
    int rank = fault_start(&dev, 2), other = 1 - rank;
    int starved = !strcmp(argv[1], "dialer") ? 0 : 1;
    unsigned char *out = malloc(LEN), *in = malloc(LEN);
    REQUIRE(out && in, "out of memory");
    fault_fill(out, LEN, 40 + (uint32_t)rank);
    xdev_request_t sreq, rreq;
    xdev_status_t st;
    int done;

    /* Only the starved rank's side of the first contact meets EMFILE:
     * its dial ("dialer": the other rank sends only once it has received)
     * or its accept ("acceptor": it sends only once it has descriptors). */
    int dialer = starved == 0, send_first = rank == starved ? dialer : !dialer;
    if (rank == starved) {
        fault_step("filling the descriptor table");
        REQUIRE(fill_descriptor_table(), "dup() stopped before EMFILE (%d taken)", nhoard);
    } else {
        fault_sleep_ms(START_MS);
    }
    REQUIRE_RC(xdev_irecv(dev, in, LEN, other, TAG, CTX, &rreq), XDEV_OK);
    if (send_first)
        REQUIRE_RC(xdev_isend(dev, out, LEN, other, TAG, CTX, &sreq), XDEV_OK);
    done = 0;
    if (rank == starved) {
        /* Over shm the first contact needs no descriptor: the receive may
         * complete, but only with its message. */
        fault_step("driving progress without descriptors");
        CHECK_RC(fault_wait_for(&rreq, &st, HOLD_MS / 1000.0, &done), XDEV_OK);
        CHECK(xdev_peer_state(dev, other) != XDEV_PEER_DEAD,
              "rank %d taken for dead for want of descriptors", other);
        free_descriptor_table();
    }
    if (!done) {
        fault_step("receiving");
        CHECK_RC(fault_wait_for(&rreq, &st, 30, &done), XDEV_OK);
        REQUIRE(done, "the receive is still pending after 30 s");
    }
    CHECK(st.error == XDEV_OK && st.count == LEN, "receive: status.error %d (%s), count %zu",
          st.error, xdev_strerror(st.error), st.count);
    size_t bad = fault_verify(in, LEN, 40 + (uint32_t)other);
    CHECK(st.error || bad == (size_t)-1, "byte %zu is wrong", bad);
    if (!send_first)
        REQUIRE_RC(xdev_isend(dev, out, LEN, other, TAG, CTX, &sreq), XDEV_OK);
    fault_step("sending");
    CHECK_RC(fault_wait_for(&sreq, &st, 30, &done), XDEV_OK);
    REQUIRE(done, "the send is still pending after 30 s");
    CHECK(st.error == XDEV_OK, "send: status.error %d (%s)", st.error, xdev_strerror(st.error));
    CHECK_RC(fault_barrier(dev), XDEV_OK);
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    free(out);
    free(in);
    return fault_finish();
}
