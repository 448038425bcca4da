/*
 * matching.c - case "matching": receives match on (source, tag, context).
 *
 * Specific and wildcard source and tag, contexts kept apart, and among
 * several matching posted receives the one posted first wins. Ordering
 * (non-overtaking) is in ordering.c and probe/iprobe in probe.c; both are
 * part of this case.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

enum { CTX_SPECIFIC = 1, CTX_ANYANY, CTX_ANYSRC, CTX_ANYTAG, CTX_A, CTX_B, CTX_POST };

/* Lengths differ by sender and tag, so a wrong match shows in count too. */
static size_t len_of(int sender, int tag) { return 16 + (size_t)tag * 37 + (size_t)sender * 5; }
static uint64_t seed_of(int tag) { return 1000 + (uint64_t)tag; }

/* One isend per (peer, tag), to every other rank. */
struct sendset {
    int n;
    xdev_request_t *req;
    unsigned char **buf;
    size_t *len;
};

static void send_to_all(struct sendset *s, const int *tags, int ntags, int ctx)
{
    int max = (h_size - 1) * ntags;
    s->req = h_malloc(sizeof *s->req * (size_t)max);
    s->buf = h_malloc(sizeof *s->buf * (size_t)max);
    s->len = h_malloc(sizeof *s->len * (size_t)max);
    s->n = 0;
    for (int p = 0; p < h_size; p++) {
        if (p == h_rank)
            continue;
        for (int i = 0; i < ntags; i++, s->n++) {
            size_t len = s->len[s->n] = len_of(h_rank, tags[i]);
            s->buf[s->n] = h_malloc(len);
            h_fill(s->buf[s->n], len, seed_of(tags[i]), h_rank);
            CHECK_RC(xdev_isend(h_dev, s->buf[s->n], len, p, tags[i], ctx, &s->req[s->n]));
        }
    }
}

static void wait_sends(struct sendset *s)
{
    for (int i = 0; i < s->n; i++) {
        WAIT_SEND(&s->req[i], s->len[i], "send");
        free(s->buf[i]);
    }
    free(s->req), free(s->buf), free(s->len);
}

/* Specific source and tag: every rank sends tags 0..5 to every peer; the
 * receiver takes them peer by peer in reverse tag order, before (posted) or
 * after (unexpected) the messages arrive. */
static void specific(int prepost)
{
    h_phase("matching: specific source/tag, %s", prepost ? "posted" : "unexpected");
    enum { T = 6 };
    int tags[T] = {0, 1, 2, 3, 4, 5};
    int nmsg = (h_size - 1) * T;
    xdev_request_t *rreq = h_malloc(sizeof *rreq * nmsg);
    unsigned char *rbuf = h_malloc((size_t)nmsg * 512);
    struct sendset ss;
    int *rsrc = h_malloc(sizeof(int) * nmsg), *rtag = h_malloc(sizeof(int) * nmsg);

    int n = 0;
    for (int p = 0; p < h_size; p++) {
        if (p == h_rank)
            continue;
        for (int t = T - 1; t >= 0; t--, n++) {
            rsrc[n] = p;
            rtag[n] = t;
        }
    }
    if (prepost)
        for (int i = 0; i < nmsg; i++)
            CHECK_RC(xdev_irecv(h_dev, rbuf + (size_t)i * 512, 512, rsrc[i], rtag[i],
                                CTX_SPECIFIC, &rreq[i]));
    h_barrier();
    send_to_all(&ss, tags, T, CTX_SPECIFIC);
    if (!prepost) {
        h_barrier();
        for (int i = 0; i < nmsg; i++)
            CHECK_RC(xdev_irecv(h_dev, rbuf + (size_t)i * 512, 512, rsrc[i], rtag[i],
                                CTX_SPECIFIC, &rreq[i]));
    }
    for (int i = nmsg - 1; i >= 0; i--) {
        xdev_status_t st;
        char what[96];
        snprintf(what, sizeof what, "receive from %d tag %d", rsrc[i], rtag[i]);
        CHECK_RC(xdev_wait(&rreq[i], &st));
        CHECK_STATUS(&st, rsrc[i], rtag[i], CTX_SPECIFIC, XDEV_OK, len_of(rsrc[i], rtag[i]), what);
        CHECK_DATA(rbuf + (size_t)i * 512, st.count, seed_of(rtag[i]), rsrc[i], what);
    }
    wait_sends(&ss);
    free(rreq), free(rbuf), free(rsrc), free(rtag);
    h_barrier();
}

