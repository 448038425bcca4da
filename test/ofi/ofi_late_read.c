/*
 * ofi_late_read.c - a receive whose data the provider is still reading
 * when its sender fails: once the receive has ended, no byte may land in
 * its buffer. Over ofi the receiver reads a rendezvous's data from the
 * sender (fi_read); a provider answers that read whenever the sender's
 * side serves it, also after xdev has given up on the sender.
 *
 * Run as `xdevrun -n 2 ofi_late_read` over udp;ofi_rxd with
 * XDEV_PEER_TIMEOUT_MS=4000. Rank 1 runs in a PID namespace of its own
 * (unshare), so rank 0 cannot watch its pid and judges it by pings, as a
 * peer on another host. Rank 1 offers rank 0 a BIG-byte message and stops
 * (SIGSTOP) before serving rank 0's reads; rank 0 fails it after the peer
 * timeout. Rank 1 continues after STOP_S, past that but within a second
 * peer timeout, and serves the reads. Rank 0 fills its buffer with a
 * pattern the moment its receive ends, and checks for 4 s that nothing
 * overwrites it: the library may end the receive only once the provider
 * has let go of the buffer.
 *
 * The other way round (XDEV_OFI_RMA=write), rank 0 replies to the offer
 * exposing its buffer, and rank 1 writes into it with the key it was
 * given. `ofi_late_read write`: rank 1 stops with the offer out, for
 * STOP_LONG_S, past rank 0's failing it and holding the region a peer
 * timeout more, then writes. Rank 0 must have closed the region as the
 * receive ended, so that its provider refuses the write. `ofi_late_read
 * write-begun`: rank 1 stops WRITE_S into its write, for STOP_S; its
 * provider (rxd checks the key once per operation) finishes the write
 * when it continues, which rank 0 must wait for. Rank 1 keeps rank 0's
 * peer timeout in both, so that its send ends in time too.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 11
#define TAG_BIG 1
#define TAG_NEVER 2
#define TAG_WARM 3
#define BIG (16u << 20)
#define STOP_S 6.0
#define STOP_LONG_S 12.0
#define WRITE_S 0.02
#define WATCH_S 4.0
#define BOUND_S 40.0
#define PATTERN 0xa5
#define NS_MARK "OFI_LATE_READ_NS"

/* Rank 1 starts again inside a new PID namespace, as its init's child:
 * init ignores a SIGSTOP it sends itself. */
