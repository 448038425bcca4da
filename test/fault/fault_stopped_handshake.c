/*
 * fault_stopped_handshake.c - a rank stopped in the middle of a TCP
 * handshake for longer than the other side's handshake timeout (3 s) is
 * still alive: the connection is made when it continues, and nothing is
 * lost.
 *
 * Run as `xdevrun -n 2 --transport tcp fault_stopped_handshake MODE`, with
 * XDEV_PEER_TIMEOUT_MS well above STOP_S. Rank 1 starts a send to rank 0,
 * so it dials and sends its HELLO, while rank 0 makes no call for
 * ACCEPTOR_LATE_S: the HELLO waits in rank 0's socket. Then
 *   dialer: rank 1 stops itself (SIGSTOP; a child continues it after
 *     STOP_S). Rank 0 answers the HELLO and, as rank 1 stays stopped past
 *     the timeout, closes the connection. (Before the acceptor said
 *     OPENED, rank 1 opened its end on its own PROOF, found the
 *     connection closed and failed rank 0 as dead.)
 *   acceptor: rank 0 stops itself as soon as its accepting REPLY has
 *     left, so rank 1's PROOF waits in its socket past the timeout.
 *     (When the dialer gave up on OPENED after 3 s, rank 0 then opened a
 *     connection rank 1 had closed, failed rank 1 as dead, and refused
 *     its next dials.)
 * When the stopped rank continues, rank 1's send and a reply from rank 0
 * must both complete, intact, and each must still see the other alive. A
 * rendezvous-sized message from rank 0 then checks the pair is whole.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 9
#define SMALL 64
#define BIG (1u << 20)
#define ACCEPTOR_LATE_S 0.5 /* rank 0 silent this long after init */
#define DIAL_S 0.2          /* rank 1 progresses this long, then stops */
#define STOP_S 6.0          /* past the acceptor's handshake timeout (3 s) by far */
#define BOUND_S 30.0
#define REPLY_BYTES 32      /* the acceptor's REPLY (src/tcp/tcp_conn.c) */

static bool stop_after_reply;

/* The library's send calls come here (linked with -Wl,--wrap=send): the
 * handshake's messages go out with send, its data with sendmsg. */
ssize_t __real_send(int fd, const void *buf, size_t len, int flags);
ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags);

ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags)
{
    ssize_t n = __real_send(fd, buf, len, flags);
    /* "XDVB", then the verdict: 1, accepted */
    static const uint8_t accepting[8] = { 'X', 'D', 'V', 'B', 1, 0, 0, 0 };
    if (stop_after_reply && n == REPLY_BYTES && !memcmp(buf, accepting, sizeof accepting)) {
        stop_after_reply = false;
        fault_step("stopped after the REPLY");
        fault_stop_self(STOP_S);
        fault_step("continued");
    }
    return n;
}

static void wait_ok(xdev_request_t *req, const char *what, size_t len)
{
    xdev_status_t st;
    int done;
    CHECK_RC(fault_wait_for(req, &st, BOUND_S, &done), XDEV_OK);
    REQUIRE(done, "%s still pending after %.0f s", what, BOUND_S);
    CHECK(st.error == XDEV_OK, "%s: status.error %d (%s)", what, st.error,
          xdev_strerror(st.error));
    CHECK(st.count == len, "%s: %zu bytes, want %zu", what, st.count, len);
}

static void recv_checked(xdev_t *dev, int from, size_t len, uint32_t seed)
{
    unsigned char *in = malloc(len);
    REQUIRE(in, "out of memory");
    xdev_request_t req;
    REQUIRE_RC(xdev_irecv(dev, in, len, from, 1, CTX, &req), XDEV_OK);
    wait_ok(&req, "receive", len);
    size_t bad = fault_verify(in, len, seed);
    CHECK(bad == (size_t)-1, "%zu-byte message: byte %zu is wrong", len, bad);
    free(in);
}

static void send_checked(xdev_t *dev, int to, size_t len, uint32_t seed)
{
    unsigned char *out = malloc(len);
    REQUIRE(out, "out of memory");
    fault_fill(out, len, seed);
    xdev_request_t req;
    REQUIRE_RC(xdev_isend(dev, out, len, to, 1, CTX, &req), XDEV_OK);
    wait_ok(&req, "send", len);
    free(out);
}

int main(int argc, char **argv)
{
    fault_setup("fault_stopped_handshake", 90);
    if (argc != 2 || (strcmp(argv[1], "dialer") && strcmp(argv[1], "acceptor"))) {
        fprintf(stderr, "usage: xdevrun -n 2 --transport tcp %s dialer|acceptor\n", argv[0]);
        return 2;
    }
    bool dialer_stops = !strcmp(argv[1], "dialer");
    xdev_t *dev;
    int rank = fault_start(&dev, 2);

    if (rank == 1) {
        unsigned char out[SMALL];
        fault_fill(out, sizeof out, 1);
        xdev_request_t req;
        fault_step("dialing rank 0");
        REQUIRE_RC(xdev_isend(dev, out, sizeof out, 0, 1, CTX, &req), XDEV_OK);
        for (double end = fault_now() + DIAL_S; fault_now() < end; fault_sleep_ms(1)) {
            int done;
            xdev_status_t st;
            CHECK_RC(xdev_test(&req, &done, &st), XDEV_OK);
            REQUIRE(!done, "the send completed before rank 0 made a call: the test proves nothing");
        }
        if (dialer_stops) {
            fault_step("stopped");
            fault_stop_self(STOP_S);
            fault_step("continued");
        }
        wait_ok(&req, "send after the stop", SMALL);
        recv_checked(dev, 0, SMALL, 2);
        recv_checked(dev, 0, BIG, 3);
    } else {
        fault_sleep_ms((int)(ACCEPTOR_LATE_S * 1000));
        /* A receive naming rank 1 would dial it, and our dial would win:
         * only a probe for any source leaves the dialing to rank 1. */
        fault_step("answering rank 1");
        stop_after_reply = !dialer_stops;
        int found = 0;
        xdev_status_t st;
        for (double end = fault_now() + BOUND_S; !found && fault_now() < end; fault_sleep_ms(1))
            CHECK_RC(xdev_iprobe(dev, XDEV_ANY_SOURCE, 1, CTX, &found, &st), XDEV_OK);
        REQUIRE(found, "no message from rank 1 within %.0f s", BOUND_S);
        recv_checked(dev, 1, SMALL, 1);
        send_checked(dev, 1, SMALL, 2);
        send_checked(dev, 1, BIG, 3);
    }
    int other = 1 - rank;
    CHECK(xdev_peer_state(dev, other) == XDEV_PEER_ALIVE, "xdev_peer_state(%d) = %d, want alive",
          other, xdev_peer_state(dev, other));
    fault_barrier(dev);
    fault_step("xdev_finalize");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