/* Receive (np-1)*ntags messages with the given wildcard receive and check
 * that each (source, tag) comes exactly once and that tags from one source
 * come in send order when the receive's tag is a wildcard. */
static void wildcard_round(int ctx, const int *tags, int ntags, int rsrc_mode, int rtag)
{
    int nmsg = (h_size - 1) * ntags;
    struct sendset ss;
    unsigned char buf[2048];
    int *seen = calloc((size_t)h_size * 64, sizeof(int));
    int *next_idx = calloc((size_t)h_size, sizeof(int));
    CHECK(seen && next_idx, "calloc");

    h_barrier();
    send_to_all(&ss, tags, ntags, ctx);
    h_barrier();
    for (int i = 0; i < nmsg; i++) {
        xdev_status_t st;
        int src = rsrc_mode == XDEV_ANY_SOURCE ? XDEV_ANY_SOURCE : (h_rank + 1 + i / ntags) % h_size;
        CHECK_RC(xdev_recv(h_dev, buf, sizeof buf, src, rtag, ctx, &st));
        CHECK(st.source >= 0 && st.source < h_size && st.source != h_rank,
              "wildcard receive %d: status.source %d is not a peer", i, st.source);
        CHECK(src == XDEV_ANY_SOURCE || st.source == src, "receive from %d got source %d", src,
              st.source);
        CHECK(rtag == XDEV_ANY_TAG || st.tag == rtag, "receive with tag %d got tag %d", rtag,
              st.tag);
        int ti = -1;
        for (int k = 0; k < ntags; k++)
            if (tags[k] == st.tag)
                ti = k;
        CHECK(ti >= 0, "receive %d: status.tag %d was never sent", i, st.tag);
        CHECK(seen[st.source * 64 + ti] == 0, "message (source %d, tag %d) received twice",
              st.source, st.tag);
        seen[st.source * 64 + ti] = 1;
        if (rtag == XDEV_ANY_TAG) {
            /* Same sender, same context: must arrive in the order sent. */
            CHECK(ti == next_idx[st.source], "from rank %d got tag %d, but tag %d was sent "
                  "before it and not yet received (non-overtaking)", st.source, st.tag,
                  tags[next_idx[st.source]]);
            next_idx[st.source]++;
        }
        char what[96];
        snprintf(what, sizeof what, "wildcard receive (src %d, tag %d)", src, rtag);
        CHECK_STATUS(&st, st.source, st.tag, ctx, XDEV_OK, len_of(st.source, st.tag), what);
        CHECK_DATA(buf, st.count, seed_of(st.tag), st.source, what);
    }
    wait_sends(&ss);
    free(seen), free(next_idx);
}

