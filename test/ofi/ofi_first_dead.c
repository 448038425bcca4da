/*
 * ofi_first_dead.c - the first rank a process sends to had already died;
 * a rendezvous from a rank that then went quiet and died must not hold
 * back one from a live rank.
 *
 * libfabric's shm provider tries CMA by writing into the first peer it
 * maps. A dead first peer failed that write, CMA went off for every rank
 * that mapped either, and reads then waited in order for their targets'
 * answers: one owed by a dead rank held back all later ones for good.
 *
 * Run as `xdevrun -n 4 ofi_first_dead` over ofi. No rank speaks until
 * rank 0 does. Rank 1 leaves at once. A second later rank 0 sends it a
 * byte (XDEV_OK if the provider took it, or XDEV_ERR_PEER), then tells
 * rank 3 to go. Rank 3 posts a BIG-byte send to rank 0, keeps it moving
 * for PUSH_MS, then makes no call for QUIET_S and leaves. Rank 0 receives
 * it once rank 3 is quiet: XDEV_OK with every byte, or XDEV_ERR_PEER once
 * rank 3 is dead, within END_BOUND_S. Then rank 0 tells rank 2 to go, and
 * rank 2's BIG bytes must all arrive within LIVE_BOUND_S.
 */
#include <stdlib.h>
#include <unistd.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 11
#define TAG 1
#define BIG ((size_t)1 << 20) /* a rendezvous: the payload goes by RMA read */
#define PUSH_MS 200
#define QUIET_S 2.0
#define END_BOUND_S 30.0  /* the peer timeout (3 s) and room for a slow host */
#define LIVE_BOUND_S 10.0 /* a correct transfer takes milliseconds */

static void go(xdev_t *dev, int to)
{
    char b = 1;
    CHECK_RC(xdev_send(dev, &b, 1, to, TAG, CTX), XDEV_OK);
}

/* From any source: a receive that names rank 0 would have this rank map
 * it, and try CMA with it, before rank 0 maps anyone. */
static void wait_go(xdev_t *dev)
{
    char b;
    xdev_status_t st;
    REQUIRE_RC(xdev_recv(dev, &b, 1, XDEV_ANY_SOURCE, TAG, CTX, &st), XDEV_OK);
    REQUIRE(st.source == 0, "a go from rank %d", st.source);
}

static void receiver(xdev_t *dev, char *buf)
{
    xdev_request_t r;
    xdev_status_t st;
    int done = 0;
    char b = 0;
    fault_sleep_ms(1000); /* rank 1 has left by now */
    fault_step("a byte to rank 1, which left before it spoke");
    int rc = xdev_isend(dev, &b, 1, 1, TAG, CTX, &r);
    if (rc == XDEV_OK) {
        CHECK_RC(fault_wait_for(&r, &st, END_BOUND_S, &done), XDEV_OK);
        REQUIRE(done, "the send to rank 1 never ended");
        rc = st.error;
    }
    CHECK(rc == XDEV_OK || rc == XDEV_ERR_PEER, "the send to rank 1 ended with %d (%s)", rc,
          xdev_strerror(rc));

    fault_step("rank 3's message; rank 3 goes quiet, then dies");
    go(dev, 3);
    fault_sleep_ms(PUSH_MS + 500); /* matched, so read, once rank 3 is quiet */
    REQUIRE_RC(xdev_irecv(dev, buf, BIG, 3, TAG, CTX, &r), XDEV_OK);
    CHECK_RC(fault_wait_for(&r, &st, END_BOUND_S, &done), XDEV_OK);
    REQUIRE(done, "the receive from rank 3 never ended"); /* buf is still lent out */
    CHECK(st.error == XDEV_OK || st.error == XDEV_ERR_PEER,
          "the receive from rank 3 ended with %d (%s)", st.error, xdev_strerror(st.error));
    if (st.error == XDEV_OK) {
        size_t bad = fault_verify(buf, BIG, 3);
        CHECK(st.count == BIG && bad == (size_t)-1, "rank 3's message: %zu bytes, byte %zu wrong",
              (size_t)st.count, bad);
    }

    fault_step("rank 2's message, after the one from rank 3");
    go(dev, 2);
    REQUIRE_RC(xdev_irecv(dev, buf, BIG, 2, TAG, CTX, &r), XDEV_OK);
    CHECK_RC(fault_wait_for(&r, &st, LIVE_BOUND_S, &done), XDEV_OK);
    REQUIRE(done, "the receive from live rank 2 took over %.0f s", LIVE_BOUND_S);
    CHECK_RC(st.error, XDEV_OK);
    size_t bad = fault_verify(buf, BIG, 2);
    CHECK(st.count == BIG && bad == (size_t)-1, "rank 2's message: %zu bytes, byte %zu wrong",
          (size_t)st.count, bad);
}

static void quiet_sender(xdev_t *dev, char *buf)
{
    xdev_request_t r;
    xdev_status_t st;
    int flag = 0;
    wait_go(dev);
    fault_fill(buf, BIG, 3);
    REQUIRE_RC(xdev_isend(dev, buf, BIG, 0, TAG, CTX, &r), XDEV_OK);
    double until = fault_now() + PUSH_MS / 1000.0;
    while (!flag && fault_now() < until) {
        CHECK_RC(xdev_test(&r, &flag, &st), XDEV_OK);
        fault_sleep_ms(1);
    }
    fault_sleep_ms((int)(QUIET_S * 1000));
    _exit(0);
}

int main(void)
{
    fault_setup("ofi_first_dead", 90);
    xdev_t *dev;
    int rank = fault_start(&dev, 4);
    if (rank == 1)
        _exit(0);

    char *buf = malloc(BIG);
    REQUIRE(buf != NULL, "malloc");
    if (rank == 0) {
        receiver(dev, buf);
    } else if (rank == 3) {
        quiet_sender(dev, buf);
    } else {
        wait_go(dev);
        fault_fill(buf, BIG, 2);
        fault_step("sending rank 0 BIG bytes");
        CHECK_RC(xdev_send(dev, buf, BIG, 0, TAG, CTX), XDEV_OK);
    }
    free(buf);
    fault_step("xdev_finalize");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
