/*
 * fault_wildcard_silent.c - with XDEV_FLAG_WILDCARD_FAILS, the death of a
 * rank that nobody ever talked to fails the XDEV_ANY_SOURCE receives posted
 * then, over every transport.
 *
 * Run as `xdevrun -n 3 fault_wildcard_silent` with XDEV_WILDCARD_FAILS=1
 * and a short XDEV_PEER_TIMEOUT_MS. Rank 2 starts its device and leaves
 * without finalizing VICTIM_S later, having sent and received nothing.
 * Ranks 0 and 1 each post one receive from any source at once, naming no
 * rank anywhere, and poll it: it must fail with XDEV_ERR_PEER_PENDING
 * within the peer timeout and a margin, and rank 2 alone must then be
 * dead to them. (Over tcp the wildcard receive waited for ever: tcp hears
 * of a death only over a connection, and no request had made one.) Then
 * the two swap a message, so each is still alive to the other, and
 * finalize after a barrier. xdevrun's exit status is the verdict.
 *
 * `fault_wildcard_silent probe`: rank 0 blocks in xdev_probe from any
 * source instead, which must fail so too; rank 1 polls xdev_iprobe from
 * any source and xdev_peer_state, as a binding's probe that waits in
 * slices does, and must see rank 2 dead within the same bound.
 */
#include <stdlib.h>
#include <string.h>

#include "fault_util.h"
#include "xdev.h"

#define VICTIM 2
#define CTX 8
#define TAG 1
#define VICTIM_S 2.0 /* well after the others posted their receives */
#define MARGIN_S 15.0

/* Rank 0 blocks in a wildcard probe, rank 1 polls one (probe mode). */
static void probe_across(xdev_t *dev, int rank, double bound_s)
{
    xdev_status_t st;
    if (rank == 0) {
        fault_step("blocked in a wildcard xdev_probe");
        int rc = xdev_probe(dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX, &st);
        CHECK(rc == XDEV_ERR_PEER_PENDING, "wildcard probe: %d (%s), want %d", rc,
              xdev_strerror(rc), XDEV_ERR_PEER_PENDING);
        CHECK(st.source == XDEV_ANY_SOURCE && st.tag == XDEV_ANY_TAG && st.ctx == CTX &&
              st.error == XDEV_ERR_PEER_PENDING && st.count == 0,
              "status {%d, %d, %d, %d, %zu}, want it as called", st.source, st.tag, st.ctx,
              st.error, st.count);
        return;
    }
    fault_step("polling a wildcard xdev_iprobe");
    double end = fault_now() + bound_s;
    int found = 0;
    while (xdev_peer_state(dev, VICTIM) != XDEV_PEER_DEAD && fault_now() < end) {
        REQUIRE_RC(xdev_iprobe(dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX, &found, &st), XDEV_OK);
        REQUIRE(!found, "the wildcard iprobe found a message nobody sent");
        fault_sleep_ms(1);
    }
}

int main(int argc, char **argv)
{
    fault_setup("fault_wildcard_silent", 90);
    const char *pt = getenv("XDEV_PEER_TIMEOUT_MS");
    const char *wf = getenv("XDEV_WILDCARD_FAILS");
    REQUIRE(pt && wf && atoi(wf) == 1, "run with XDEV_PEER_TIMEOUT_MS and XDEV_WILDCARD_FAILS=1");
    xdev_t *dev;
    int rank = fault_start_with_silent(&dev, 3, VICTIM, VICTIM_S);

    char buf[64];
    xdev_request_t req;
    xdev_status_t st;
    int done;
    double bound_s = VICTIM_S + atoi(pt) / 1000.0 + MARGIN_S;
    if (argc > 1 && !strcmp(argv[1], "probe")) {
        probe_across(dev, rank, bound_s);
    } else {
        fault_step("waiting on any source");
        REQUIRE_RC(xdev_irecv(dev, buf, sizeof buf, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX, &req),
                   XDEV_OK);
        CHECK_RC(fault_wait_for(&req, &st, bound_s, &done), XDEV_OK);
        REQUIRE(done, "the wildcard receive still pending %.0f s after rank %d left", bound_s,
                VICTIM);
        CHECK(st.error == XDEV_ERR_PEER_PENDING, "wildcard receive: status.error %d, want %d",
              st.error, XDEV_ERR_PEER_PENDING);
        CHECK(st.count == 0 && st.source == XDEV_ANY_SOURCE, "status: count %zu source %d",
              st.count, st.source);
    }
    CHECK(xdev_peer_state(dev, VICTIM) == XDEV_PEER_DEAD, "xdev_peer_state(%d) = %d, want dead",
          VICTIM, xdev_peer_state(dev, VICTIM));

    int other = 1 - rank;
    char out[8] = { (char)rank }, in[8] = { 0 };
    xdev_request_t sreq;
    /* another context: the other's wildcard receive may still be posted */
    REQUIRE_RC(xdev_isend(dev, out, sizeof out, other, TAG, CTX + 1, &sreq), XDEV_OK);
    CHECK_RC(xdev_recv(dev, in, sizeof in, other, TAG, CTX + 1, &st), XDEV_OK);
    CHECK(st.count == sizeof in && in[0] == (char)other, "the swap with rank %d came wrong", other);
    CHECK_RC(xdev_wait(&sreq, &st), XDEV_OK);
    CHECK(xdev_peer_state(dev, other) == XDEV_PEER_ALIVE, "xdev_peer_state(%d) = %d, want alive",
          other, xdev_peer_state(dev, other));
    /* Neither finalizes before the other has looked: a peer that left is
     * dead to us. */
    REQUIRE_RC(fault_barrier_skip(dev, VICTIM), XDEV_OK);
    fault_step("xdev_finalize");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
