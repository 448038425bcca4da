/*
 * fault_late_peer.c - an event loop's first message to a peer that has not
 * started yet must leave within a tick of the peer's start.
 *
 * Rank 0 sends to ranks 1-3 at once and waits for their answers in an
 * event loop (xdev_fd, xdev_arm, poll) that drives one progress pass per
 * wakeup. Rank r starts its device LATE_MS + r * STAGGER_MS after rank 0's,
 * when rank 0's loop is long asleep: nothing of rank r's wakes it, only the
 * device's tick (100 ms), after which its transport must look again for
 * the address rank r has published. Each late rank must receive its
 * message, whole and its own, within BOUND_S of its xdev_init returning.
 *
 * Over ofi, a transport that looked at its clock (and so at its timers)
 * every 16 progress passes only, that looked 16 ticks later, 1.6 s (ibv,
 * every 64: 5.3-5.8 s in the VM).
 *
 * Rank 4, last, sends to rank 0 first, which then has connections open to
 * ranks 1-3 (they wait for its goodbye). Its message too must arrive
 * within BOUND_S, and rank 0's loop must not wake over and over to find
 * nothing: over tcp, polling the open connections one by one and the rest
 * (a connection to accept) every 256 polls only, the loop woke 254 times
 * in a row for rank 4's connection.
 *
 * Run as `xdevrun -n 5 fault_late_peer`.
 */
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 13
#define TAG 1
#define TAG_DIAL 2
#define TAG_BYE 3
#define LATE_MS 400
#define STAGGER_MS 150
#define BOUND_S 0.5 /* a tick (0.1 s) and room for a loaded host */
#define NP 5
#define DIALLER (NP - 1)
/* Idle wakeups in a row, at most: a wait for a rank to start is a few
 * ticks, a connection's steps a few wakeups. */
#define IDLE_STREAK_MAX 64

/* What rank 0 sends rank r: a value no other rank is sent. */
static double message_for(int r)
{
    return 1000.5 + r;
}

static void late_rank(xdev_t *dev, int rank, double up)
{
    double in = 0;
    xdev_status_t st;
    fault_step("the message rank 0 sent before this rank started");
    REQUIRE_RC(xdev_recv(dev, &in, sizeof in, 0, TAG, CTX, &st), XDEV_OK);
    double late = fault_now() - up;
    CHECK(st.source == 0 && st.count == sizeof in && in == message_for(rank),
          "got %zu bytes from rank %d holding %g, not %g", st.count, st.source, in,
          message_for(rank));
    CHECK(late < BOUND_S, "rank 0's message came %.3f s after this rank started", late);
    REQUIRE_RC(xdev_send(dev, &late, sizeof late, 0, TAG, CTX), XDEV_OK);
    fault_step("rank 0's goodbye, once it heard from the dialler");
    REQUIRE_RC(xdev_recv(dev, NULL, 0, 0, TAG_BYE, CTX, &st), XDEV_OK);
}

/* Sends rank 0 the time it started (CLOCK_MONOTONIC, the same for every
 * process on the host): rank 0 judges how late the message is. */
static void dialling_rank(xdev_t *dev, double up)
{
    fault_step("a message to rank 0, whose loop sleeps");
    REQUIRE_RC(xdev_send(dev, &up, sizeof up, 0, TAG_DIAL, CTX), XDEV_OK);
}

static void looping_rank(xdev_t *dev)
{
    /* reqs[2r - 2] sends to rank r, reqs[2r - 1] takes its answer; the
     * dialler's start time comes to a wildcard receive, which asks no
     * transport to reach the dialler first */
    xdev_request_t req[2 * (NP - 1)], *reqs[2 * (NP - 1)];
    double out[NP], late[NP];
    for (int r = 1; r < NP; r++) {
        reqs[2 * r - 2] = r == DIALLER ? NULL : &req[2 * r - 2];
        reqs[2 * r - 1] = &req[2 * r - 1];
        out[r] = message_for(r);
        if (reqs[2 * r - 2])
            REQUIRE_RC(xdev_isend(dev, &out[r], sizeof out[r], r, TAG, CTX, reqs[2 * r - 2]),
                       XDEV_OK);
        REQUIRE_RC(xdev_irecv(dev, &late[r], sizeof late[r], r == DIALLER ? XDEV_ANY_SOURCE : r,
                              r == DIALLER ? TAG_DIAL : TAG, CTX, reqs[2 * r - 1]),
                   XDEV_OK);
    }
    int fd = xdev_fd(dev);
    REQUIRE(fd >= 0, "xdev_fd returned %d", fd);
    fault_step("the event loop, until every late rank has answered");
    int left = 2 * (NP - 1) - 1, sleeps = 0, idle = 0, idle_max = 0;
    while (left) {
        if (xdev_progress(dev) > 0) {
            idle = 0;
            /* something moved: only then look at the requests, so that an
             * idle wakeup costs one pass, as in a lean loop */
            int n, idx[2 * (NP - 1)];
            xdev_status_t st[2 * (NP - 1)];
            REQUIRE_RC(xdev_testsome(2 * (NP - 1), reqs, &n, idx, st), XDEV_OK);
            for (int k = 0; k < n; k++) {
                int r = idx[k] / 2 + 1;
                bool answer = idx[k] % 2;
                CHECK(st[k].error == XDEV_OK, "the %s rank %d: %d",
                      answer ? "answer of" : "send to", r, st[k].error);
                if (answer && r == DIALLER) {
                    CHECK(st[k].source == DIALLER, "the dialler's message came from %d",
                          st[k].source);
                    double took = fault_now() - late[r];
                    CHECK(took < BOUND_S, "rank %d's message came %.3f s after it started", r,
                          took);
                    fault_log("rank %d's message came %.3f s after it started", r, took);
                } else if (answer) {
                    fault_log("rank %d got its message %.3f s after it started", r, late[r]);
                }
                reqs[idx[k]] = NULL;
                left--;
            }
            continue;
        }
        int rc = xdev_arm(dev);
        if (rc == XDEV_ERR_BUSY)
            continue;
        REQUIRE_RC(rc, XDEV_OK);
        struct pollfd p = { .fd = fd, .events = POLLIN };
        REQUIRE(poll(&p, 1, 5000) >= 0, "poll");
        sleeps++;
        if (++idle > idle_max)
            idle_max = idle;
    }
    for (int r = 1; r < DIALLER; r++)
        CHECK_RC(xdev_send(dev, NULL, 0, r, TAG_BYE, CTX), XDEV_OK);
    fault_log("%d sleeps, at most %d in a row found nothing", sleeps, idle_max);
    CHECK(idle_max <= IDLE_STREAK_MAX, "the loop woke %d times in a row to find nothing", idle_max);
}

int main(void)
{
    fault_setup("fault_late_peer", 60);
    const char *me = getenv("XDEV_RANK");
    int r = me ? atoi(me) : 0;
    if (r > 0)
        fault_sleep_ms(LATE_MS + r * STAGGER_MS);
    xdev_t *dev;
    int rank = fault_start(&dev, NP);
    double up = fault_now();
    if (rank == 0)
        looping_rank(dev);
    else if (rank == DIALLER)
        dialling_rank(dev, up);
    else
        late_rank(dev, rank, up);
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
