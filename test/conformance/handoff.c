/*
 * handoff.c - case "handoff": a thread blocked on the device gets in while
 * another thread's wait keeps traffic moving. Rank 0's thread A waits for
 * one message from rank 1; a few ms in, thread B sends one byte, and its
 * send must return long before A's wait does. Three rounds:
 *  - a flood: 100,000 small messages arrive before the one A waits for,
 *    so A's wait never runs out of work; it must give B a turn at the lock
 *    (progress.c) instead of keeping it until the flood is over, and so
 *    each of its polls must end while the flood goes on (tcp.c's
 *    run_service);
 *  - a single copy: A waits for 256 MiB, which shm moves with one copy
 *    from rank 1's memory; the copy must go in pieces, with the lock let
 *    go between them, not in one system call that holds it throughout.
 *    B comes 10 ms in (the copy takes about 30), when A's wait has
 *    stopped spinning and yielding (5 ms, progress.c): it only polls, its
 *    transport being busy (shm_arm), and must still give B a turn. Over
 *    tcp the socket may never run dry while rank 1 writes as fast as A
 *    reads, so each poll must stop after a piece (XDEV_TP_PASS_BYTES).
 *    Over ofi a provider may copy a whole RMA op in the call that posts
 *    it (libfabric's shm does), so ofi posts ops that long and stops
 *    after one while B waits for the lock (ofi_rma_flush);
 *  - sending: the same the other way, A sends the 256 MiB and B probes;
 *    over tcp each poll must stop after writing a piece, the socket
 *    never filling up while rank 1 reads. Over ofi, tcp;ofi_rxm serves
 *    rank 1's reads inside A's fi_cq_read, as many bytes as it asked
 *    for, so rank 1 keeps no more than 16 MiB of them in flight.
 * On a loaded machine thread B may first run when A's wait is nearly over,
 * and then the times say nothing: such a round is run again (rank 0 tells
 * the others), up to ATTEMPTS times. Ranks past 1 only take part in the
 * barriers.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

enum { CTX_HANDOFF = 95, TAG_FLOOD = 1, TAG_WAITED = 2, TAG_B = 3, FLOOD = 100000 };
enum { TAG_AGAIN = 4, ATTEMPTS = 20 }; /* TAG_AGAIN on the harness's control context */
#define BIG (256 * MiB)
/* B must return this long before A, having called this much before A returned */
#define MARGIN 0.002
#define TELLING (3 * MARGIN)

static double b_called, b_returned;
static bool a_sends; /* this round thread A sends the message, and B probes */

static void *thread_b(void *arg)
{
    h_sleep_ms(*(const int *)arg);
    char one = 'b';
    int found;
    xdev_status_t st;
    b_called = h_now();
    if (a_sends)
        CHECK_RC(xdev_iprobe(h_dev, 1, TAG_B, CTX_HANDOFF, &found, &st));
    else
        CHECK_RC(xdev_send(h_dev, &one, 1, 1, TAG_B, CTX_HANDOFF));
    b_returned = h_now();
    return NULL;
}

static void sender(unsigned char *buf, size_t len, int flood)
{
    char small[64] = { 0 }, one = 0;
    xdev_status_t st;
    h_barrier();
    for (int i = 0; i < flood; i++)
        CHECK_RC(xdev_send(h_dev, small, sizeof small, 0, TAG_FLOOD, CTX_HANDOFF));
    CHECK_RC(xdev_send(h_dev, buf, len, 0, TAG_WAITED, CTX_HANDOFF));
    CHECK_RC(xdev_recv(h_dev, &one, 1, 0, TAG_B, CTX_HANDOFF, &st));
    CHECK(one == 'b', "thread B's byte");
}

/* Rank 1 when thread A sends: it receives A's message (B only probes). */
static void receiver(unsigned char *buf, size_t len)
{
    xdev_request_t r;
    xdev_status_t st;
    memset(buf, 0, len);
    CHECK_RC(xdev_irecv(h_dev, buf, len, 0, TAG_WAITED, CTX_HANDOFF, &r));
    h_barrier();
    CHECK_RC(xdev_wait(&r, &st));
    CHECK_STATUS(&st, 0, TAG_WAITED, CTX_HANDOFF, XDEV_OK, len, "receiving A's message");
    CHECK_DATA(buf, len, 77, 0, "receiving A's message");
}

