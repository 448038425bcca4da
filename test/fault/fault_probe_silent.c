/*
 * fault_probe_silent.c - a probe naming a rank that leaves without a word
 * learns of its death, over every transport.
 *
 * Run as `xdevrun -n 3 fault_probe_silent` with a short
 * XDEV_PEER_TIMEOUT_MS. Rank 2 starts its device and leaves without
 * finalizing VICTIM_S later, having sent and received nothing. Rank 0
 * blocks in xdev_probe naming it, rank 1 polls xdev_improbe naming it
 * until xdev_peer_state says it is dead; both within the peer timeout and
 * a margin. Then xdev_mprobe naming it fails at once on both. (Over tcp
 * and ofi the blocking probes waited for ever: those transports hear of a
 * death only from a peer they reach, and only a posted receive reached
 * it; an outside client's random kills found this.) Then the two swap a
 * message and finalize. xdevrun's exit status is the verdict.
 */
#include <stdlib.h>

#include "fault_util.h"
#include "xdev.h"

#define VICTIM 2
#define CTX 9
#define TAG 1
#define VICTIM_S 1.0 /* after the others are probing */
#define MARGIN_S 15.0

static void check_gone(const xdev_status_t *st, const char *what)
{
    CHECK(st->source == VICTIM && st->tag == XDEV_ANY_TAG && st->ctx == CTX &&
              st->error == XDEV_ERR_PEER && st->count == 0,
          "%s: status {%d, %d, %d, %d, %zu}, want {%d, ANY_TAG, %d, XDEV_ERR_PEER, 0}", what,
          st->source, st->tag, st->ctx, st->error, st->count, VICTIM, CTX);
}

int main(void)
{
    fault_setup("fault_probe_silent", 90);
    const char *pt = getenv("XDEV_PEER_TIMEOUT_MS");
    REQUIRE(pt, "run with XDEV_PEER_TIMEOUT_MS");
    xdev_t *dev;
    int rank = fault_start_with_silent(&dev, 3, VICTIM, VICTIM_S);

    xdev_status_t st;
    xdev_message_t msg;
    double bound_s = VICTIM_S + atoi(pt) / 1000.0 + MARGIN_S, t0 = fault_now();
    if (rank == 0) {
        fault_step("xdev_probe naming the silent rank");
        CHECK_RC(xdev_probe(dev, VICTIM, XDEV_ANY_TAG, CTX, &st), XDEV_ERR_PEER);
        check_gone(&st, "xdev_probe");
    } else {
        fault_step("xdev_improbe naming the silent rank");
        int found = 0;
        while (xdev_peer_state(dev, VICTIM) != XDEV_PEER_DEAD && fault_now() - t0 < bound_s) {
            REQUIRE_RC(xdev_improbe(dev, VICTIM, XDEV_ANY_TAG, CTX, &found, &msg, &st), XDEV_OK);
            REQUIRE(!found, "xdev_improbe found a message the silent rank never sent");
            fault_sleep_ms(1);
        }
    }
    double dt = fault_now() - t0;
    CHECK(dt < bound_s, "rank %d took %.1f s to learn of the death", VICTIM, dt);
    CHECK(xdev_peer_state(dev, VICTIM) == XDEV_PEER_DEAD, "xdev_peer_state(%d) = %d, want dead",
          VICTIM, xdev_peer_state(dev, VICTIM));
    fault_step("xdev_mprobe naming the dead rank");
    CHECK_RC(xdev_mprobe(dev, VICTIM, XDEV_ANY_TAG, CTX, &msg, &st), XDEV_ERR_PEER);
    check_gone(&st, "xdev_mprobe");

    int other = 1 - rank;
    char out[8] = { (char)rank }, in[8] = { 0 };
    xdev_request_t sreq;
    REQUIRE_RC(xdev_isend(dev, out, sizeof out, other, TAG, CTX, &sreq), XDEV_OK);
    CHECK_RC(xdev_recv(dev, in, sizeof in, other, TAG, CTX, &st), XDEV_OK);
    CHECK(st.count == sizeof in && in[0] == (char)other, "the swap with rank %d came wrong", other);
    CHECK_RC(xdev_wait(&sreq, &st), XDEV_OK);
    fault_step("xdev_finalize");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