static void enter_pid_namespace(char **argv)
{
    if (!getenv(NS_MARK)) {
        setenv(NS_MARK, "1", 1);
        char *args[64] = { "unshare", "--pid", "--fork", "--kill-child" };
        int n = 4;
        if (getuid() != 0) {
            args[n++] = "--user";
            args[n++] = "--map-root-user";
        }
        for (int i = 0; argv[i] && n < 63; i++)
            args[n++] = argv[i];
        args[n] = NULL;
        execvp("unshare", args);
        fault_fail(__FILE__, __LINE__, "cannot run unshare");
        fault_abort();
    }
    if (getpid() != 1)
        return;
    pid_t child = fork();
    REQUIRE(child >= 0, "fork");
    if (child == 0)
        return;
    int status;
    while (waitpid(child, &status, 0) < 0)
        ;
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

static void warm_up(xdev_t *dev, int rank)
{
    char out = 'w', in = 0;
    xdev_status_t st;
    if (rank == 0) {
        REQUIRE_RC(xdev_send(dev, &out, 1, 1, TAG_WARM, CTX), XDEV_OK);
        REQUIRE_RC(xdev_recv(dev, &in, 1, 1, TAG_WARM, CTX, &st), XDEV_OK);
    } else {
        REQUIRE_RC(xdev_recv(dev, &in, 1, 0, TAG_WARM, CTX, &st), XDEV_OK);
        REQUIRE_RC(xdev_send(dev, &out, 1, 0, TAG_WARM, CTX), XDEV_OK);
    }
}

static void sender(xdev_t *dev, unsigned char *buf, double write_s, double stop_s)
{
    xdev_request_t req;
    xdev_status_t st;
    int done = 0;
    fault_fill(buf, BIG, 7);
    REQUIRE_RC(xdev_isend(dev, buf, BIG, 0, TAG_BIG, CTX, &req), XDEV_OK);
    for (double until = fault_now() + write_s; !done && fault_now() < until;)
        CHECK_RC(xdev_test(&req, &done, &st), XDEV_OK);
    REQUIRE(!done, "the send ended before rank 1 stopped");
    fault_step(write_s ? "stopped with its write begun" : "stopped with the offer out");
    fault_stop_self(stop_s);
    fault_step("continued");
    CHECK_RC(fault_wait_for(&req, &st, BOUND_S, &done), XDEV_OK);
    REQUIRE(done, "the send still pending after %.0f s", BOUND_S);
    CHECK(st.error == XDEV_OK || st.error == XDEV_ERR_PEER, "send: status.error %d (%s)",
          st.error, xdev_strerror(st.error));
    /* Serve whatever rank 0's provider still asks of ours. */
    double end = fault_now() + WATCH_S;
    while (fault_now() < end) {
        int flag;
        xdev_iprobe(dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX, &flag, &st);
        fault_sleep_ms(1);
    }
}

static void receiver(xdev_t *dev, unsigned char *buf)
{
    xdev_request_t big, never;
    xdev_status_t st;
    int done, never_done = 0;
    memset(buf, 0, BIG);
    REQUIRE_RC(xdev_irecv(dev, buf, BIG, 1, TAG_BIG, CTX, &big), XDEV_OK);
    REQUIRE_RC(xdev_irecv(dev, NULL, 0, 1, TAG_NEVER, CTX, &never), XDEV_OK);
    fault_step("waiting for the receive to end");
    CHECK_RC(fault_wait_for(&big, &st, BOUND_S, &done), XDEV_OK);
    REQUIRE(done, "the receive still pending after %.0f s", BOUND_S);
    /* How far a write had come (its first wrong byte), for the log. */
    size_t written = fault_verify(buf, BIG, 7);
    memset(buf, PATTERN, BIG);
    double ended = fault_now();
    fault_log("receive ended: error %d (%s), %zu bytes; %zu bytes written", st.error,
              xdev_strerror(st.error), st.count, written == (size_t)-1 ? (size_t)BIG : written);
    /* Rank 1 served no read before rank 0 failed it. */
    CHECK(st.error == XDEV_ERR_PEER, "receive: status.error %d (%s), want XDEV_ERR_PEER",
          st.error, xdev_strerror(st.error));
    fault_step("watching the buffer");
    while (fault_now() < ended + WATCH_S) {
        xdev_status_t nst;
        int flag;
        if (!never_done)
            CHECK_RC(xdev_test(&never, &never_done, &nst), XDEV_OK);
        xdev_iprobe(dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX, &flag, &nst); /* progress */
        fault_sleep_ms(1);
    }
    for (size_t i = 0; i < BIG; i++)
        if (buf[i] != PATTERN) {
            fault_fail(__FILE__, __LINE__,
                       "byte %zu of the buffer changed after its receive ended", i);
            break;
        }
    CHECK(never_done, "the receive that names rank 1 did not fail");
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "read";
    bool begun = strcmp(mode, "write-begun") == 0;
    bool write = begun || strcmp(mode, "write") == 0;
    const char *r = getenv("XDEV_RANK");
    int rank = r ? atoi(r) : -1;
    if (write)
        setenv("XDEV_OFI_RMA", "write", 1);
    if (rank == 1) {
        enter_pid_namespace(argv);
        /* It may not judge rank 0 by a ping that was out when it stopped. */
        if (!write)
            setenv("XDEV_PEER_TIMEOUT_MS", "60000", 1);
    }
    fault_setup("ofi_late_read", 90);
    xdev_t *dev;
    REQUIRE_RC(xdev_init(NULL, &dev), XDEV_OK);
    unsigned char *buf = malloc(BIG);
    REQUIRE(buf, "out of memory");
    warm_up(dev, rank);
    if (rank == 0)
        receiver(dev, buf);
    else if (rank == 1)
        sender(dev, buf, begun ? WRITE_S : 0, write && !begun ? STOP_LONG_S : STOP_S);
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    free(buf);
    return fault_finish();
}
