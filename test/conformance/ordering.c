/*
 * ordering.c - part of case "matching": non-overtaking.
 *
 * Many messages with the same source, tag and context arrive in the order
 * they were sent, also when eager-size (1 KiB) and rendezvous-size (1 MiB,
 * and just over the eager limit) messages are mixed, whether the receives
 * are posted before or after the messages arrive, and with wildcards,
 * and when a blocking send follows nonblocking ones still queued.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cases.h"
#include "harness.h"

enum { CTX_UNEXP = 20, CTX_POSTED, CTX_FANIN, CTX_BEHIND };
enum { N = 16 };

static size_t size_of(int i)
{
    size_t above = h_eager < 2 * MiB ? h_eager + 1 : 2 * MiB;
    static const size_t table[8] = {1024, 1 << 20, 0, (1 << 20) + 1, 1027, 7, 0, 100};
    return i % 8 == 6 ? above : table[i % 8];
}

static size_t max_size(void)
{
    size_t m = 0;
    for (int i = 0; i < 8; i++)
        if (size_of(i) > m)
            m = size_of(i);
    return m;
}

static uint64_t seed_of(int ctx, int i) { return (uint64_t)ctx * 1000 + (uint64_t)i; }

/* Post the N sends of one stream to dst; tag(i) picks each message's tag. */
static void send_stream(int dst, int ctx, int tagmod, unsigned char **buf, xdev_request_t *req)
{
    for (int i = 0; i < N; i++) {
        buf[i] = h_malloc(size_of(i));
        h_fill(buf[i], size_of(i), seed_of(ctx, i), h_rank);
        CHECK_RC(xdev_isend(h_dev, buf[i], size_of(i), dst, 5 + i % tagmod, ctx, &req[i]));
    }
}

static void wait_stream(unsigned char **buf, xdev_request_t *req)
{
    for (int i = 0; i < N; i++) {
        WAIT_SEND(&req[i], size_of(i), "ordered send");
        free(buf[i]);
    }
}

/* Ring, receives posted after the sends: blocking receives one by one. */
static void unexpected(void)
{
    h_phase("ordering: same src/tag/ctx, receives after the sends");
    size_t cap = max_size();
    unsigned char *sb[N], *rb = h_malloc(cap);
    xdev_request_t sq[N];
    h_barrier();
    send_stream(h_next(), CTX_UNEXP, 1, sb, sq);
    h_barrier();
    for (int i = 0; i < N; i++) {
        xdev_status_t st;
        char what[80];
        snprintf(what, sizeof what, "message #%d of %d (same source, tag, context)", i, N);
        CHECK_RC(xdev_recv(h_dev, rb, cap, h_prev(), 5, CTX_UNEXP, &st));
        CHECK_STATUS(&st, h_prev(), 5, CTX_UNEXP, XDEV_OK, size_of(i), what);
        CHECK_DATA(rb, st.count, seed_of(CTX_UNEXP, i), h_prev(), what);
    }
    wait_stream(sb, sq);
    free(rb);
    h_barrier();
}

/* Ring, all receives posted first, (source, ANY_TAG) with tags 5, 6, 7 in
 * turn; completed in reverse order. */
static void posted(void)
{
    h_phase("ordering: same src/ctx, ANY_TAG receives posted first");
    size_t cap = max_size();
    unsigned char *sb[N], *rb[N];
    xdev_request_t sq[N], rq[N];
    for (int i = 0; i < N; i++) {
        rb[i] = h_malloc(cap);
        CHECK_RC(xdev_irecv(h_dev, rb[i], cap, h_prev(), XDEV_ANY_TAG, CTX_POSTED, &rq[i]));
    }
    h_barrier();
    send_stream(h_next(), CTX_POSTED, 3, sb, sq);
    for (int i = N - 1; i >= 0; i--) {
        xdev_status_t st;
        char what[80];
        snprintf(what, sizeof what, "posted receive #%d of %d", i, N);
        CHECK_RC(xdev_wait(&rq[i], &st));
        CHECK_STATUS(&st, h_prev(), 5 + i % 3, CTX_POSTED, XDEV_OK, size_of(i), what);
        CHECK_DATA(rb[i], st.count, seed_of(CTX_POSTED, i), h_prev(), what);
        free(rb[i]);
    }
    wait_stream(sb, sq);
    h_barrier();
}

/* Fan-in: every other rank sends a stream to rank 0, which receives them
 * all with (ANY_SOURCE, ANY_TAG); some receives are posted before the
 * messages are sent, the rest after. Per source, the receives (in posting
 * order) must get that source's messages in send order. */
