/*
 * fault_peer_kill.c - a rank dies by SIGKILL in the middle of traffic.
 *
 * Run by run_peer_kill.sh as `xdevrun --keep-going -n N fault_peer_kill`
 * (N >= 4) with XDEV_TEST_OUT set. Rank 3 (the victim) first receives a
 * hello from ranks 1 and 2, so their connections to it are established and
 * the kill breaks live connections; then it sends its pid to rank 0 and
 * sleeps without calling xdev (ranks 1 and 2 make progress for 0.3 s before
 * their hello, so that a connection the victim asked for is up before
 * they first send to it). Rank 0 kills it with SIGKILL once
 *   rank 0 has an irecv from 3 posted,
 *   rank 1 has a 16 MiB (rendezvous) isend to 3 in flight,
 *   rank 2 has an issend to 3 pending,
 *   every survivor has a wildcard-source irecv posted (which must NOT fail).
 * With XDEV_WILDCARD_FAILS=1, ranks 1 and 2 then block in a wildcard
 * xdev_mprobe and xdev_probe, which the kill must fail.
 * Survivors then check: their requests involving the victim fail with
 * status.error == XDEV_ERR_PEER within 10 s of the kill, new sends and
 * receives naming the victim fail with XDEV_ERR_PEER, traffic among survivors
 * still works, and xdev_finalize returns XDEV_OK within 10 s. Ranks above 3
 * (np8) never talked to the victim: their new sends can only find it
 * refusing connections, which fails them after XDEV_PEER_TIMEOUT_MS (set to
 * 3000 by meson.build; the default is much longer). Each survivor
 * that passes writes "ok" to $XDEV_TEST_OUT/rank.<r>.
 * xdev_peer_state says the victim is dead afterwards, and the ranks a
 * survivor has heard from alive. With XDEV_WILDCARD_FAILS=1 the wildcard
 * receive posted before the kill must fail instead, with
 * XDEV_ERR_PEER_PENDING, and one posted after it must not. With
 * FAULT_OUTLIVE_MS set, survivors keep making progress that long after the
 * kill before their ring: a launcher that takes one rank's death for the
 * job's (Slurm's PMIx plugin does, about a second later, for a rank that
 * held PMIx) would end them first.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_util.h"
#include "xdev.h"

#define VICTIM 3
#define CTX 5
#define TAG_PID 1
#define TAG_NEVER 2
#define TAG_BIG 3
#define TAG_SYNC 4
#define TAG_HELLO 9
#define TAG_POSTED 10
#define TAG_KILLED 11
#define TAG_RING 50
#define TAG_NEW 60
#define BIG (16u << 20)
#define SMALL 1024
#define RING_LEN 100000 /* above the default eager limit: rendezvous among survivors */
#define FAIL_BOUND_S 10.0
#define WAIT_LIMIT_S 30.0

static int prev_survivor(int r, int size)
{
    do r = (r + size - 1) % size; while (r == VICTIM);
    return r;
}

static int next_survivor(int r, int size)
{
    do r = (r + 1) % size; while (r == VICTIM);
    return r;
}

/* Wait (bounded) for a request that must fail because the victim died. */
static void expect_peer_failure(xdev_request_t *req, const char *what, double t_kill)
{
    xdev_status_t st;
    int done = 0, rc;
    rc = fault_wait_for(req, &st, WAIT_LIMIT_S, &done);
    CHECK(rc == XDEV_OK, "%s: xdev_test returned %d (%s)", what, rc, xdev_strerror(rc));
    REQUIRE(done, "%s: still not complete %.0f s after the kill", what, WAIT_LIMIT_S);
    double dt = fault_now() - t_kill;
    fault_log("%s failed with %d (%s) %.3f s after the kill", what, st.error, xdev_strerror(st.error), dt);
    CHECK(st.error == XDEV_ERR_PEER, "%s: status.error %d (%s), want XDEV_ERR_PEER", what, st.error,
          xdev_strerror(st.error));
    CHECK(dt < FAIL_BOUND_S, "%s: failed only %.3f s after the kill (bound %.0f s)", what, dt, FAIL_BOUND_S);
}

/* A new operation naming the dead victim fails with XDEV_ERR_PEER, either from
 * the call itself (nothing posted) or in the request's status. */
