/*
 * shm_copy_once_eager.c - with XDEV_SHM_CMA_MIN under the eager limit
 * (meson.build runs it with 8k), messages from that size up are copied
 * once, as rendezvous offers the receiver reads, and still behave as the
 * eager messages they stand for:
 *   - two ranks that each send the other one with xdev_send before either
 *     receives both finish (an offer not read until its receive is posted
 *     would leave both senders waiting for good; xdevrun's timeout ends it);
 *   - rendezvous_sent counts the messages copied once: from the threshold
 *     up, not under it, and never a synchronous send, whose offer may not
 *     be read before it is matched;
 *   - every byte arrives, around the threshold and the eager limit, with
 *     the receive posted before the message and after it.
 * Skipped (77) where Yama keeps a process that is not root from reading
 * another: such sends stay eager there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev.h"
#include "../check.h"
#include "single_copy.h"

#define CTX 9
#define THRESHOLD (8u << 10) /* XDEV_SHM_CMA_MIN in meson.build */
#define BIG (64u << 10)      /* the default eager limit */

static unsigned char pattern(size_t i, int from, size_t len)
{
    return (unsigned char)(i * 13 + (size_t)from * 31 + len + 3);
}

static void fill(unsigned char *b, size_t len, int from)
{
    for (size_t i = 0; i < len; i++) b[i] = pattern(i, from, len);
}

static void check_bytes(const unsigned char *b, size_t len, int from, const xdev_status_t *st)
{
    CHECK(st->error == XDEV_OK && st->count == len, "%zu bytes from %d: error %d, count %zu", len,
          from, st->error, st->count);
    size_t i = 0;
    while (i < len && b[i] == pattern(i, from, len)) i++;
    CHECK(i == len, "%zu bytes from %d: byte %zu is wrong", len, from, i);
}

static uint64_t rendezvous_sent(xdev_t *dev)
{
    xdev_stats_t s;
    CHECK(xdev_stats(dev, &s) == XDEV_OK, "stats");
    return s.rendezvous_sent;
}

/* Both ranks send len bytes to each other, then receive. */
static void head_to_head(xdev_t *dev, unsigned char *out, unsigned char *in, size_t len, int sync)
{
    int me = xdev_rank(dev), peer = 1 - me;
    xdev_status_t st;
    fill(out, len, me);
    memset(in, 0, len);
    if (sync) { /* ssend waits for its match: one side receives first */
        xdev_request_t r;
        CHECK(xdev_irecv(dev, in, len, peer, 1, CTX, &r) == XDEV_OK, "irecv");
        CHECK(xdev_ssend(dev, out, len, peer, 1, CTX) == XDEV_OK, "ssend %zu", len);
        CHECK(xdev_wait(&r, &st) == XDEV_OK, "wait");
    } else {
        CHECK(xdev_send(dev, out, len, peer, 1, CTX) == XDEV_OK, "send %zu", len);
        CHECK(xdev_recv(dev, in, len, peer, 1, CTX, &st) == XDEV_OK, "recv %zu", len);
    }
    check_bytes(in, len, peer, &st);
}

static void counted(xdev_t *dev, unsigned char *out, unsigned char *in, size_t len, int sync,
                    uint64_t want)
{
    uint64_t before = rendezvous_sent(dev);
    head_to_head(dev, out, in, len, sync);
    uint64_t got = rendezvous_sent(dev) - before;
    CHECK(got == want, "%s of %zu bytes: %llu sent by rendezvous, want %llu",
          sync ? "ssend" : "send", len, (unsigned long long)got, (unsigned long long)want);
}

/* Rank 0 sends each size twice: to a receive posted first, then to one
 * posted after the message is in (rank 1 waits for a go first). */
static void both_orders(xdev_t *dev, unsigned char *out, unsigned char *in)
{
    static const size_t sizes[] = { THRESHOLD - 1, THRESHOLD, 3 * THRESHOLD + 5, BIG, BIG + 1 };
    int me = xdev_rank(dev), go = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t len = sizes[k];
        xdev_status_t st;
        if (me == 0) {
            fill(out, len, 0);
            CHECK(xdev_recv(dev, &go, sizeof go, 1, 2, CTX, NULL) == XDEV_OK, "posted");
            CHECK(xdev_send(dev, out, len, 1, 3, CTX) == XDEV_OK, "send %zu, posted", len);
            xdev_request_t r; /* past the eager limit it waits for its receive */
            CHECK(xdev_isend(dev, out, len, 1, 4, CTX, &r) == XDEV_OK, "isend %zu", len);
            CHECK(xdev_send(dev, &go, sizeof go, 1, 5, CTX) == XDEV_OK, "go");
            CHECK(xdev_wait(&r, &st) == XDEV_OK && st.error == XDEV_OK, "send %zu, unexpected", len);
        } else {
            xdev_request_t r;
            memset(in, 0, len);
            CHECK(xdev_irecv(dev, in, len, 0, 3, CTX, &r) == XDEV_OK, "irecv");
            CHECK(xdev_send(dev, &go, sizeof go, 0, 2, CTX) == XDEV_OK, "posted");
            CHECK(xdev_wait(&r, &st) == XDEV_OK, "wait");
            check_bytes(in, len, 0, &st);
            CHECK(xdev_recv(dev, &go, sizeof go, 0, 5, CTX, NULL) == XDEV_OK, "go");
            memset(in, 0, len);
            CHECK(xdev_recv(dev, in, len, 0, 4, CTX, &st) == XDEV_OK, "recv %zu", len);
            check_bytes(in, len, 0, &st);
        }
    }
}

int main(void)
{
    if (!single_copy_allowed()) {
        printf("shm_copy_once_eager: skipped: Yama forbids the single copy to this user\n");
        return 77;
    }
    xdev_t *dev;
    int rc = xdev_init(NULL, &dev);
    if (rc != XDEV_OK) {
        fprintf(stderr, "shm_copy_once_eager: xdev_init: %s\n", xdev_strerror(rc));
        return 1;
    }
    unsigned char *out = malloc(2 * BIG), *in = malloc(2 * BIG);
    if (!out || !in) return 1;
    if (xdev_size(dev) != 2) {
        CHECK(0, "run with 2 ranks");
    } else {
        counted(dev, out, in, 2 * THRESHOLD, 0, 1);
        counted(dev, out, in, THRESHOLD, 0, 1);
        counted(dev, out, in, THRESHOLD - 1, 0, 0);
        counted(dev, out, in, 2 * THRESHOLD, 1, 0);
        counted(dev, out, in, BIG, 0, 1);
        for (int i = 0; i < 200; i++) head_to_head(dev, out, in, THRESHOLD + (size_t)i * 97, 0);
        both_orders(dev, out, in);
    }
    free(out);
    free(in);
    CHECK(xdev_finalize(dev) == XDEV_OK, "finalize");
    if (!failures) printf("shm_copy_once_eager: rank ok\n");
    return failures ? 1 : 0;
}
