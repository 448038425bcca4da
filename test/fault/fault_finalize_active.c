/*
 * fault_finalize_active.c - xdev_finalize with requests still active.
 *
 *   fault_finalize_active active   (XDEV_FINALIZE_TIMEOUT_MS=500, -n 2)
 *     Each rank posts a receive that never matches; rank 0 also posts an
 *     8 MiB (rendezvous) isend to rank 1 that rank 1 never receives.
 *     xdev_finalize must return XDEV_ERR_CANCELED in under 5 s, and the
 *     receive buffer (sentinel-filled) must be untouched afterwards.
 *
 *   fault_finalize_active clean    (-n 2)
 *     Every request completed and was reaped before finalize: eager sends,
 *     a receive, and a message that rank 0 sends and finalizes right away
 *     while rank 1 is still asleep (finalize must not lose data already
 *     sent). Then a receive naming rank 0, which left, must fail with
 *     XDEV_ERR_PEER. xdev_finalize must return XDEV_OK on every rank.
 *
 *   fault_finalize_active unread   (XDEV_FINALIZE_TIMEOUT_MS=300, -n 2)
 *     Rank 1 sends NUNREAD messages and finalizes while rank 0 makes no
 *     call, so its finalize gives up waiting and it exits. Rank 0 then
 *     sends to it (over tcp the connection answers with a reset) before
 *     it receives: every message must still arrive whole, the rendezvous
 *     send must fail with XDEV_ERR_PEER.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 4
#define BIG (8u << 20)
#define RBUF 65536
#define EAGER 1000
#define FINALIZE_BOUND_S 5.0
#define NUNREAD 5
#define UNREAD_QUIET_MS 1500 /* well past rank 1's finalize timeout */

static int run_active(xdev_t *dev, int rank)
{
    static unsigned char rbuf[RBUF];
    unsigned char *big = NULL;
    xdev_request_t rreq, sreq;
    double t0, dt;
    int rc;

    memset(rbuf, 0xC3, sizeof rbuf);
    /* A receive nobody will ever match (tag 99 is never sent). */
    REQUIRE_RC(xdev_irecv(dev, rbuf, sizeof rbuf, 1 - rank, 99, CTX, &rreq), XDEV_OK);
    if (rank == 0) {
        big = malloc(BIG);
        REQUIRE(big != NULL, "malloc");
        fault_fill(big, BIG, 5);
        /* Rank 1 never posts a receive for tag 5. */
        REQUIRE_RC(xdev_isend(dev, big, BIG, 1, 5, CTX, &sreq), XDEV_OK);
    }
    /* Let the rendezvous start reach rank 1. Then rank 0 finalizes while
     * rank 1 is alive but idle (its send can only time out), and rank 1
     * finalizes after rank 0 has gone (its receive's peer left). Both
     * still hold an unreaped request, so both must report XDEV_ERR_CANCELED. */
    REQUIRE_RC(fault_barrier(dev), XDEV_OK);
    fault_sleep_ms(rank == 0 ? 100 : 1500);

    fault_step("xdev_finalize with active requests");
    t0 = fault_now();
    rc = xdev_finalize(dev);
    dt = fault_now() - t0;
    fault_log("xdev_finalize returned %d (%s) after %.3f s", rc, xdev_strerror(rc), dt);
    CHECK(rc == XDEV_ERR_CANCELED, "xdev_finalize with active requests returned %d (%s), want XDEV_ERR_CANCELED",
          rc, xdev_strerror(rc));
    CHECK(dt < FINALIZE_BOUND_S, "xdev_finalize took %.3f s (bound %.1f s, timeout 500 ms)", dt,
          FINALIZE_BOUND_S);

    /* The abandoned receive buffer is never touched: not now, not later. */
    fault_sleep_ms(300);
    for (size_t i = 0; i < sizeof rbuf; i++)
        if (rbuf[i] != 0xC3) {
            fault_fail(__FILE__, __LINE__, "abandoned receive buffer written at byte %zu (0x%02x)", i, rbuf[i]);
            break;
        }
    /* The request storage may be reused by the caller: scribble over it. */
    memset(&rreq, 0xEE, sizeof rreq);
    if (big) {
        memset(&sreq, 0xEE, sizeof sreq);
        free(big);
    }
    return 0;
}

