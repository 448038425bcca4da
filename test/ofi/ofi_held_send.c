/*
 * ofi_held_send.c - a send to a rank that stopped taking messages, and
 * then died, must not hold back a send to a live rank.
 *
 * libfabric's shm provider completes a send above its inject size only
 * once the receiver has taken it, and hands out completions in the order
 * sends were posted: one to a rank that went quiet held back every later
 * one (ofiwg/libfabric#9853), so survivors stalled after a kill.
 *
 * Run as `xdevrun -n 3 ofi_held_send` over ofi. After a barrier (rooted
 * at rank 0, so rank 0 has spoken with each), rank 1 makes no further xdev
 * call and leaves without a word VICTIM_S later. Rank 0 at once posts a
 * BIG-byte send to rank 1, then sends BIG bytes to rank 2 with xdev_send:
 * that must return XDEV_OK within SEND_BOUND_S, well before rank 1 leaves,
 * and rank 2 gets every byte. The send to rank 1 must then end within
 * END_BOUND_S: XDEV_OK (eager: the provider took it) or XDEV_ERR_PEER
 * once rank 1 is dead. Rank 2 then sends rank 0 one byte and both
 * finalize.
 */
#include <stdlib.h>
#include <unistd.h>

#include "fault_util.h"
#include "xdev.h"

#define VICTIM 1
#define CTX 10
#define TAG 1
#define BIG ((size_t)32 << 10) /* above the provider's inject size, eager */
#define VICTIM_S 3.0
#define SEND_BOUND_S 1.0 /* a correct send takes milliseconds */
#define END_BOUND_S 30.0 /* the peer timeout (3 s) and room for a slow host */

static void sender(xdev_t *dev, void *buf)
{
    xdev_request_t to_victim;
    xdev_status_t st;
    fault_fill(buf, BIG, VICTIM);
    REQUIRE_RC(xdev_isend(dev, buf, BIG, VICTIM, TAG, CTX, &to_victim), XDEV_OK);

    static char live[BIG];
    fault_fill(live, BIG, 2);
    double start = fault_now();
    fault_step("xdev_send to the live rank, behind one to the quiet rank");
    CHECK_RC(xdev_send(dev, live, BIG, 2, TAG, CTX), XDEV_OK);
    double took = fault_now() - start;
    CHECK(took < SEND_BOUND_S, "the send to the live rank took %.2f s: held by the one to rank %d",
          took, VICTIM);

    int done = 0;
    CHECK_RC(fault_wait_for(&to_victim, &st, END_BOUND_S, &done), XDEV_OK);
    REQUIRE(done, "the send to the rank that died never ended"); /* buf is still lent out */
    CHECK(st.error == XDEV_OK || st.error == XDEV_ERR_PEER,
          "the send to the rank that died ended with %d (%s)", st.error, xdev_strerror(st.error));
}

int main(void)
{
    fault_setup("ofi_held_send", 90);
    xdev_t *dev;
    int rank = fault_start(&dev, 3);
    fault_step("barrier");
    REQUIRE_RC(fault_barrier(dev), XDEV_OK);
    if (rank == VICTIM) {
        fault_sleep_ms((int)(VICTIM_S * 1000));
        _exit(0);
    }

    char *buf = malloc(BIG);
    REQUIRE(buf != NULL, "malloc");
    char note = 0;
    xdev_status_t st;
    if (rank == 0) {
        sender(dev, buf);
        CHECK_RC(xdev_recv(dev, &note, 1, 2, TAG, CTX, &st), XDEV_OK);
    } else {
        fault_step("receiving from rank 0");
        CHECK_RC(xdev_recv(dev, buf, BIG, 0, TAG, CTX, &st), XDEV_OK);
        CHECK(st.count == BIG, "received %zu bytes", (size_t)st.count);
        size_t bad = fault_verify(buf, BIG, 2);
        CHECK(bad == (size_t)-1, "byte %zu is wrong", bad);
        CHECK_RC(xdev_send(dev, &note, 1, 0, TAG, CTX), XDEV_OK);
    }
    free(buf);
    fault_step("xdev_finalize");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