static void wildcards(void)
{
    h_phase("matching: ANY_SOURCE + ANY_TAG");
    int t1[3] = {10, 11, 12};
    wildcard_round(CTX_ANYANY, t1, 3, XDEV_ANY_SOURCE, XDEV_ANY_TAG);

    /* ANY_SOURCE with a specific tag: tag 21 is taken before the tag 20
     * messages that were sent (and probably arrived) earlier. */
    h_phase("matching: ANY_SOURCE + specific tag");
    int t2[2] = {20, 21};
    struct sendset ss;
    unsigned char buf[2048];
    h_barrier();
    send_to_all(&ss, t2, 2, CTX_ANYSRC);
    h_barrier();
    for (int pass = 0; pass < 2; pass++) {
        int tag = pass == 0 ? 21 : 20;
        unsigned long long got = 0;
        for (int i = 0; i < h_size - 1; i++) {
            xdev_status_t st;
            CHECK_RC(xdev_recv(h_dev, buf, sizeof buf, XDEV_ANY_SOURCE, tag, CTX_ANYSRC, &st));
            CHECK(st.source >= 0 && st.source < h_size && st.source != h_rank,
                  "status.source %d is not a peer", st.source);
            CHECK(!(got >> st.source & 1), "two tag-%d messages from rank %d, it sent one", tag,
                  st.source);
            got |= 1ull << st.source;
            CHECK_STATUS(&st, st.source, tag, CTX_ANYSRC, XDEV_OK, len_of(st.source, tag),
                         "receive (ANY_SOURCE, specific tag)");
            CHECK_DATA(buf, st.count, seed_of(tag), st.source, "receive (ANY_SOURCE, specific tag)");
        }
    }
    wait_sends(&ss);

    /* Specific source with ANY_TAG: tags from one sender in send order. */
    h_phase("matching: specific source + ANY_TAG");
    int t3[3] = {32, 30, 31};
    wildcard_round(CTX_ANYTAG, t3, 3, 0, XDEV_ANY_TAG);
    h_barrier();
}

/* Same source and tag on two contexts: received in the opposite order by
 * context, from the unexpected queue and with receives posted first, with
 * an eager and a rendezvous-size message. */
static void contexts(void)
{
    size_t big = 1 * MiB + 5;
    for (int round = 0; round < 4; round++) {
        int prepost = round & 1;
        size_t la = round < 2 ? 100 : big, lb = round < 2 ? big : 200;
        h_phase("matching: contexts round %d (%s, A %zu B %zu bytes)", round,
                prepost ? "posted" : "unexpected", la, lb);
        unsigned char *sa = h_malloc(la), *sb = h_malloc(lb);
        unsigned char *ra = h_malloc(big), *rb = h_malloc(big);
        h_fill(sa, la, 1 + (uint64_t)round * 10, h_rank);
        h_fill(sb, lb, 2 + (uint64_t)round * 10, h_rank);
        xdev_request_t q[4];
        xdev_status_t st;
        int anysrc = round >= 2 ? XDEV_ANY_SOURCE : h_prev();
        int anytag = round >= 2 ? XDEV_ANY_TAG : 7;
        if (prepost) {
            CHECK_RC(xdev_irecv(h_dev, rb, big, anysrc, anytag, CTX_B, &q[2]));
            CHECK_RC(xdev_irecv(h_dev, ra, big, anysrc, anytag, CTX_A, &q[3]));
        }
        h_barrier();
        CHECK_RC(xdev_isend(h_dev, sa, la, h_next(), 7, CTX_A, &q[0]));
        CHECK_RC(xdev_isend(h_dev, sb, lb, h_next(), 7, CTX_B, &q[1]));
        if (!prepost) {
            h_barrier();
            CHECK_RC(xdev_irecv(h_dev, rb, big, anysrc, anytag, CTX_B, &q[2]));
            CHECK_RC(xdev_irecv(h_dev, ra, big, anysrc, anytag, CTX_A, &q[3]));
        }
        CHECK_RC(xdev_wait(&q[2], &st));
        CHECK_STATUS(&st, h_prev(), 7, CTX_B, XDEV_OK, lb, "context B receive");
        CHECK_DATA(rb, lb, 2 + (uint64_t)round * 10, h_prev(), "context B receive");
        CHECK_RC(xdev_wait(&q[3], &st));
        CHECK_STATUS(&st, h_prev(), 7, CTX_A, XDEV_OK, la, "context A receive");
        CHECK_DATA(ra, la, 1 + (uint64_t)round * 10, h_prev(), "context A receive");
        WAIT_SEND(&q[0], la, "context A send");
        WAIT_SEND(&q[1], lb, "context B send");
        free(sa), free(sb), free(ra), free(rb);
        h_barrier();
    }
}