/* Whether the round told anything (else it is run again). */
static bool waiter(unsigned char *buf, size_t len, int flood, int b_ms, const char *round)
{
    xdev_request_t r;
    xdev_status_t st;
    memset(buf, 0, len);
    if (a_sends)
        h_fill(buf, len, 77, 0);
    else
        CHECK_RC(xdev_irecv(h_dev, buf, len, 1, TAG_WAITED, CTX_HANDOFF, &r));
    h_barrier();
    pthread_t b;
    CHECK(pthread_create(&b, NULL, thread_b, &b_ms) == 0, "pthread_create");
    h_phase("%s: waiting while thread B %s", round, a_sends ? "probes" : "sends");
    if (a_sends)
        CHECK_RC(xdev_send(h_dev, buf, len, 1, TAG_WAITED, CTX_HANDOFF));
    else
        CHECK_RC(xdev_wait(&r, &st));
    double a_returned = h_now();
    pthread_join(b, NULL);
    if (!a_sends) {
        CHECK_STATUS(&st, 1, TAG_WAITED, CTX_HANDOFF, XDEV_OK, len, round);
        CHECK_DATA(buf, len, 77, 1, round);
    }
    char small[64];
    for (int i = 0; i < flood; i++) /* the flood, unexpected until now */
        CHECK_RC(xdev_recv(h_dev, small, sizeof small, 1, TAG_FLOOD, CTX_HANDOFF, &st));
    if (b_called + TELLING > a_returned)
        return false;
    /* Without the hand-over B gets the lock only when A lets go, at the
     * end: the two return within microseconds of each other. */
    CHECK(b_returned + MARGIN < a_returned,
          "%s: thread B's %s, called %.2f ms before thread A's %s returned, returned "
          "%.2f ms before it: it waited for nearly all of A's traffic", round,
          a_sends ? "probe" : "send", (a_returned - b_called) * 1e3, a_sends ? "send" : "wait",
          (a_returned - b_returned) * 1e3);
    return true;
}

typedef struct {
    size_t len;
    int flood, b_ms;
    bool a_sends; /* thread A sends the message (and B probes) */
    const char *name;
} round_t;

/* One attempt at a round, every rank; returns whether to run it again,
 * which rank 0 decides and tells the others. */
static bool attempt(const round_t *rd, unsigned char *big, int nth)
{
    uint64_t again = 0;
    a_sends = rd->a_sends;
    if (h_rank == 1 && rd->a_sends) {
        receiver(big, rd->len);
    } else if (h_rank == 1) {
        h_fill(big, rd->len, 77, 1);
        sender(big, rd->len, rd->flood);
    } else if (h_rank == 0) {
        again = !waiter(big, rd->len, rd->flood, rd->b_ms, rd->name);
        CHECK(!again || nth < ATTEMPTS,
              "%s: in %d attempts thread B never called its send %.0f ms before "
              "thread A's wait returned", rd->name, ATTEMPTS, TELLING * 1e3);
    } else {
        h_barrier();
    }
    if (h_rank == 0)
        for (int r = 1; r < h_size; r++)
            h_send_u64(r, TAG_AGAIN, again);
    else
        again = h_recv_u64(0, TAG_AGAIN);
    h_barrier();
    return again != 0;
}

void case_handoff(void)
{
    CHECK(h_size >= 2, "handoff needs 2 ranks");
    unsigned char *big = h_rank <= 1 ? h_malloc(BIG) : NULL;
    static const round_t rounds[] = {
        { 64, FLOOD, 3, false, "flood" },
        { BIG, 0, 10, false, "single copy" },
        { BIG, 0, 10, true, "sending" },
    };
    for (size_t i = 0; i < sizeof rounds / sizeof rounds[0]; i++)
        for (int nth = 1; attempt(&rounds[i], big, nth); nth++)
            ;
    free(big);
}
