/*
 * sizes.c - case "sizes": messages of every size arrive whole.
 *
 * 0 and 1 bytes, small odd sizes, both sides of the eager/rendezvous switch
 * (64 KiB - 1, 64 KiB, 64 KiB + 1 and the same around the configured eager
 * limit), 1 MiB, 64 MiB, and - only in a 2-rank job - one message of
 * 2 GiB + 5 bytes from rank 0 to rank 1, a count that does not fit in an
 * int. Every receive's status.count and every send's status are checked.
 * Then 0, 1 and 8 bytes and both sides of the eager limit with the
 * blocking calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

enum { CTX_SIZES = 40, CTX_HUGE, TAG = 3 };
#define SLACK 13 /* extra room in the "bigger buffer" receives */

/* Ring exchange of one size: receive posted first into an exact buffer, or
 * posted after the send into a bigger one. */
static void exchange(size_t len, int prepost, uint64_t seed)
{
    h_phase("sizes: %zu bytes, %s", len, prepost ? "receive posted first, exact buffer"
                                                 : "receive posted late, bigger buffer");
    size_t cap = prepost ? len : len + SLACK;
    unsigned char *sb = h_malloc(len), *rb = h_malloc(cap);
    xdev_request_t sq, rq;
    xdev_status_t st;
    h_fill(sb, len, seed, h_rank);
    if (prepost)
        CHECK_RC(xdev_irecv(h_dev, rb, cap, h_prev(), TAG, CTX_SIZES, &rq));
    h_barrier();
    CHECK_RC(xdev_isend(h_dev, sb, len, h_next(), TAG, CTX_SIZES, &sq));
    if (!prepost)
        CHECK_RC(xdev_irecv(h_dev, rb, cap, h_prev(), TAG, CTX_SIZES, &rq));
    char what[96];
    snprintf(what, sizeof what, "%zu-byte message (%s)", len, prepost ? "posted" : "late");
    CHECK_RC(xdev_wait(&rq, &st));
    CHECK_STATUS(&st, h_prev(), TAG, CTX_SIZES, XDEV_OK, len, what);
    CHECK_DATA(rb, len, seed, h_prev(), what);
    WAIT_SEND(&sq, len, what);
    free(sb), free(rb);
}

/* Blocking xdev_send and xdev_recv to the rank `dist` ahead, even ranks
 * sending first: the path of a transport's short tier (the message goes
 * whole at once, with no request) and of those that have none. At 8 ranks
 * dist 3 makes the first 0-byte send the first message on its connection
 * (nothing before this touched ranks 3 apart), which a transport with no
 * short tier must not be handed as one. Past the eager limit a blocking
 * send must not go as the short tier even where that tier is longer
 * (tcp's 4 KiB with XDEV_EAGER_LIMIT=1000): the receiver takes an eager
 * message longer than its sender's limit as a protocol error and fails
 * that peer (XDEV_ERR_PEER). */
static void blocking(size_t len, uint64_t seed)
{
    h_phase("sizes: %zu bytes, blocking send and receive", len);
    int dist = h_size > 4 ? 3 : 1;
    int to = (h_rank + dist) % h_size, from = (h_rank + h_size - dist) % h_size;
    unsigned char *sb = h_malloc(len + 1), *rb = h_malloc(len + SLACK);
    xdev_status_t st;
    char what[64];
    snprintf(what, sizeof what, "%zu-byte blocking send", len);
    h_fill(sb, len, seed, h_rank);
    for (int turn = 0; turn < 2; turn++) {
        if ((h_rank % 2 == 0) == (turn == 0)) {
            CHECK_RC(xdev_send(h_dev, sb, len, to, TAG, CTX_SIZES));
        } else {
            CHECK_RC(xdev_recv(h_dev, rb, len + SLACK, from, TAG, CTX_SIZES, &st));
            CHECK_STATUS(&st, from, TAG, CTX_SIZES, XDEV_OK, len, what);
            CHECK_DATA(rb, len, seed, from, what);
        }
    }
    free(sb), free(rb);
    h_barrier();
}

/* Sizes with duplicates removed, in increasing order. */
static int size_list(size_t *out)
{
    size_t cand[] = {0, 1, 2, 3, 7, 8, 9, 100, 1000, 4096,
                     64 * KiB - 1, 64 * KiB, 64 * KiB + 1,
                     h_eager ? h_eager - 1 : 0, h_eager, h_eager + 1,
                     1 * MiB + 3, 64 * MiB};
    int n = 0;
    for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
        size_t s = cand[i];
        if (s > 64 * MiB)
            continue; /* an eager limit beyond 64 MiB adds nothing here */
        int dup = 0;
        for (int j = 0; j < n; j++)
            dup |= out[j] == s;
        if (dup)
            continue;
        int j = n++;
        while (j > 0 && out[j - 1] > s) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = s;
    }
    return n;
}

/* 2 GiB + 5 bytes from rank 0 to rank 1; 8 guard bytes after the receive
 * buffer prove nothing beyond the message is written. */
static void huge(void)
{
    const size_t len = 2 * GiB + 5, guard = 8;
    const uint64_t seed = 99;
    h_barrier();
    if (h_rank == 0) {
        h_phase("sizes: sending 2 GiB + 5 bytes to rank 1");
        unsigned char *b = h_malloc(len);
        h_fill(b, len, seed, 0);
        double t0 = h_now();
        CHECK_RC(xdev_send(h_dev, b, len, 1, TAG, CTX_HUGE));
        printf("sizes: rank 0 sent %zu bytes in %.2f s\n", len, h_now() - t0);
        free(b);
    } else if (h_rank == 1) {
        h_phase("sizes: receiving 2 GiB + 5 bytes from rank 0");
        unsigned char *b = h_malloc(len + guard);
        memset(b + len, H_GUARD_BYTE, guard);
        xdev_status_t st;
        CHECK_RC(xdev_recv(h_dev, b, len + guard, 0, TAG, CTX_HUGE, &st));
        CHECK_STATUS(&st, 0, TAG, CTX_HUGE, XDEV_OK, len, "2 GiB + 5 byte message");
        h_phase("sizes: verifying 2 GiB + 5 bytes");
        CHECK_DATA(b, len, seed, 0, "2 GiB + 5 byte message");
        size_t bad = h_verify_const(b + len, guard, H_GUARD_BYTE);
        CHECK(bad == H_GOOD, "byte %zu past the end of the 2 GiB + 5 byte message was written",
              bad);
        free(b);
    }
    h_barrier();
}

void case_sizes(void)
{
    size_t sizes[32];
    int n = size_list(sizes);
    for (int i = 0; i < n; i++) {
        exchange(sizes[i], 1, 100 + (uint64_t)i);
        exchange(sizes[i], 0, 200 + (uint64_t)i);
    }
    h_barrier();
    blocking(0, 300);
    blocking(1, 301);
    blocking(8, 302);
    blocking(h_eager, 303);
    blocking(h_eager + 1, 304);
    h_barrier();
    if (h_size == 2)
        huge();
}
