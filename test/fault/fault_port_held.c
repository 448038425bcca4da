/*
 * fault_port_held.c - a rank dies and its TCP port stays held by a process
 * that never answers: the survivor's requests to it must still fail within
 * the peer timeout, not wait for a handshake reply for ever.
 *
 * Run as `xdevrun -n 2 --transport tcp fault_port_held` with
 * XDEV_PEER_TIMEOUT_MS=3000. Rank 1 starts its device (publishing its
 * address; no connection is made yet), forks a child that inherits the
 * listening socket and only sleeps, and exits without finalizing. The
 * kernel completes rank 0's connect on the child's backlog, so rank 0's
 * HELLO goes to a listener nobody reads. Rank 0 receives from rank 1: it
 * must get XDEV_ERR_PEER within the timeout plus the handshake's bound.
 * Then the blocking probes of the dead rank, with nothing left from it,
 * fail with XDEV_ERR_PEER and a status that says so (tag XDEV_ANY_TAG),
 * not one left as it was, which a caller could take for a cut marker.
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 9
#define TAG 1

int main(void)
{
    fault_setup("fault-port-held", 60);
    xdev_t *dev = NULL;
    int rank = fault_start(&dev, 2);
    if (rank == 1) {
        fault_step("leaving the port to a child that never answers");
        pid_t pid = fork();
        REQUIRE(pid >= 0, "fork failed");
        if (pid == 0) {
            sleep(7); /* holds the listening socket; its exit would end the wait too */
            _exit(0);
        }
        _exit(0); /* dies without finalizing */
    }
    fault_step("receiving from the dead rank whose port is held");
    double t0 = fault_now();
    char buf[8];
    xdev_status_t st;
    int rc = xdev_recv(dev, buf, sizeof buf, 1, TAG, CTX, &st);
    double took = fault_now() - t0;
    fault_log("xdev_recv returned %d (%s) after %.2f s", rc, xdev_strerror(rc), took);
    CHECK(rc == XDEV_ERR_PEER, "xdev_recv from a dead rank returned %d (%s), want XDEV_ERR_PEER", rc,
          xdev_strerror(rc));
    /* 3 s with the bound; without it, only the holder's exit at 7 s ends it */
    CHECK(took < 6, "the failure took %.2f s: the peer timeout and the handshake bound are 3 s", took);
    for (int mprobe = 0; mprobe < 2; mprobe++) {
        xdev_status_t ps = { .source = 7, .tag = 7, .ctx = 7, .error = XDEV_OK, .count = 7 };
        xdev_message_t msg;
        rc = mprobe ? xdev_mprobe(dev, 1, TAG, CTX, &msg, &ps) : xdev_probe(dev, 1, TAG, CTX, &ps);
        CHECK(rc == XDEV_ERR_PEER && ps.source == 1 && ps.tag == XDEV_ANY_TAG && ps.ctx == CTX &&
                  ps.error == XDEV_ERR_PEER && ps.count == 0,
              "%s of the dead rank: %d, status {%d, %d, %d, %d, %zu}", mprobe ? "xdev_mprobe" : "xdev_probe",
              rc, ps.source, ps.tag, ps.ctx, ps.error, ps.count);
    }
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