static void expect_new_op_fails(xdev_t *dev, int op, const char *what)
{
    static char buf[SMALL];
    xdev_request_t req;
    xdev_status_t st;
    int rc, done = 0;
    double t0 = fault_now();

    fault_step(what);
    if (op == 0) rc = xdev_isend(dev, buf, SMALL, VICTIM, TAG_NEW, CTX, &req);
    else if (op == 1) rc = xdev_issend(dev, buf, SMALL, VICTIM, TAG_NEW, CTX, &req);
    else rc = xdev_irecv(dev, buf, SMALL, VICTIM, TAG_NEW, CTX, &req);
    if (rc == XDEV_ERR_PEER) {
        fault_log("%s: refused by the call after %.3f s", what, fault_now() - t0);
        return;
    }
    REQUIRE(rc == XDEV_OK, "%s: returned %d (%s), want XDEV_ERR_PEER or a posted request", what, rc,
            xdev_strerror(rc));
    rc = fault_wait_for(&req, &st, WAIT_LIMIT_S, &done);
    REQUIRE(rc == XDEV_OK && done, "%s: request to the dead rank did not complete in %.0f s (rc %d)", what,
            WAIT_LIMIT_S, rc);
    CHECK(st.error == XDEV_ERR_PEER, "%s: status.error %d (%s), want XDEV_ERR_PEER", what, st.error,
          xdev_strerror(st.error));
    fault_log("%s: status.error %d after %.3f s", what, st.error, fault_now() - t0);
    CHECK(fault_now() - t0 < FAIL_BOUND_S, "%s took %.3f s to fail", what, fault_now() - t0);
}

/* With XDEV_WILDCARD_FAILS, a blocking wildcard probe (matched, when
 * `matched`) that nothing would match, begun before the kill (rank 0 kills
 * only after our TAG_POSTED, and we notice a death only inside a call of
 * ours), fails with XDEV_ERR_PEER_PENDING when the victim dies. */
static void wildcard_probe_fails(xdev_t *dev, bool matched)
{
    const char *what = matched ? "xdev_mprobe" : "xdev_probe";
    xdev_message_t msg;
    xdev_status_t st;
    fault_step(matched ? "a wildcard xdev_mprobe across the kill"
                       : "a wildcard xdev_probe across the kill");
    int rc = matched ? xdev_mprobe(dev, XDEV_ANY_SOURCE, TAG_NEVER, CTX, &msg, &st)
                     : xdev_probe(dev, XDEV_ANY_SOURCE, TAG_NEVER, CTX, &st);
    CHECK(rc == XDEV_ERR_PEER_PENDING, "%s returned %d (%s), want XDEV_ERR_PEER_PENDING", what,
          rc, xdev_strerror(rc));
    CHECK(st.source == XDEV_ANY_SOURCE && st.tag == TAG_NEVER && st.ctx == CTX &&
          st.error == XDEV_ERR_PEER_PENDING && st.count == 0,
          "%s status {%d, %d, %d, %d, %zu}, want it as posted", what, st.source, st.tag, st.ctx,
          st.error, st.count);
    if (matched) {
        static const xdev_message_t empty;
        CHECK(!memcmp(&msg, &empty, sizeof msg), "xdev_mprobe left a message handle");
    }
    CHECK(xdev_peer_state(dev, VICTIM) == XDEV_PEER_DEAD, "%s failed, the victim not dead", what);
}

static void victim(xdev_t *dev)
{
    int pid = (int)getpid();
    char hello[8];
    for (int r = 1; r <= 2; r++)
        REQUIRE_RC(xdev_recv(dev, hello, sizeof hello, r, TAG_HELLO, CTX, NULL), XDEV_OK);
    REQUIRE_RC(xdev_send(dev, &pid, sizeof pid, 0, TAG_PID, CTX), XDEV_OK);
    fault_step("victim waiting to be killed");
    /* Make no more xdev calls; if nobody kills us, fail the job. */
    for (int i = 0; i < 600; i++) fault_sleep_ms(100);
    fault_fail(__FILE__, __LINE__, "victim was not killed within 60 s");
    exit(1);
}