static int run_clean(xdev_t *dev, int rank)
{
    static unsigned char buf[EAGER];
    xdev_request_t req;
    xdev_status_t st;
    double t0, dt;
    int rc;

    if (rank == 0) {
        /* Eager isend, completed and reaped. */
        fault_fill(buf, EAGER, 1);
        REQUIRE_RC(xdev_isend(dev, buf, EAGER, 1, 1, CTX, &req), XDEV_OK);
        REQUIRE_RC(xdev_wait(&req, &st), XDEV_OK);
        CHECK(st.error == XDEV_OK, "eager isend status.error %d", st.error);
        /* A receive, completed and reaped. */
        REQUIRE_RC(xdev_irecv(dev, buf, EAGER, 1, 2, CTX, &req), XDEV_OK);
        REQUIRE_RC(xdev_wait(&req, &st), XDEV_OK);
        CHECK(st.error == XDEV_OK && st.count == EAGER, "receive status.error %d count %zu", st.error, st.count);
        CHECK(fault_verify(buf, EAGER, 2) == (size_t)-1, "received data wrong");
        REQUIRE_RC(fault_barrier(dev), XDEV_OK);
        /* Send and leave at once: rank 1 is asleep and receives it later. */
        fault_fill(buf, EAGER, 3);
        REQUIRE_RC(xdev_isend(dev, buf, EAGER, 1, 3, CTX, &req), XDEV_OK);
        REQUIRE_RC(xdev_wait(&req, &st), XDEV_OK);
        CHECK(st.error == XDEV_OK, "last eager isend status.error %d", st.error);
    } else {
        REQUIRE_RC(xdev_irecv(dev, buf, EAGER, 0, 1, CTX, &req), XDEV_OK);
        REQUIRE_RC(xdev_wait(&req, &st), XDEV_OK);
        CHECK(st.error == XDEV_OK && st.count == EAGER, "receive status.error %d count %zu", st.error, st.count);
        CHECK(fault_verify(buf, EAGER, 1) == (size_t)-1, "received data wrong");
        fault_fill(buf, EAGER, 2);
        REQUIRE_RC(xdev_isend(dev, buf, EAGER, 0, 2, CTX, &req), XDEV_OK);
        REQUIRE_RC(xdev_wait(&req, &st), XDEV_OK);
        CHECK(st.error == XDEV_OK, "eager isend status.error %d", st.error);
        REQUIRE_RC(fault_barrier(dev), XDEV_OK);
        fault_sleep_ms(500); /* rank 0 is finalizing meanwhile */
        memset(buf, 0, sizeof buf);
        fault_step("receive a message whose sender already finalized");
        rc = xdev_recv(dev, buf, EAGER, 0, 3, CTX, &st);
        CHECK(rc == XDEV_OK && st.error == XDEV_OK && st.count == EAGER,
              "message sent before the sender's finalize: rc %d (%s) error %d count %zu", rc,
              xdev_strerror(rc), st.error, st.count);
        CHECK(fault_verify(buf, EAGER, 3) == (size_t)-1, "message sent before finalize arrived corrupted");
        /* It left: a receive naming it fails, as one naming a dead rank. */
        fault_step("receive naming a rank that finalized");
        t0 = fault_now();
        rc = xdev_recv(dev, buf, EAGER, 0, 4, CTX, &st);
        dt = fault_now() - t0;
        CHECK(rc == XDEV_ERR_PEER && st.error == XDEV_ERR_PEER && st.count == 0,
              "receive naming a rank that finalized: rc %d (%s) error %d count %zu", rc,
              xdev_strerror(rc), st.error, st.count);
        CHECK(dt < FINALIZE_BOUND_S, "that receive failed only after %.3f s", dt);
        CHECK(xdev_peer_state(dev, 0) == XDEV_PEER_DEAD, "a rank that finalized is %d, not dead",
              xdev_peer_state(dev, 0));
    }

    fault_step("xdev_finalize with nothing active");
    t0 = fault_now();
    rc = xdev_finalize(dev);
    dt = fault_now() - t0;
    fault_log("xdev_finalize returned %d (%s) after %.3f s", rc, xdev_strerror(rc), dt);
    CHECK(rc == XDEV_OK, "xdev_finalize with every request reaped returned %d (%s), want XDEV_OK", rc,
          xdev_strerror(rc));
    CHECK(dt < FINALIZE_BOUND_S, "xdev_finalize took %.3f s", dt);
    return 0;
}

static int run_unread(xdev_t *dev, int rank)
{
    static unsigned char buf[EAGER];
    xdev_status_t st;
    int rc;
    if (rank == 1) {
        for (int i = 0; i < NUNREAD; i++) {
            fault_fill(buf, EAGER, 10 + (uint32_t)i);
            REQUIRE_RC(xdev_send(dev, buf, EAGER, 0, 10 + i, CTX), XDEV_OK);
        }
        fault_step("xdev_finalize while rank 0 makes no call");
        CHECK_RC(xdev_finalize(dev), XDEV_OK);
        return 0;
    }
    fault_step("no call while rank 1 finalizes and leaves");
    fault_sleep_ms(UNREAD_QUIET_MS);
    unsigned char *big = calloc(1, BIG);
    REQUIRE(big, "calloc");
    xdev_request_t small_req, big_req;
    fault_step("sends to the rank that left, before receiving");
    REQUIRE_RC(xdev_isend(dev, buf, 8, 1, 90, CTX, &small_req), XDEV_OK);
    REQUIRE_RC(xdev_isend(dev, big, BIG, 1, 91, CTX, &big_req), XDEV_OK);
    fault_step("receive what it sent before it finalized");
    for (int i = 0; i < NUNREAD; i++) {
        memset(buf, 0, sizeof buf);
        rc = xdev_recv(dev, buf, EAGER, 1, 10 + i, CTX, &st);
        CHECK(rc == XDEV_OK && st.count == EAGER &&
                  fault_verify(buf, EAGER, 10 + (uint32_t)i) == (size_t)-1,
              "message %d of %d, sent before its sender finalized: rc %d (%s) count %zu", i,
              NUNREAD, rc, xdev_strerror(rc), st.count);
    }
    REQUIRE_RC(xdev_wait(&small_req, &st), XDEV_OK);
    CHECK(st.error == XDEV_OK || st.error == XDEV_ERR_PEER, "eager send: error %d", st.error);
    REQUIRE_RC(xdev_wait(&big_req, &st), XDEV_OK);
    CHECK(st.error == XDEV_ERR_PEER, "rendezvous send to a rank that left: error %d (%s)",
          st.error, xdev_strerror(st.error));
    free(big);
    fault_step("xdev_finalize");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "active";
    xdev_t *dev = NULL;
    int rank;

    fault_setup(!strcmp(mode, "clean")    ? "fault-finalize-clean"
                : !strcmp(mode, "unread") ? "fault-finalize-unread"
                                          : "fault-finalize-active",
                90);
    rank = fault_start(&dev, 2);
    REQUIRE_RC(fault_barrier(dev), XDEV_OK);

    if (strcmp(mode, "clean") == 0) run_clean(dev, rank);
    else if (strcmp(mode, "unread") == 0) run_unread(dev, rank);
    else run_active(dev, rank);
    return fault_finish();
}
