/*
 * self.c - case "self": messages from a rank to itself.
 *
 * Eager and rendezvous sizes with the receive posted before and after the
 * send, a wildcard receive that gets its own message, order among several
 * messages to oneself, and synchronous sends to oneself: with the receive
 * posted first, and without - then the issend cannot complete (nobody else
 * can receive it) until the receive is posted, even after a probe saw it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cases.h"
#include "harness.h"

enum { CTX_SELF = 110 };

static size_t rndz_size(void) { return h_eager + 4096 > 1 * MiB ? h_eager + 4096 : 1 * MiB; }

static void check_recv(const xdev_status_t *st, const void *buf, size_t len, int tag,
                       uint64_t seed, const char *what)
{
    CHECK_STATUS(st, h_rank, tag, CTX_SELF, XDEV_OK, len, what);
    CHECK_DATA(buf, len, seed, h_rank, what);
}

/* Standard sends to self; order 0: receive posted first, 1: send first. */
static void standard(size_t len, int send_first, int tag)
{
    h_phase("self: %zu bytes, %s", len, send_first ? "send first" : "receive first");
    char what[80];
    snprintf(what, sizeof what, "%zu-byte message to self (%s)", len,
             send_first ? "send first" : "receive first");
    unsigned char *sb = h_malloc(len), *rb = h_malloc(len + 4);
    xdev_request_t sq, rq;
    xdev_status_t st;
    h_fill(sb, len, (uint64_t)tag, h_rank);
    if (send_first) {
        CHECK_RC(xdev_isend(h_dev, sb, len, h_rank, tag, CTX_SELF, &sq));
        CHECK_RC(xdev_recv(h_dev, rb, len + 4, h_rank, tag, CTX_SELF, &st));
    } else {
        CHECK_RC(xdev_irecv(h_dev, rb, len + 4, XDEV_ANY_SOURCE, tag, CTX_SELF, &rq));
        CHECK_RC(xdev_isend(h_dev, sb, len, h_rank, tag, CTX_SELF, &sq));
        CHECK_RC(xdev_wait(&rq, &st));
    }
    check_recv(&st, rb, len, tag, (uint64_t)tag, what);
    WAIT_SEND(&sq, len, what);
    /* blocking send with the receive already posted */
    CHECK_RC(xdev_irecv(h_dev, rb, len + 4, h_rank, XDEV_ANY_TAG, CTX_SELF, &rq));
    CHECK_RC(xdev_send(h_dev, sb, len, h_rank, tag, CTX_SELF));
    CHECK_RC(xdev_wait(&rq, &st));
    check_recv(&st, rb, len, tag, (uint64_t)tag, "blocking send to self");
    free(sb), free(rb);
}

/* Several messages to self, mixed sizes, same tag: received in send order. */
static void ordered(void)
{
    h_phase("self: ordering");
    enum { N = 8 };
    size_t lens[N] = {10, rndz_size(), 0, 1000, rndz_size() + 1, 1, 64 * KiB + 1, 5};
    unsigned char *sb[N], *rb = h_malloc(rndz_size() + 1);
    xdev_request_t sq[N];
    for (int i = 0; i < N; i++) {
        sb[i] = h_malloc(lens[i]);
        h_fill(sb[i], lens[i], 300 + (uint64_t)i, h_rank);
        CHECK_RC(xdev_isend(h_dev, sb[i], lens[i], h_rank, 30, CTX_SELF, &sq[i]));
    }
    for (int i = 0; i < N; i++) {
        xdev_status_t st;
        char what[64];
        snprintf(what, sizeof what, "message #%d to self", i);
        CHECK_RC(xdev_recv(h_dev, rb, rndz_size() + 1, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX_SELF,
                           &st));
        check_recv(&st, rb, lens[i], 30, 300 + (uint64_t)i, what);
    }
    for (int i = 0; i < N; i++) {
        WAIT_SEND(&sq[i], lens[i], "ordered send to self");
        free(sb[i]);
    }
    free(rb);
}

/* issend to self, receive posted first. */
static void sync_posted(size_t len, int tag)
{
    h_phase("self: issend of %zu bytes, receive posted first", len);
    unsigned char *sb = h_malloc(len), *rb = h_malloc(len);
    xdev_request_t sq, rq;
    xdev_status_t st;
    h_fill(sb, len, (uint64_t)tag, h_rank);
    CHECK_RC(xdev_irecv(h_dev, rb, len, h_rank, tag, CTX_SELF, &rq));
    CHECK_RC(xdev_issend(h_dev, sb, len, h_rank, tag, CTX_SELF, &sq));
    WAIT_SEND(&sq, len, "issend to self");
    CHECK_RC(xdev_wait(&rq, &st));
    check_recv(&st, rb, len, tag, (uint64_t)tag, "issend to self, receive posted first");
    free(sb), free(rb);
}

/* issend to self with no receive: it cannot complete, not even after a
 * probe has seen the message, until the receive is posted. */
static void sync_unposted(size_t len, int tag)
{
    h_phase("self: issend of %zu bytes, no receive yet", len);
    unsigned char *sb = h_malloc(len), *rb = h_malloc(len);
    xdev_request_t sq, rq;
    xdev_status_t st;
    int done = 0, found = 0;
    h_fill(sb, len, (uint64_t)tag, h_rank);
    CHECK_RC(xdev_issend(h_dev, sb, len, h_rank, tag, CTX_SELF, &sq));
    double t0 = h_now();
    while (h_now() - t0 < 0.1) {
        CHECK_RC(xdev_test(&sq, &done, &st));
        CHECK(!done, "issend of %zu bytes to self completed with no receive posted", len);
    }
    while (!found) {
        CHECK(h_now() - t0 < 20, "iprobe never saw the %zu-byte issend to self", len);
        CHECK_RC(xdev_iprobe(h_dev, h_rank, tag, CTX_SELF, &found, &st));
    }
    CHECK_STATUS(&st, h_rank, tag, CTX_SELF, XDEV_OK, len, "iprobe of an issend to self");
    for (int i = 0; i < 20; i++) {
        CHECK_RC(xdev_test(&sq, &done, &st));
        CHECK(!done, "issend of %zu bytes to self completed after a probe, with no receive", len);
    }
    CHECK_RC(xdev_irecv(h_dev, rb, len, h_rank, tag, CTX_SELF, &rq));
    CHECK_RC(xdev_wait(&rq, &st));
    check_recv(&st, rb, len, tag, (uint64_t)tag, "issend to self, receive posted late");
    WAIT_SEND(&sq, len, "issend to self");
    free(sb), free(rb);
}

void case_self(void)
{
    size_t eager = h_eager < 1000 ? h_eager : 1000;
    const size_t lens[] = {0, 1, eager, h_eager, rndz_size()};
    int tag = 1;
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        if (lens[i] > 64 * MiB)
            continue;
        standard(lens[i], 0, tag++);
        standard(lens[i], 1, tag++);
    }
    ordered();
    sync_posted(eager, 40);
    sync_posted(rndz_size(), 41);
    sync_unposted(0, 42);
    sync_unposted(eager, 43);
    sync_unposted(rndz_size(), 44);
}