/* Several posted receives that all match the next message: the one posted
 * first gets it. Each row: the receives' (source, tag), then the tags of the
 * messages sent, in order; receive i must get message i. */
static void posting_order(void)
{
    const int P = -2; /* stands for h_prev() */
    static const struct {
        int n;
        int src[3], tag[3];
        int mtag[3];
        size_t mlen[3];
    } rows[] = {
        {2, {XDEV_ANY_SOURCE, P}, {XDEV_ANY_TAG, 40}, {40, 40}, {111, 222}},
        {2, {P, XDEV_ANY_SOURCE}, {41, XDEV_ANY_TAG}, {41, 41}, {333, 44}},
        {2, {XDEV_ANY_SOURCE, P}, {42, XDEV_ANY_TAG}, {42, 42}, {1 << 20, 55}},
        {2, {P, XDEV_ANY_SOURCE}, {XDEV_ANY_TAG, 43}, {43, 43}, {66, 1 << 20}},
        {3, {XDEV_ANY_SOURCE, XDEV_ANY_SOURCE, XDEV_ANY_SOURCE},
         {XDEV_ANY_TAG, XDEV_ANY_TAG, XDEV_ANY_TAG}, {44, 45, 46}, {77, (1 << 20) + 1, 0}},
        /* a wildcard that does not match must not take a message: the tag-48
         * receive, posted first, gets the tag-48 message sent second */
        {2, {P, XDEV_ANY_SOURCE}, {48, 47}, {47, 48}, {88, 99}},
    };
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        h_phase("matching: posting order row %zu", r);
        int n = rows[r].n;
        xdev_request_t rq[3], sq[3];
        unsigned char *rb[3], *sb[3];
        size_t cap = 2 << 20;
        for (int i = 0; i < n; i++) {
            int src = rows[r].src[i] == P ? h_prev() : rows[r].src[i];
            rb[i] = h_malloc(cap);
            CHECK_RC(xdev_irecv(h_dev, rb[i], cap, src, rows[r].tag[i], CTX_POST, &rq[i]));
        }
        h_barrier();
        for (int i = 0; i < n; i++) {
            sb[i] = h_malloc(rows[r].mlen[i]);
            h_fill(sb[i], rows[r].mlen[i], 4000 + r * 10 + (size_t)i, h_rank);
            CHECK_RC(xdev_isend(h_dev, sb[i], rows[r].mlen[i], h_next(), rows[r].mtag[i],
                                CTX_POST, &sq[i]));
        }
        /* the last row's messages are matched by the receives in reverse */
        int last = r == sizeof rows / sizeof rows[0] - 1;
        for (int i = 0; i < n; i++) {
            int m = last ? n - 1 - i : i;
            xdev_status_t st;
            char what[96];
            snprintf(what, sizeof what, "posting order row %zu: receive #%d (posted %s)", r, i,
                     i == 0 ? "first" : "later");
            CHECK_RC(xdev_wait(&rq[i], &st));
            CHECK_STATUS(&st, h_prev(), rows[r].mtag[m], CTX_POST, XDEV_OK, rows[r].mlen[m], what);
            CHECK_DATA(rb[i], st.count, 4000 + r * 10 + (size_t)m, h_prev(), what);
        }
        for (int i = 0; i < n; i++) {
            WAIT_SEND(&sq[i], rows[r].mlen[i], "posting order send");
            free(rb[i]), free(sb[i]);
        }
        h_barrier();
    }
}

void case_matching(void)
{
    specific(0);
    specific(1);
    wildcards();
    contexts();
    posting_order();
    matching_ordering();
    matching_probe();
}
