/*
 * shm_middle_adapts.c - with shm's defaults, 8-128 KiB messages go through
 * the ring or are read once as their receiver times faster
 * (shm_middle.c), and either way behave the same:
 *   - a ping-pong of 16 KiB: within 200 round trips each side has sent
 *     some by rendezvous (a try of the single copy, at least), and every
 *     byte arrives;
 *   - windows of random sizes, 8 KiB-128 KiB and around, both ways at
 *     once: every byte arrives, in order;
 *   - a head-to-head exchange of blocking sends of 16 KiB, repeated,
 *     always finishes, whichever way each message went.
 * Skipped (77) where the single copy is not allowed (Yama) or the two
 * ranks cannot run at once (one CPU): no choice is made there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xdev.h"
#include "../check.h"
#include "single_copy.h"

#define CTX 11
#define MAXLEN (160u << 10)
#define WINDOW 16

static unsigned char pattern(size_t i, int from, unsigned seq)
{
    return (unsigned char)(i * 11 + (size_t)from * 37 + seq * 5 + 7);
}

static void fill(unsigned char *b, size_t len, int from, unsigned seq)
{
    for (size_t i = 0; i < len; i++) b[i] = pattern(i, from, seq);
}

static void check_bytes(const unsigned char *b, size_t len, int from, unsigned seq,
                        const xdev_status_t *st)
{
    CHECK(st->error == XDEV_OK && st->count == len, "message %u (%zu bytes) from %d: error %d, count %zu",
          seq, len, from, st->error, st->count);
    size_t i = 0;
    while (i < len && b[i] == pattern(i, from, seq)) i++;
    CHECK(i == len, "message %u (%zu bytes) from %d: byte %zu is wrong", seq, len, from, i);
}

static uint64_t rendezvous_sent(xdev_t *dev)
{
    xdev_stats_t s;
    CHECK(xdev_stats(dev, &s) == XDEV_OK, "stats");
    return s.rendezvous_sent;
}

static void ping_pong(xdev_t *dev, unsigned char *out, unsigned char *in)
{
    int me = xdev_rank(dev), peer = 1 - me;
    size_t len = 16 << 10;
    uint64_t before = rendezvous_sent(dev);
    for (unsigned seq = 0; seq < 200; seq++) {
        xdev_status_t st;
        if (me == 0) {
            fill(out, len, me, seq);
            CHECK(xdev_send(dev, out, len, peer, 1, CTX) == XDEV_OK, "send");
            CHECK(xdev_recv(dev, in, len, peer, 1, CTX, &st) == XDEV_OK, "recv");
        } else {
            CHECK(xdev_recv(dev, in, len, peer, 1, CTX, &st) == XDEV_OK, "recv");
            fill(out, len, me, seq);
            CHECK(xdev_send(dev, out, len, peer, 1, CTX) == XDEV_OK, "send");
        }
        check_bytes(in, len, peer, seq, &st);
    }
    CHECK(rendezvous_sent(dev) > before, "200 round trips of 16 KiB: none sent by rendezvous");
}

/* Sizes that cross every size class of the choice, its edges, and the
 * eager limit: 8 KiB - 1 up to 160 KiB. */
static size_t size_of(unsigned seq)
{
    unsigned r = seq * 2654435761u;
    return ((size_t)8 << 10) - 1 + r % (MAXLEN - (8u << 10));
}

static void windows(xdev_t *dev, unsigned char *out, unsigned char *in)
{
    int me = xdev_rank(dev), peer = 1 - me;
    xdev_request_t sreq[WINDOW], rreq[WINDOW];
    for (unsigned w = 0; w < 40; w++) {
        for (unsigned k = 0; k < WINDOW; k++) {
            unsigned seq = w * WINDOW + k;
            CHECK(xdev_irecv(dev, in + (size_t)k * MAXLEN, MAXLEN, peer, 2, CTX, &rreq[k]) == XDEV_OK, "irecv");
            fill(out + (size_t)k * MAXLEN, size_of(seq), me, seq);
            CHECK(xdev_isend(dev, out + (size_t)k * MAXLEN, size_of(seq), peer, 2, CTX, &sreq[k]) == XDEV_OK,
                  "isend");
        }
        for (unsigned k = 0; k < WINDOW; k++) {
            xdev_status_t st;
            CHECK(xdev_wait(&rreq[k], &st) == XDEV_OK, "wait recv");
            check_bytes(in + (size_t)k * MAXLEN, size_of(w * WINDOW + k), peer, w * WINDOW + k, &st);
            CHECK(xdev_wait(&sreq[k], &st) == XDEV_OK && st.error == XDEV_OK, "wait send");
        }
    }
}

static void head_to_head(xdev_t *dev, unsigned char *out, unsigned char *in)
{
    int me = xdev_rank(dev), peer = 1 - me;
    for (unsigned seq = 0; seq < 300; seq++) {
        size_t len = (16u << 10) + seq % 7;
        xdev_status_t st;
        fill(out, len, me, seq);
        CHECK(xdev_send(dev, out, len, peer, 3, CTX) == XDEV_OK, "send");
        CHECK(xdev_recv(dev, in, len, peer, 3, CTX, &st) == XDEV_OK, "recv");
        check_bytes(in, len, peer, seq, &st);
    }
}

int main(void)
{
    if (!single_copy_allowed() || sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        printf("shm_middle_adapts: skipped: no single copy, or one CPU\n");
        return 77;
    }
    xdev_t *dev;
    int rc = xdev_init(NULL, &dev);
    if (rc != XDEV_OK) {
        fprintf(stderr, "shm_middle_adapts: xdev_init: %s\n", xdev_strerror(rc));
        return 1;
    }
    unsigned char *out = malloc((size_t)WINDOW * MAXLEN), *in = malloc((size_t)WINDOW * MAXLEN);
    if (!out || !in) return 1;
    if (xdev_size(dev) != 2) {
        CHECK(0, "run with 2 ranks");
    } else {
        ping_pong(dev, out, in);
        windows(dev, out, in);
        head_to_head(dev, out, in);
    }
    free(out);
    free(in);
    CHECK(xdev_finalize(dev) == XDEV_OK, "finalize");
    if (!failures) printf("shm_middle_adapts: rank ok\n");
    return failures ? 1 : 0;
}
