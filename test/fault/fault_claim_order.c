/*
 * fault_claim_order.c - matched probes received out of order keep the
 * prefix rule (xdev.h, xdev_imrecv), with no hang. Two ranks; rank 1
 * sends rank 0 a rendezvous message A, an eager message B and a
 * rendezvous message C; rank 0 claims all three with xdev_mprobe first.
 *
 *   fault_claim_order order
 *     Rank 0 receives its claims as B, C, A, one blocking call at a time:
 *     B must complete although A's handle is not received yet (one thread
 *     cannot receive A while it waits for B), and every byte must be right.
 *
 *   fault_claim_order death
 *     Rank 0 receives B, then tells rank 1 to go, and rank 1 exits at once
 *     without finalizing. Once rank 0 sees rank 1 dead it receives A: B was
 *     delivered, so A, sent before it, must be too (the prefix rule); C
 *     must be received whole or fail with XDEV_ERR_PEER.
 *
 *   fault_claim_order unmatched
 *     As death, with a rendezvous message U sent before A that rank 0
 *     never matches, so that the sender's stream is cut at U: A must
 *     still be received (it was claimed, and its data read in before B
 *     completed), and U found as the cut, by a matched probe that fails
 *     with XDEV_ERR_PEER naming it. (The soak found it: A failed there.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 6
#define TAG_A 1
#define TAG_B 2
#define TAG_C 3
#define TAG_GO 4
#define TAG_NEVER 5
#define TAG_U 6
#define BIG (1u << 20) /* above every transport's eager limit */
#define SMALL 100

static const uint32_t seed_of[] = { [TAG_A] = 11, [TAG_B] = 22, [TAG_C] = 33 };

enum mode { ORDER, DEATH, UNMATCHED };

static void sender(xdev_t *dev, enum mode mode)
{
    size_t len[] = { [TAG_A] = BIG, [TAG_B] = SMALL, [TAG_C] = BIG };
    xdev_request_t req[4];
    unsigned char *buf[4];
    int death = mode != ORDER;
    if (mode == UNMATCHED) { /* never received: its request dies with us */
        static unsigned char u[BIG];
        xdev_request_t ureq;
        REQUIRE_RC(xdev_isend(dev, u, BIG, 0, TAG_U, CTX, &ureq), XDEV_OK);
    }
    for (int t = TAG_A; t <= TAG_C; t++) {
        buf[t] = malloc(len[t]);
        REQUIRE(buf[t], "out of memory");
        fault_fill(buf[t], len[t], seed_of[t]);
        REQUIRE_RC(xdev_isend(dev, buf[t], len[t], 0, t, CTX, &req[t]), XDEV_OK);
    }
    if (death) {
        fault_step("waiting for the word to go");
        char go;
        REQUIRE_RC(xdev_recv(dev, &go, 1, 0, TAG_GO, CTX, NULL), XDEV_OK);
        _exit(0); /* gone, with A and C perhaps still under way */
    }
    for (int t = TAG_A; t <= TAG_C; t++) {
        xdev_status_t st;
        CHECK_RC(xdev_wait(&req[t], &st), XDEV_OK);
        CHECK(st.error == XDEV_OK, "send %d: status.error %d", t, st.error);
        free(buf[t]);
    }
}

/* Receive claim *msg (message tag t) and check it; returns its error. */
static int receive(xdev_t *dev, xdev_message_t *msg, int t)
{
    size_t len = t == TAG_B ? SMALL : BIG;
    unsigned char *buf = malloc(len);
    REQUIRE(buf, "out of memory");
    xdev_status_t st;
    int rc = xdev_mrecv(dev, buf, len, msg, &st);
    if (rc == XDEV_OK) {
        CHECK(st.count == len && st.tag == t, "message %d: count %zu tag %d", t, st.count, st.tag);
        size_t bad = fault_verify(buf, len, seed_of[t]);
        CHECK(bad == (size_t)-1, "message %d: byte %zu is wrong", t, bad);
    }
    free(buf);
    return rc;
}

/* Wait until rank 1 is known dead: a receive from it that nothing
 * matches fails then. */
static void wait_dead(xdev_t *dev)
{
    xdev_request_t req;
    xdev_status_t st;
    char c;
    int done = 0;
    REQUIRE_RC(xdev_irecv(dev, &c, 1, 1, TAG_NEVER, CTX, &req), XDEV_OK);
    REQUIRE_RC(fault_wait_for(&req, &st, 30.0, &done), XDEV_OK);
    REQUIRE(done && st.error == XDEV_ERR_PEER, "rank 1 not seen dead (done %d, error %d)", done,
            st.error);
}

static void receiver(xdev_t *dev, enum mode mode)
{
    int death = mode != ORDER;
    xdev_message_t msg[4];
    for (int t = TAG_A; t <= TAG_C; t++) {
        xdev_status_t st;
        fault_step("claiming");
        REQUIRE_RC(xdev_mprobe(dev, 1, t, CTX, &msg[t], &st), XDEV_OK);
    }
    fault_step("receiving B before A");
    REQUIRE_RC(receive(dev, &msg[TAG_B], TAG_B), XDEV_OK);
    if (!death) {
        CHECK_RC(receive(dev, &msg[TAG_C], TAG_C), XDEV_OK);
        CHECK_RC(receive(dev, &msg[TAG_A], TAG_A), XDEV_OK);
        return;
    }
    REQUIRE_RC(xdev_send(dev, "g", 1, 1, TAG_GO, CTX), XDEV_OK);
    fault_step("waiting for rank 1 to be gone");
    wait_dead(dev);
    fault_step("receiving A after the death");
    int rc = receive(dev, &msg[TAG_A], TAG_A);
    CHECK(rc == XDEV_OK, "B was delivered but A, sent before it, failed with %d: not a prefix", rc);
    rc = receive(dev, &msg[TAG_C], TAG_C);
    CHECK(rc == XDEV_OK || rc == XDEV_ERR_PEER, "C failed with %d", rc);
    if (mode == UNMATCHED) {
        xdev_message_t u;
        xdev_status_t st;
        rc = xdev_mprobe(dev, 1, XDEV_ANY_TAG, CTX, &u, &st);
        CHECK(rc == XDEV_ERR_PEER && st.error == XDEV_ERR_PEER && st.tag == TAG_U,
              "U, never matched, is not found as the cut: %d, status error %d tag %d", rc,
              st.error, st.tag);
    }
}

int main(int argc, char **argv)
{
    const char *arg = argc > 1 ? argv[1] : "order";
    enum mode mode = strcmp(arg, "death") == 0       ? DEATH
                     : strcmp(arg, "unmatched") == 0 ? UNMATCHED
                                                     : ORDER;
    fault_setup(mode == DEATH ? "fault-claim-order-death"
                : mode == UNMATCHED ? "fault-claim-order-unmatched" : "fault-claim-order", 90);
    xdev_t *dev;
    if (fault_start(&dev, 2) == 1)
        sender(dev, mode);
    else
        receiver(dev, mode);
    fault_step("xdev_finalize");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
