/*
 * fault_die_mid.c - a rank dies while a long message between it and its
 * peer is moving: the survivor's request ends within a bound, the
 * survivor's device learns of the death, and nothing lands in a receive
 * buffer after its receive has ended.
 *
 * `xdevrun -n 2 fault_die_mid sender|receiver [MS]`: rank 1, the victim,
 * is the sender of a BIG-byte message to rank 0, or its receiver. It
 * posts its side, drives progress for MS milliseconds (default 20) so that
 * the transfer is under way, and exits at once (`_exit`: no finalize, as a
 * crash). Over ibv with XDEV_IBV_RNDZ=read (the victim sends) or write (it
 * receives), the survivor's device then has RDMA work requests out on a
 * queue pair that it stops; it may end the request only once their
 * completions are back, and must then fail the peer.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 12
#define TAG_BIG 1
#define TAG_AFTER 2
#define BIG ((size_t)256 << 20)
#define SEED 11
#define PATTERN 0x5a
#define WATCH_S 2.0
#define BOUND_S 60.0

/* Drive the transfer for ms, then go as a crash would: no finalize. */
static void die_after(xdev_request_t *req, int ms)
{
    double end = fault_now() + ms / 1e3;
    int done = 0;
    xdev_status_t st;
    while (fault_now() < end && !done)
        xdev_test(req, &done, &st);
    fault_log("dying, %s", done ? "the transfer done" : "the transfer under way");
    _exit(0);
}

/* The victim's death ended `req`: with the data whole or with XDEV_ERR_PEER. */
static void expect_ended(xdev_request_t *req, xdev_status_t *st, const char *what)
{
    int done;
    CHECK_RC(fault_wait_for(req, st, BOUND_S, &done), XDEV_OK);
    REQUIRE(done, "%s still pending %.0f s after the victim died", what, BOUND_S);
    fault_log("%s ended: %d (%s), %zu bytes", what, st->error, xdev_strerror(st->error),
              st->count);
    CHECK(st->error == XDEV_OK || st->error == XDEV_ERR_PEER, "%s: status.error %d (%s)", what,
          st->error, xdev_strerror(st->error));
}

/* Once the peer is failed, a new receive naming it fails at once. */
static void expect_peer_failed(xdev_t *dev)
{
    xdev_request_t req;
    xdev_status_t st;
    int done;
    CHECK_RC(xdev_irecv(dev, NULL, 0, 1, TAG_AFTER, CTX, &req), XDEV_OK);
    CHECK_RC(fault_wait_for(&req, &st, BOUND_S, &done), XDEV_OK);
    REQUIRE(done, "a receive from the dead rank still pending after %.0f s", BOUND_S);
    CHECK(st.error == XDEV_ERR_PEER, "a receive from the dead rank: %d (%s)", st.error,
          xdev_strerror(st.error));
}

static void survive_as_receiver(xdev_t *dev, unsigned char *buf)
{
    xdev_request_t req;
    xdev_status_t st;
    REQUIRE_RC(xdev_irecv(dev, buf, BIG, 1, TAG_BIG, CTX, &req), XDEV_OK);
    expect_ended(&req, &st, "the receive");
    if (st.error == XDEV_OK) {
        unsigned char *want = malloc(BIG);
        REQUIRE(want, "out of memory");
        fault_fill(want, BIG, SEED);
        CHECK(st.count == BIG && !memcmp(buf, want, BIG), "a receive that ended whole differs");
        free(want);
    }
    memset(buf, PATTERN, BIG);
    double ended = fault_now();
    while (fault_now() < ended + WATCH_S) {
        int flag;
        xdev_iprobe(dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX, &flag, &st); /* progress */
        fault_sleep_ms(1);
    }
    for (size_t i = 0; i < BIG; i++)
        if (buf[i] != PATTERN) {
            fault_fail(__FILE__, __LINE__, "byte %zu changed after the receive ended", i);
            break;
        }
}

int main(int argc, char **argv)
{
    REQUIRE(argc >= 2 && (!strcmp(argv[1], "sender") || !strcmp(argv[1], "receiver")),
            "usage: fault_die_mid sender|receiver [MS]");
    bool victim_sends = !strcmp(argv[1], "sender");
    int ms = argc > 2 ? atoi(argv[2]) : 20;
    fault_setup("fault_die_mid", 110);
    xdev_t *dev;
    int rank = fault_start(&dev, 2);
    unsigned char *buf = malloc(BIG);
    REQUIRE(buf, "out of memory");
    fault_fill(buf, BIG, SEED);
    REQUIRE_RC(fault_barrier(dev), XDEV_OK); /* connected both ways */
    xdev_request_t req;
    xdev_status_t st;
    if (rank == 1 && victim_sends) {
        REQUIRE_RC(xdev_isend(dev, buf, BIG, 0, TAG_BIG, CTX, &req), XDEV_OK);
        die_after(&req, ms);
    } else if (rank == 1) {
        REQUIRE_RC(xdev_irecv(dev, buf, BIG, 0, TAG_BIG, CTX, &req), XDEV_OK);
        die_after(&req, ms);
    } else if (victim_sends) {
        survive_as_receiver(dev, buf);
    } else {
        REQUIRE_RC(xdev_isend(dev, buf, BIG, 1, TAG_BIG, CTX, &req), XDEV_OK);
        expect_ended(&req, &st, "the send");
    }
    expect_peer_failed(dev);
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    free(buf);
    return fault_finish();
}
