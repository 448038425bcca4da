/*
 * fault_gone_early.c - a rank that dies before xdev_init does not fail its
 * peers' init: it is a dead peer like any other.
 *
 * Run as `xdevrun -n 3 fault_gone_early [hosts] [late]` with a short
 * XDEV_PEER_TIMEOUT_MS. Rank 1 exits 0 at once, before it publishes
 * anything. Ranks 0 and 2 check that xdev_init succeeds within
 * the peer timeout and a margin; that a send and a receive naming rank 1
 * fail with XDEV_ERR_PEER within that bound too; that xdev_peer_state then
 * says rank 1 is dead; that they still exchange messages (eager and
 * rendezvous) with each other; and that xdev_finalize succeeds. Under
 * auto, rank 1 must be dead to them as soon as xdev_init returns.
 *
 * Arguments: "hosts" makes each rank a host of its own (XDEV_HOST_ID), so
 * auto serves every peer over the network; "late" keeps rank 1 alive but
 * starts it a second after the peer timeout: it then sends each survivor
 * a message, which must never reach them; "long" adds a rendezvous-sized
 * one to each, which must fail (or complete) within LATE_WAIT_S, not wait
 * for an answer that never comes. xdevrun's exit status is the verdict: 0
 * only if every rank passed.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_util.h"
#include "xdev.h"

#define GONE 1
#define CTX 8
#define TAG 1
#define BIG (1u << 20) /* above every transport's eager limit */
#define SMALL 64
#define MARGIN_S 10.0
#define LATE_WAIT_S 5.0 /* the late rank's sends must be done by then, while
                         * the others still run: their exit would end them */

/* A request naming the gone rank fails, within the bound. */
static void expect_peer_error(xdev_request_t *req, double bound_s, const char *what)
{
    xdev_status_t st;
    int done;
    CHECK_RC(fault_wait_for(req, &st, bound_s, &done), XDEV_OK);
    REQUIRE(done, "%s naming the gone rank still pending after %.0f s", what, bound_s);
    CHECK(st.error == XDEV_ERR_PEER, "%s naming the gone rank: status.error %d, want %d", what,
          st.error, XDEV_ERR_PEER);
}

/* Ranks 0 and 2 swap one message of len bytes. */
static void swap(xdev_t *dev, int other, size_t len, uint32_t seed)
{
    unsigned char *out = malloc(len), *in = malloc(len);
    REQUIRE(out && in, "out of memory");
    int rank = other == 0 ? 2 : 0;
    fault_fill(out, len, seed + (uint32_t)rank);
    xdev_request_t sreq;
    xdev_status_t st;
    REQUIRE_RC(xdev_isend(dev, out, len, other, TAG, CTX, &sreq), XDEV_OK);
    CHECK_RC(xdev_recv(dev, in, len, other, TAG, CTX, &st), XDEV_OK);
    CHECK(st.count == len, "received %zu bytes of %zu", st.count, len);
    size_t bad = fault_verify(in, len, seed + (uint32_t)other);
    CHECK(bad == (size_t)-1, "%zu-byte message: byte %zu is wrong", len, bad);
    CHECK_RC(xdev_wait(&sreq, &st), XDEV_OK);
    CHECK(st.error == XDEV_OK, "send of %zu bytes: status.error %d", len, st.error);
    free(out);
    free(in);
}

/* The late rank: its messages to the others must go nowhere. Whether its
 * sends complete or fail depends on how fast a survivor drops the link. */
static int late_rank(double timeout_s, bool long_sends)
{
    fault_sleep_ms((int)((timeout_s + 1.0) * 1000));
    xdev_t *dev;
    fault_step("late xdev_init");
    REQUIRE_RC(xdev_init(NULL, &dev), XDEV_OK);
    /* With "long", sends that need an answer from the ranks that dropped
     * this one too: they must fail, not wait for ever (over ofi, and over
     * tcp under auto between hosts, they waited). */
    char *buf = calloc(1, long_sends ? BIG : SMALL);
    REQUIRE(buf, "out of memory");
    xdev_request_t req[4];
    int n = long_sends ? 4 : 2;
    for (int i = 0; i < n; i++)
        REQUIRE_RC(xdev_isend(dev, buf, i < 2 ? SMALL : BIG, i % 2 * 2, TAG, CTX, &req[i]),
                   XDEV_OK);
    for (int i = 0; i < n; i++) {
        xdev_status_t st;
        int done;
        double bound = i < 2 ? timeout_s + MARGIN_S : LATE_WAIT_S;
        CHECK_RC(fault_wait_for(&req[i], &st, bound, &done), XDEV_OK);
        CHECK(done && (st.error == XDEV_OK || st.error == XDEV_ERR_PEER),
              "late %s send to %d: done %d, status.error %d", i < 2 ? "short" : "long",
              i % 2 * 2, done, st.error);
    }
    free(buf);
    xdev_finalize(dev); /* its peers have (or will have) dropped it */
    return fault_finish();
}

