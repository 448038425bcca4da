/*
 * fault_replay.c - a TCP handshake recorded off loopback and played again
 * must not open a connection, nor harm the ranks it was recorded between.
 *
 * Run as `xdevrun -n 3 --transport tcp fault_replay`. Rank 0 plays someone
 * who recorded rank 1 dialing rank 2: it holds what such a recording holds,
 * rank 1's HELLO (a MAC under the job secret over fields the acceptor
 * never chose) and rank 1's PROOF answering rank 2's nonce of that earlier
 * session. Being a rank it has the job's key, so it makes those bytes with
 * the library's own MAC, and plays them to rank 2 from a plain socket:
 *   1. the HELLO alone: rank 2 answers with a REPLY (the HELLO's MAC is
 *      good), whose nonce Na1 becomes "the recorded session's", then
 *      closes the connection at its handshake timeout, adding nothing;
 *   2. the same HELLO, then the PROOF made for Na1: rank 2's new REPLY
 *      carries a fresh nonce, and the connection ends with no byte more.
 * Then ranks 1 and 2, which had not talked before, exchange messages. Had
 * rank 2 taken a replay for rank 1, it would hold a connection the
 * recorder hung up on, failing rank 1 as dead, or refuse rank 1's own
 * dial: rank 2 must see rank 1 alive and get exactly rank 1's messages.
 *
 * Coupling with the TCP transport, on purpose and only here: the handshake
 * layout of src/tcp/tcp_conn.c, and the address rank 2 publishes.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../src/tcp/tcp.h"
#include "fault_util.h"

#define CTX 7
#define NMSG 200
#define HELLO_MAGIC 0x33564458u /* "XDV3" */
#define REPLY_MAGIC 0x42564458u /* "XDVB" */
#define PROOF_MAGIC 0x50564458u /* "XDVP" */
#define CLOSE_BOUND_S 6.0       /* the acceptor's handshake timeout is 3 s */

/* Read exactly n bytes within bound_s; false on EOF, error or time out. */
static bool read_exact(int fd, uint8_t *buf, size_t n, double bound_s)
{
    double end = fault_now() + bound_s;
    size_t have = 0;
    while (have < n) {
        int left_ms = (int)((end - fault_now()) * 1000);
        if (left_ms <= 0 || poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, left_ms) <= 0)
            return false;
        ssize_t got = recv(fd, buf + have, n - have, 0);
        if (got <= 0)
            return false;
        have += (size_t)got;
    }
    return true;
}

/* The connection ends (EOF or reset) within bound_s with no byte more. */
static bool closes_silently(int fd, double bound_s, size_t *extra)
{
    double end = fault_now() + bound_s;
    *extra = 0;
    for (;;) {
        int left_ms = (int)((end - fault_now()) * 1000);
        if (left_ms <= 0 || poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, left_ms) <= 0)
            return false;
        uint8_t b[256];
        ssize_t got = recv(fd, b, sizeof b, 0);
        if (got == 0 || (got < 0 && errno == ECONNRESET))
            return *extra == 0;
        if (got < 0)
            return false;
        *extra += (size_t)got;
    }
}

static int dial(const struct sockaddr_storage *ss, socklen_t len)
{
    int fd = socket(ss->ss_family, SOCK_STREAM, 0);
    REQUIRE(fd >= 0, "socket: %s", strerror(errno));
    REQUIRE(connect(fd, (const struct sockaddr *)ss, len) == 0, "connect: %s", strerror(errno));
    return fd;
}

/* Send the recorded HELLO; return rank 2's REPLY nonce after checking the
 * REPLY is well formed and accepting. */
static uint64_t play_hello(int fd, const uint8_t *hello)
{
    REQUIRE(send(fd, hello, TCP_HELLO_BYTES, MSG_NOSIGNAL) == TCP_HELLO_BYTES, "send HELLO");
    uint8_t r[TCP_REPLY_BYTES];
    REQUIRE(read_exact(fd, r, sizeof r, CLOSE_BOUND_S), "no REPLY to a HELLO with a good MAC");
    CHECK(xdev_get_le32(r) == REPLY_MAGIC, "REPLY magic %08x", xdev_get_le32(r));
    CHECK(xdev_get_le32(r + 4) == 1, "rank 2 refused rank 1's HELLO (verdict %u): it had "
          "talked to rank 1 already, so the replay tested nothing", xdev_get_le32(r + 4));
    return xdev_get_le64(r + 16);
}

