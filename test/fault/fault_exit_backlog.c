/*
 * fault_exit_backlog.c - ranks that send and exit while their receiver is
 * not looking: every message they sent is delivered, none fails.
 *
 * Run as `xdevrun -n N fault_exit_backlog` (N >= 2). Each rank but 0 first
 * swaps a message with rank 0, so every connection is up. Rank 0 then arms
 * its device (xdev_arm) and sleeps without a call into it, while each of
 * the others sends it COUNT messages, finalizes and exits. Only then does
 * rank 0 post its receives, and each must complete with XDEV_OK and the
 * bytes that were sent.
 *
 * Why: a sender's exit can be seen (its pidfd) before all it sent has been
 * read. Over ibv at 8 ranks with XDEV_IBV_RX_BUFS=1024 (a 64-credit window
 * each, enough for the swap and COUNT messages, so that no sender waits
 * for rank 0 before it exits), 336 receive completions wait, more than
 * one poll takes; a transport that judged an exited peer gone before
 * reading its CQ to the end dropped the rest, and their receives failed
 * with XDEV_ERR_PEER.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 9
#define COUNT 48 /* within an ibv peer's window of 64, with the swap's */
#define SIZE 64
#define SLEEP_MS 3000 /* rank 0 looks away this long */
#define QUIET_MS 500  /* the senders wait this long for it to look away */

static uint32_t seed_of(int src, int i)
{
    return (uint32_t)src * 1000u + (uint32_t)i;
}

static void sender(xdev_t *dev, int rank)
{
    unsigned char hello[SIZE];
    fault_step("swap with rank 0");
    CHECK_RC(xdev_recv(dev, hello, sizeof hello, 0, COUNT, CTX, NULL), XDEV_OK);
    CHECK_RC(xdev_send(dev, hello, sizeof hello, 0, COUNT, CTX), XDEV_OK);
    fault_sleep_ms(QUIET_MS);

    fault_step("sending while rank 0 looks away");
    static unsigned char msg[COUNT][SIZE];
    xdev_request_t req[COUNT];
    for (int i = 0; i < COUNT; i++) {
        fault_fill(msg[i], SIZE, seed_of(rank, i));
        REQUIRE_RC(xdev_isend(dev, msg[i], SIZE, 0, i, CTX, &req[i]), XDEV_OK);
    }
    for (int i = 0; i < COUNT; i++) {
        xdev_status_t st;
        CHECK_RC(xdev_wait(&req[i], &st), XDEV_OK);
        CHECK(st.error == XDEV_OK, "send %d: status.error %d", i, st.error);
    }
}

static void receiver(xdev_t *dev, int size)
{
    fault_step("swap with every rank");
    unsigned char hello[SIZE] = { 0 };
    for (int src = 1; src < size; src++) {
        xdev_request_t sreq;
        REQUIRE_RC(xdev_isend(dev, hello, sizeof hello, src, COUNT, CTX, &sreq), XDEV_OK);
        CHECK_RC(xdev_recv(dev, hello, sizeof hello, src, COUNT, CTX, NULL), XDEV_OK);
        CHECK_RC(xdev_wait(&sreq, NULL), XDEV_OK);
    }

    fault_step("arming, then looking away");
    REQUIRE(xdev_fd(dev) >= 0, "xdev_fd failed");
    int rc;
    while ((rc = xdev_arm(dev)) == XDEV_ERR_BUSY)
        xdev_progress(dev);
    CHECK_RC(rc, XDEV_OK);
    fault_sleep_ms(SLEEP_MS);

    fault_step("receiving what the gone ranks sent");
    size_t n = (size_t)(size - 1) * COUNT;
    unsigned char(*buf)[SIZE] = malloc(n * SIZE);
    xdev_request_t *req = malloc(n * sizeof *req);
    REQUIRE(buf && req, "out of memory");
    for (int src = 1; src < size; src++)
        for (int i = 0; i < COUNT; i++) {
            size_t k = (size_t)(src - 1) * COUNT + (size_t)i;
            REQUIRE_RC(xdev_irecv(dev, buf[k], SIZE, src, i, CTX, &req[k]), XDEV_OK);
        }
    int lost = 0;
    for (int src = 1; src < size; src++)
        for (int i = 0; i < COUNT; i++) {
            size_t k = (size_t)(src - 1) * COUNT + (size_t)i;
            xdev_status_t st;
            int done;
            CHECK_RC(fault_wait_for(&req[k], &st, 60.0, &done), XDEV_OK);
            REQUIRE(done, "message %d from rank %d still pending after 60 s", i, src);
            if (st.error != XDEV_OK) {
                lost++;
                continue;
            }
            CHECK(st.count == SIZE, "message %d from rank %d: %zu bytes", i, src, st.count);
            CHECK(fault_verify(buf[k], SIZE, seed_of(src, i)) == (size_t)-1,
                  "message %d from rank %d: wrong bytes", i, src);
        }
    CHECK(lost == 0, "%d of %zu messages from ranks that finalized and exited failed", lost, n);
    free(buf);
    free(req);
}

int main(void)
{
    fault_setup("fault_exit_backlog", 120);
    xdev_t *dev;
    fault_step("xdev_init");
    REQUIRE_RC(xdev_init(NULL, &dev), XDEV_OK);
    int rank = xdev_rank(dev), size = xdev_size(dev);
    REQUIRE(size >= 2, "needs 2 ranks or more, not %d", size);
    if (rank == 0)
        receiver(dev, size);
    else
        sender(dev, rank);
    fault_step("xdev_finalize");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