/* Nothing from the late rank arrives until it has surely sent. */
static void nothing_from_late(xdev_t *dev, double until)
{
    while (fault_now() < until) {
        int found;
        xdev_status_t st;
        CHECK_RC(xdev_iprobe(dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX, &found, &st), XDEV_OK);
        CHECK(!found || st.source != GONE, "a message from the rank found dead came through");
        if (found && st.source == GONE)
            return;
        fault_sleep_ms(1);
    }
}

int main(int argc, char **argv)
{
    fault_setup("fault_gone_early", 100);
    double t0 = fault_now();
    const char *r = getenv("XDEV_RANK"), *pt = getenv("XDEV_PEER_TIMEOUT_MS");
    const char *tr = getenv("XDEV_TRANSPORT");
    int rank = r ? atoi(r) : 0;
    bool hosts = false, late = false, long_sends = false;
    for (int i = 1; i < argc; i++) {
        hosts |= !strcmp(argv[i], "hosts");
        late |= !strcmp(argv[i], "late");
        long_sends |= !strcmp(argv[i], "long");
    }
    double timeout_s = (pt ? atoi(pt) : 20000) / 1000.0, bound_s = timeout_s + MARGIN_S;
    if (hosts) {
        char id[32];
        snprintf(id, sizeof id, "host-%d", rank);
        setenv("XDEV_HOST_ID", id, 1);
    }
    if (rank == GONE && late)
        return late_rank(timeout_s, long_sends);
    if (rank == GONE)
        _exit(0); /* before xdev_init: its peers never hear of it */

    xdev_t *dev;
    fault_step("xdev_init");
    double start = fault_now();
    REQUIRE_RC(xdev_init(NULL, &dev), XDEV_OK);
    double took = fault_now() - start;
    CHECK(took < bound_s, "xdev_init took %.1f s, bound %.0f s", took, bound_s);
    if (!tr || !strcmp(tr, "auto"))
        CHECK(xdev_peer_state(dev, GONE) == XDEV_PEER_DEAD,
              "under auto, xdev_peer_state(gone rank) = %d after init, want dead",
              xdev_peer_state(dev, GONE));

    fault_step("requests naming the gone rank");
    char small[SMALL] = { 0 };
    xdev_request_t req;
    REQUIRE_RC(xdev_isend(dev, small, sizeof small, GONE, TAG, CTX, &req), XDEV_OK);
    expect_peer_error(&req, bound_s, "isend");
    REQUIRE_RC(xdev_irecv(dev, small, sizeof small, GONE, TAG, CTX, &req), XDEV_OK);
    expect_peer_error(&req, bound_s, "irecv");
    CHECK(xdev_peer_state(dev, GONE) == XDEV_PEER_DEAD,
          "xdev_peer_state(gone rank) = %d, want dead", xdev_peer_state(dev, GONE));

    fault_step("traffic between the others");
    int other = rank == 0 ? 2 : 0;
    swap(dev, other, SMALL, 100);
    /* (not after the last swap: by then the other may have left, and a
     * peer that left is dead to us) */
    CHECK(xdev_peer_state(dev, other) == XDEV_PEER_ALIVE, "xdev_peer_state(%d) = %d, want alive",
          other, xdev_peer_state(dev, other));
    swap(dev, other, BIG, 200);
    if (late) {
        fault_step("watching for the late rank's messages");
        nothing_from_late(dev, t0 + timeout_s + 1.0 + LATE_WAIT_S + 4.0);
    }

    fault_step("xdev_finalize");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