int main(void)
{
    static char ring_out[RING_LEN], ring_in[RING_LEN], small[SMALL], never[SMALL];
    xdev_t *dev = NULL;
    xdev_request_t never_req, big_req, sync_req, ring_req, pending_req;
    xdev_status_t st;
    unsigned char *big = NULL;
    double t_kill = 0, t0, dt;
    int rank, size, rc, done;

    fault_setup("fault-peer-kill", 100);
    fault_step("xdev_init");
    REQUIRE_RC(xdev_init(NULL, &dev), XDEV_OK);
    rank = xdev_rank(dev);
    size = xdev_size(dev);
    fault_set_rank(rank);
    REQUIRE(size > VICTIM, "needs at least %d ranks", VICTIM + 1);
    REQUIRE_RC(fault_barrier(dev), XDEV_OK);

    if (rank == VICTIM) victim(dev);

    /* Every survivor: a wildcard receive that one peer's death must not
     * fail; or, with XDEV_WILDCARD_FAILS, one (that nothing would match)
     * which it must fail. */
    const char *wf = getenv("XDEV_WILDCARD_FAILS");
    bool wildcard_fails = wf && !strcmp(wf, "1");
    memset(ring_in, 0, sizeof ring_in);
    xdev_request_t *wild = wildcard_fails ? &pending_req : &ring_req;
    REQUIRE_RC(xdev_irecv(dev, ring_in, sizeof ring_in, XDEV_ANY_SOURCE,
                          wildcard_fails ? TAG_NEVER : TAG_RING, CTX, wild), XDEV_OK);

    fault_step("posting operations that involve the victim");
    if (rank == 0) {
        int pid = 0;
        REQUIRE_RC(xdev_irecv(dev, never, sizeof never, VICTIM, TAG_NEVER, CTX, &never_req), XDEV_OK);
        REQUIRE_RC(xdev_recv(dev, &pid, sizeof pid, VICTIM, TAG_PID, CTX, &st), XDEV_OK);
        REQUIRE(pid > 1 && st.count == sizeof pid, "bad pid %d from the victim", pid);
        for (int r = 1; r <= 2; r++)
            REQUIRE_RC(xdev_recv(dev, small, 1, r, TAG_POSTED, CTX, NULL), XDEV_OK);
        fault_sleep_ms(200); /* let the RNDZ start and the sync send reach the victim */
        t_kill = fault_now();
        REQUIRE(kill((pid_t)pid, SIGKILL) == 0, "kill(%d, SIGKILL) failed", pid);
        fault_log("killed rank %d (pid %d)", VICTIM, pid);
        for (int r = 1; r < size; r++)
            if (r != VICTIM)
                REQUIRE_RC(xdev_send(dev, &t_kill, sizeof t_kill, r, TAG_KILLED, CTX), XDEV_OK);
        expect_peer_failure(&never_req, "rank 0's irecv from the victim", t_kill);
    } else {
        if (rank == 1 || rank == 2) {
            /* Make progress for a while first: a transport that connects on
             * demand then has the connection the victim asked for (by
             * posting its receive from us) up before our first send to it,
             * and that send must still make the victim one whose death we
             * watch for (ibv with pidfds off: keepalives). */
            double until = fault_now() + 0.3;
            while (fault_now() < until) {
                int found;
                REQUIRE_RC(xdev_iprobe(dev, XDEV_ANY_SOURCE, TAG_NEVER, CTX, &found, &st), XDEV_OK);
            }
            REQUIRE_RC(xdev_send(dev, "hello", 6, VICTIM, TAG_HELLO, CTX), XDEV_OK);
        }
        if (rank == 1) {
            big = malloc(BIG);
            REQUIRE(big != NULL, "malloc");
            fault_fill(big, BIG, 1);
            REQUIRE_RC(xdev_isend(dev, big, BIG, VICTIM, TAG_BIG, CTX, &big_req), XDEV_OK);
        } else if (rank == 2) {
            fault_fill(small, SMALL, 2);
            REQUIRE_RC(xdev_issend(dev, small, SMALL, VICTIM, TAG_SYNC, CTX, &sync_req), XDEV_OK);
        }
        if (rank <= 2) REQUIRE_RC(xdev_send(dev, "p", 1, 0, TAG_POSTED, CTX), XDEV_OK);
        if (wildcard_fails && rank <= 2) wildcard_probe_fails(dev, rank == 1);
        REQUIRE_RC(xdev_recv(dev, &t_kill, sizeof t_kill, 0, TAG_KILLED, CTX, &st), XDEV_OK);
        if (rank == 1) expect_peer_failure(&big_req, "rank 1's 16 MiB isend to the victim", t_kill);
        if (rank == 2) expect_peer_failure(&sync_req, "rank 2's issend to the victim", t_kill);
    }

    /* New operations naming the victim fail too. */
    expect_new_op_fails(dev, 0, "new isend to the dead rank");
    expect_new_op_fails(dev, 1, "new issend to the dead rank");
    expect_new_op_fails(dev, 2, "new irecv from the dead rank");
    fault_step("blocking send to the dead rank");
    t0 = fault_now();
    rc = xdev_send(dev, small, SMALL, VICTIM, TAG_NEW, CTX);
    dt = fault_now() - t0;
    CHECK(rc == XDEV_ERR_PEER, "xdev_send to the dead rank returned %d (%s)", rc, xdev_strerror(rc));
    CHECK(dt < FAIL_BOUND_S, "xdev_send to the dead rank took %.3f s", dt);
    if (rank == 0) {
        fault_step("probe of the dead rank");
        rc = xdev_probe(dev, VICTIM, TAG_NEW, CTX, &st);
        CHECK(rc == XDEV_ERR_PEER, "xdev_probe of the dead rank returned %d (%s)", rc, xdev_strerror(rc));
    }

    fault_step("peer states");
    CHECK(xdev_peer_state(dev, VICTIM) == XDEV_PEER_DEAD, "the victim's state is %d, want dead",
          xdev_peer_state(dev, VICTIM));
    CHECK(xdev_peer_state(dev, rank) == XDEV_PEER_ALIVE, "our own state is not alive");
    if (rank != 0)
        CHECK(xdev_peer_state(dev, 0) == XDEV_PEER_ALIVE, "rank 0, heard from, is %d",
              xdev_peer_state(dev, 0));
    CHECK_RC(xdev_peer_state(dev, size), XDEV_ERR_ARG);
    CHECK_RC(xdev_peer_state(NULL, 0), XDEV_ERR_ARG);

    if (wildcard_fails) {
        fault_step("the wildcard receive posted before the kill");
        rc = fault_wait_for(&pending_req, &st, WAIT_LIMIT_S, &done);
        REQUIRE(rc == XDEV_OK && done, "the wildcard receive did not fail (rc %d)", rc);
        CHECK(st.error == XDEV_ERR_PEER_PENDING, "wildcard receive: error %d (%s), want "
              "XDEV_ERR_PEER_PENDING", st.error, xdev_strerror(st.error));
        REQUIRE_RC(xdev_irecv(dev, ring_in, sizeof ring_in, XDEV_ANY_SOURCE, TAG_RING, CTX, &ring_req),
                   XDEV_OK);
    }

    const char *outlive = getenv("FAULT_OUTLIVE_MS");
    if (outlive) {
        fault_step("outliving the victim");
        double until = fault_now() + atoi(outlive) / 1000.0;
        while (fault_now() < until) {
            int found;
            REQUIRE_RC(xdev_iprobe(dev, XDEV_ANY_SOURCE, TAG_NEVER, CTX, &found, &st), XDEV_OK);
            fault_sleep_ms(10);
        }
    }

    /* Survivors still talk: a ring of 100 kB messages into the wildcard
     * receives that were posted before the kill (or after it, above). */
    fault_step("ring among survivors");
    fault_fill(ring_out, RING_LEN, (uint32_t)rank);
    REQUIRE_RC(xdev_send(dev, ring_out, RING_LEN, next_survivor(rank, size), TAG_RING, CTX), XDEV_OK);
    rc = fault_wait_for(&ring_req, &st, WAIT_LIMIT_S, &done);
    REQUIRE(rc == XDEV_OK && done, "wildcard ring receive did not complete (rc %d)", rc);
    int from = prev_survivor(rank, size);
    CHECK(st.error == XDEV_OK && st.source == from && st.count == RING_LEN,
          "wildcard receive: error %d (%s) source %d (want %d) count %zu", st.error,
          xdev_strerror(st.error), st.source, from, st.count);
    CHECK(fault_verify(ring_in, RING_LEN, (uint32_t)from) == (size_t)-1, "ring data from %d corrupted", from);
    CHECK_RC(fault_barrier_skip(dev, VICTIM), XDEV_OK);

    fault_step("xdev_finalize on a survivor");
    t0 = fault_now();
    rc = xdev_finalize(dev);
    dt = fault_now() - t0;
    fault_log("xdev_finalize returned %d (%s) after %.3f s", rc, xdev_strerror(rc), dt);
    CHECK(rc == XDEV_OK, "xdev_finalize with every request reaped returned %d (%s)", rc, xdev_strerror(rc));
    CHECK(dt < FAIL_BOUND_S, "xdev_finalize took %.3f s", dt);
    free(big);

    rc = fault_finish();
    if (rc == 0 && fault_write_result(rank, "ok") != 0) {
        fprintf(stderr, "rank %d: cannot write the result file\n", rank);
        rc = 1;
    }
    return rc;
}