static void fanin(void)
{
    h_phase("ordering: fan-in to rank 0 with ANY_SOURCE/ANY_TAG");
    size_t cap = max_size();
    int total = (h_size - 1) * N, early = 8;
    if (h_rank != 0) {
        unsigned char *sb[N];
        xdev_request_t sq[N];
        h_barrier();
        send_stream(0, CTX_FANIN, 4, sb, sq);
        wait_stream(sb, sq);
        h_barrier();
        return;
    }
    unsigned char **rb = h_malloc(sizeof *rb * (size_t)total);
    xdev_request_t *rq = h_malloc(sizeof *rq * (size_t)total);
    int *next = calloc((size_t)h_size, sizeof(int));
    CHECK(next != NULL, "calloc");
    for (int i = 0; i < total; i++)
        rb[i] = h_malloc(cap);
    for (int i = 0; i < early; i++)
        CHECK_RC(xdev_irecv(h_dev, rb[i], cap, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX_FANIN, &rq[i]));
    h_barrier();
    for (int i = early; i < total; i++)
        CHECK_RC(xdev_irecv(h_dev, rb[i], cap, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX_FANIN, &rq[i]));
    for (int i = 0; i < total; i++) {
        xdev_status_t st;
        char what[96];
        CHECK_RC(xdev_wait(&rq[i], &st));
        CHECK(st.source > 0 && st.source < h_size, "receive #%d: status.source %d is not a sender",
              i, st.source);
        int k = next[st.source]++;
        CHECK(k < N, "receive #%d: more than %d messages from rank %d", i, N, st.source);
        snprintf(what, sizeof what, "receive #%d, message #%d from rank %d", i, k, st.source);
        CHECK_STATUS(&st, st.source, 5 + k % 4, CTX_FANIN, XDEV_OK, size_of(k), what);
        CHECK_DATA(rb[i], st.count, seed_of(CTX_FANIN, k), st.source, what);
        free(rb[i]);
    }
    for (int s = 1; s < h_size; s++)
        CHECK(next[s] == N, "got %d messages from rank %d, want %d", next[s], s, N);
    free(rb), free(rq), free(next);
    h_barrier();
}

/* Blocking sends behind nonblocking ones that could not leave yet: every
 * rank posts more eager-size messages than a ring (or socket) holds, then
 * sleeps without progress, so they queue; the blocking sends that follow
 * must wait their turn rather than take the shortcut past the queue. */
static void behind_queue(void)
{
    h_phase("ordering: blocking sends behind queued nonblocking sends");
    enum { SMALL = 3, SMALL_BYTES = 8 };
    size_t big = h_eager ? h_eager : 1;
    int k = (int)(4 * MiB / big) + 4;
    if (k > 256)
        k = 256;
    unsigned char **sb = h_malloc(sizeof *sb * (size_t)k), *rb = h_malloc(big);
    xdev_request_t *sq = h_malloc(sizeof *sq * (size_t)k);
    h_barrier();
    for (int i = 0; i < k; i++) {
        sb[i] = h_malloc(big);
        h_fill(sb[i], big, seed_of(CTX_BEHIND, i), h_rank);
        CHECK_RC(xdev_isend(h_dev, sb[i], big, h_next(), 5, CTX_BEHIND, &sq[i]));
    }
    h_sleep_ms(200);
    for (int i = 0; i < SMALL; i++) {
        unsigned char small[SMALL_BYTES];
        h_fill(small, sizeof small, seed_of(CTX_BEHIND, k + i), h_rank);
        CHECK_RC(xdev_send(h_dev, small, sizeof small, h_next(), 5, CTX_BEHIND));
    }
    for (int i = 0; i < k + SMALL; i++) {
        xdev_status_t st;
        char what[80];
        snprintf(what, sizeof what, "message #%d of %d (%d nonblocking, then blocking)", i,
                 k + SMALL, k);
        CHECK_RC(xdev_recv(h_dev, rb, big, h_prev(), 5, CTX_BEHIND, &st));
        CHECK_STATUS(&st, h_prev(), 5, CTX_BEHIND, XDEV_OK, i < k ? big : SMALL_BYTES, what);
        CHECK_DATA(rb, st.count, seed_of(CTX_BEHIND, i), h_prev(), what);
    }
    for (int i = 0; i < k; i++) {
        WAIT_SEND(&sq[i], big, "queued send");
        free(sb[i]);
    }
    free(sb), free(sq), free(rb);
    h_barrier();
}

void matching_ordering(void)
{
    unexpected();
    posted();
    fanin();
    behind_queue();
}