static void record_and_replay(xdev_t *dev)
{
    char addr[300];
    struct sockaddr_storage ss;
    socklen_t len;
    int found = 0; /* rank 2 publishes it from its xdev_init */
    for (double end = fault_now() + 20; !found && fault_now() < end; fault_sleep_ms(10))
        found = xdev_boot_lookup(dev, 2, "tcp", addr, sizeof addr);
    REQUIRE(found > 0, "rank 2's address: %d", found);
    REQUIRE(tcp_parse_addr(addr, &ss, &len) == XDEV_OK, "parse '%s'", addr);

    uint8_t hello[TCP_HELLO_BYTES] = { 0 };
    xdev_put_le32(hello, HELLO_MAGIC);
    xdev_put_le32(hello + 4, 1); /* from rank 1 */
    xdev_put_le32(hello + 8, 2); /* to rank 2 */
    xdev_put_le64(hello + 16, 16384);
    xdev_put_le64(hello + 24, 0x5eed5eed5eed5eedull); /* rank 1's nonce, recorded */
    xdev_put_le64(hello + 32, xdev_auth_mac(dev, hello, 32));

    fault_step("session 1: HELLO, no PROOF");
    int fd = dial(&ss, len);
    uint64_t na1 = play_hello(fd, hello);
    size_t extra;
    CHECK(closes_silently(fd, CLOSE_BOUND_S, &extra),
          "an unanswered REPLY: the connection did not end within %.0f s, or %zu bytes more came",
          CLOSE_BOUND_S, extra);
    close(fd);

    /* The PROOF rank 1 would have sent in session 1. */
    uint8_t proof[TCP_PROOF_BYTES], m[24];
    xdev_put_le32(proof, PROOF_MAGIC);
    xdev_put_le32(proof + 4, 1);
    memcpy(m, proof, 8);
    xdev_put_le64(m + 8, na1);
    xdev_put_le64(m + 16, xdev_get_le64(hello + 24));
    xdev_put_le64(proof + 8, xdev_auth_mac(dev, m, sizeof m));

    fault_step("session 2: HELLO and session 1's PROOF");
    fd = dial(&ss, len);
    uint64_t na2 = play_hello(fd, hello);
    CHECK(na2 != na1, "rank 2 challenged two sessions with the same nonce %016llx",
          (unsigned long long)na1);
    REQUIRE(send(fd, proof, sizeof proof, MSG_NOSIGNAL) == (ssize_t)sizeof proof, "send PROOF");
    double t0 = fault_now();
    CHECK(closes_silently(fd, CLOSE_BOUND_S, &extra),
          "a replayed PROOF: the connection did not end, or %zu bytes more came", extra);
    fault_log("replayed PROOF refused in %.3f s", fault_now() - t0);
    close(fd);
}

int main(void)
{
    fault_setup("fault_replay", 60);
    xdev_t *dev = NULL;
    int rank = fault_start(&dev, 3);
    char go = 'g';

    /* Ranks 1 and 2 wait on rank 0 only, so they do not connect yet. */
    if (rank == 0) {
        record_and_replay(dev);
        for (int r = 1; r <= 2; r++)
            REQUIRE_RC(xdev_send(dev, &go, 1, r, 0, CTX), XDEV_OK);
    } else {
        REQUIRE_RC(xdev_recv(dev, &go, 1, 0, 0, CTX, NULL), XDEV_OK);
    }

    fault_step("ranks 1 and 2 talk");
    if (rank > 0) {
        int peer = 3 - rank;
        for (uint32_t i = 0; i < NMSG; i++) {
            uint32_t out = (uint32_t)rank << 24 | i, in = 0;
            xdev_request_t rr;
            xdev_status_t st;
            REQUIRE_RC(xdev_irecv(dev, &in, sizeof in, peer, 1, CTX, &rr), XDEV_OK);
            CHECK_RC(xdev_send(dev, &out, sizeof out, peer, 1, CTX), XDEV_OK);
            REQUIRE_RC(xdev_wait(&rr, &st), XDEV_OK);
            CHECK(st.error == XDEV_OK && st.source == peer && in == ((uint32_t)peer << 24 | i),
                  "message %u from rank %d: error %d, source %d, value %08x", i, peer, st.error,
                  st.source, in);
        }
        int state = xdev_peer_state(dev, peer);
        CHECK(state == XDEV_PEER_ALIVE, "rank %d sees rank %d in state %d", rank, peer, state);
        int found = 1;
        xdev_status_t st;
        CHECK_RC(xdev_iprobe(dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX, &found, &st), XDEV_OK);
        CHECK(!found, "a message nobody sent: from %d, tag %d", st.source, st.tag);
    }
    fault_barrier(dev);
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
