/*
 * case_args.c - bad arguments return XDEV_ERR_ARG (malformed XDEV_COLL_*
 * variables XDEV_ERR_INIT) and change nothing: output pointers and buffers
 * keep their contents, and the group works afterwards. A rank's own count
 * in a v-variant that differs from its buffer is a size mismatch instead:
 * it fails there with XDEV_ERR_TRUNCATE and the others are told. So does
 * a block layout that differs with every message's size the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define EXPECT(call, want)                                                   \
    do {                                                                     \
        int e_rc_ = (call);                                                  \
        CHECK(e_rc_ == (want), "%s returned %d (%s), want %d", #call, e_rc_, \
              xdev_strerror(e_rc_), (want));                                 \
    } while (0)

static void group_args(void)
{
    int p = t_size, r = t_rank;
    xdev_coll_group_t *sentinel = (xdev_coll_group_t *)&sentinel, *g = sentinel;
    int *ranks = t_malloc(sizeof(int) * (size_t)(p + 1));
    for (int i = 0; i < p; i++) ranks[i] = i;
    t_phase("group_create arguments");
    EXPECT(xdev_coll_group_create(NULL, NULL, p, 1, &g), XDEV_ERR_ARG);
    EXPECT(xdev_coll_group_create(t_dev, NULL, p, 1, NULL), XDEV_ERR_ARG);
    EXPECT(xdev_coll_group_create(t_dev, NULL, 0, 1, &g), XDEV_ERR_ARG);
    EXPECT(xdev_coll_group_create(t_dev, NULL, p + 1, 1, &g), XDEV_ERR_ARG);
    EXPECT(xdev_coll_group_create(t_dev, NULL, p, -1, &g), XDEV_ERR_ARG);
    ranks[0] = p;
    EXPECT(xdev_coll_group_create(t_dev, ranks, p, 1, &g), XDEV_ERR_ARG);
    ranks[0] = -1;
    EXPECT(xdev_coll_group_create(t_dev, ranks, p, 1, &g), XDEV_ERR_ARG);
    ranks[0] = 0;
    if (p > 1) {
        ranks[1] = 0; /* repeated */
        EXPECT(xdev_coll_group_create(t_dev, ranks, p, 1, &g), XDEV_ERR_ARG);
        ranks[1] = 1;
        int other = (r + 1) % p; /* a group without the caller */
        EXPECT(xdev_coll_group_create(t_dev, &other, 1, 1, &g), XDEV_ERR_ARG);
    }
    setenv("XDEV_COLL_ALLREDUCE", "bogus", 1);
    EXPECT(xdev_coll_group_create(t_dev, NULL, p, 1, &g), XDEV_ERR_INIT);
    unsetenv("XDEV_COLL_ALLREDUCE");
    setenv("XDEV_COLL_ALLREDUCE_DIRECT_MAX", "2X", 1);
    EXPECT(xdev_coll_group_create(t_dev, NULL, p, 1, &g), XDEV_ERR_INIT);
    unsetenv("XDEV_COLL_ALLREDUCE_DIRECT_MAX");
    setenv("XDEV_COLL_ALLGATHER_DIRECT_MEMBERS", "eight", 1);
    EXPECT(xdev_coll_group_create(t_dev, NULL, p, 1, &g), XDEV_ERR_INIT);
    unsetenv("XDEV_COLL_ALLGATHER_DIRECT_MEMBERS");
    setenv("XDEV_COLL_BCAST_LONG", "12Q", 1);
    EXPECT(xdev_coll_group_create(t_dev, NULL, p, 1, &g), XDEV_ERR_INIT);
    unsetenv("XDEV_COLL_BCAST_LONG");
    setenv("XDEV_COLL_YIELD_US", "20000000", 1); /* over 10 s */
    EXPECT(xdev_coll_group_create(t_dev, NULL, p, 1, &g), XDEV_ERR_INIT);
    unsetenv("XDEV_COLL_YIELD_US");
    CHECK(g == sentinel, "a failed group_create wrote its output");

    t_phase("group_create on a context a group owns");
    int ctx = t_next_ctx();
    xdev_coll_group_t *owner;
    CHECK_RC(xdev_coll_group_create(t_dev, NULL, p, ctx, &owner));
    EXPECT(xdev_coll_group_create(t_dev, NULL, p, ctx, &g), XDEV_ERR_ARG);
    EXPECT(xdev_coll_group_create(t_dev, &r, 1, ctx, &g), XDEV_ERR_ARG);
    CHECK(g == sentinel, "a refused group_create wrote its output");
    CHECK_RC(xdev_coll_barrier(owner)); /* the owner still works */
    CHECK_RC(xdev_coll_group_free(owner));
    CHECK_RC(xdev_coll_group_create(t_dev, &r, 1, ctx, &g)); /* free again */
    CHECK_RC(xdev_coll_group_free(g));
    g = sentinel;
    EXPECT(xdev_coll_group_rank(NULL), XDEV_ERR_ARG);
    EXPECT(xdev_coll_group_size(NULL), XDEV_ERR_ARG);
    EXPECT(xdev_coll_group_free(NULL), XDEV_OK);
    free(ranks);
}

/* What xdev_peek hands out now must all be libxdev_coll's own requests:
 * the test has none of its own posted. */
static void only_library_requests_peeked(void)
{
    xdev_request_t *req;
    int n = 0, rc;
    while ((rc = xdev_peek_timed(t_dev, 0, &req)) == XDEV_OK) {
        CHECK(req->user == XDEV_COLL_REQUEST, "xdev_peek handed out a request whose user is %p",
              req->user);
        n++;
    }
    CHECK(rc == XDEV_ERR_TIMEOUT, "xdev_peek_timed returned %d (%s)", rc, xdev_strerror(rc));
    t_phase("%d of the library's requests peeked", n);
}

/* Each v-variant with one rank's own count off by one: that rank gets
 * XDEV_ERR_TRUNCATE at once and sends nothing, the others XDEV_ERR_PEER
 * (or XDEV_OK where they needed nothing from it: gatherv's senders), and
 * nobody waits (the watchdog would say). The group is broken after, and
 * its requests may still use the buffers (c: 4p counts, in and out:
 * 4p + 8 bytes) until xdev_finalize. */
static void own_count_mismatch(size_t *c, uint8_t *in, uint8_t *out)
{
    int p = t_size, r = t_rank, odd = p - 1;
    size_t *d = c + p, *rc4 = d + p, *rd = rc4 + p;
    for (int i = 0; i < p; i++) {
        c[i] = rc4[i] = 4;
        d[i] = rd[i] = 4 * (size_t)i;
    }
    /* send blocks of 4 bytes at 4 * i (scatterv's root, alltoallv) */
    memset(in, 'a', 4 * (size_t)p + 8);
    static const char *const names[] = {"gatherv", "scatterv", "allgatherv", "alltoallv"};
    int told_ctx = t_next_ctx();
    for (int k = 0; k < 4; k++) {
        t_phase("own count mismatch: %s", names[k]);
        xdev_coll_group_t *g = NULL;
        CHECK_RC(xdev_coll_group_create(t_dev, NULL, p, t_next_ctx(), &g));
        int me_odd = r == (k < 2 ? 0 : odd), rc;
        size_t len = me_odd ? 5 : 4;
        if (k == 3 && me_odd) rc4[odd] = 5;
        switch (k) {
        case 0: rc = xdev_coll_gatherv(g, in, len, out, c, d, 0); break;
        case 1: rc = xdev_coll_scatterv(g, in, c, d, out, len, 0); break;
        case 2: rc = xdev_coll_allgatherv(g, in, len, out, c, d); break;
        default: rc = xdev_coll_alltoallv(g, in, c, d, out, rc4, rd); break;
        }
        rc4[odd] = 4;
        if (me_odd)
            CHECK(rc == XDEV_ERR_TRUNCATE, "%s with my own count off: %d (%s), want TRUNCATE",
                  names[k], rc, xdev_strerror(rc));
        else
            CHECK(rc == XDEV_ERR_PEER || (k == 0 && rc == XDEV_OK),
                  "%s beside a rank whose own count is off: %d (%s), want PEER", names[k], rc,
                  xdev_strerror(rc));
        /* A gatherv sender may return OK, having waited for nothing. The
         * notice reached it before member 0's word on another context
         * (one stream per peer), so its next collective fails, even one
         * that does not wait either (a bcast from itself): a call looks at
         * the notice once it has posted its requests. */
        if (k == 0 && me_odd)
            for (int q = 1; q < p; q++) CHECK_RC(xdev_send(t_dev, NULL, 0, q, 0, told_ctx));
        if (k == 0 && !me_odd) {
            CHECK_RC(xdev_recv(t_dev, NULL, 0, 0, 0, told_ctx, NULL));
            if (rc == XDEV_OK) {
                rc = xdev_coll_bcast(g, in, 4, r);
                CHECK(rc == XDEV_ERR_PEER, "a bcast after the notice came: %d (%s), want PEER",
                      rc, xdev_strerror(rc));
            }
        }
        rc = xdev_coll_barrier(g);
        CHECK(rc == (me_odd ? XDEV_ERR_TRUNCATE : XDEV_ERR_PEER),
              "barrier on the broken group: %d (%s)", rc, xdev_strerror(rc));
        CHECK_RC(xdev_coll_group_free(g));
    }
    only_library_requests_peeked();
}

/* The ring reduce-scatter (reduce_scatter's, and allreduce's for long
 * vectors) with the last member's first block one element longer: every
 * later block keeps its length and starts one element further on, so its
 * messages have the sizes the others expect, from other places. Every
 * member must fail: none may return XDEV_OK with blocks taken from the
 * wrong places. Four rounds, as a member could once finish before the
 * failure reached it in some runs and not others. */
static void layout_mismatch(int32_t *in, int32_t *out)
{
    int p = t_size, odd = p - 1;
    size_t count = 4 * (size_t)p + 1, *rcounts = t_malloc(sizeof(size_t) * (size_t)p);
    for (size_t i = 0; i < count; i++) in[i] = (int32_t)i + 1;
    xdev_coll_op_t sum = {XDEV_COLL_INT32, XDEV_COLL_SUM, NULL, 0, NULL};
    static const char *const vars[] = {"XDEV_COLL_REDUCE_SCATTER", "XDEV_COLL_ALLREDUCE"};
    for (int round = 0; round < 8; round++) {
        int k = round % 2;
        t_phase("block layout mismatch: %s=ring, round %d", vars[k], round / 2);
        setenv(vars[k], "ring", 1);
        xdev_coll_group_t *g = NULL;
        CHECK_RC(xdev_coll_group_create(t_dev, NULL, p, t_next_ctx(), &g));
        unsetenv(vars[k]);
        for (int i = 0; i < p; i++) rcounts[i] = 4 + (i == 0 && t_rank == odd);
        int rc = k ? xdev_coll_allreduce(g, in, out, count - (t_rank != odd), &sum)
                   : xdev_coll_reduce_scatter(g, in, out, rcounts, &sum);
        CHECK(rc == XDEV_ERR_TRUNCATE || rc == XDEV_ERR_PEER,
              "%s=ring, the last member's first block longer: %d (%s), want an error", vars[k],
              rc, xdev_strerror(rc));
        CHECK_RC(xdev_coll_group_free(g));
    }
    only_library_requests_peeked();
    free(rcounts);
}

/* Sizes on both sides of the allreduce direct threshold (2K), with each of
 * the two algorithms forced: every member runs the same one, so the sizes
 * meet and every member fails (chosen per member, they would not meet). */
static void forced_across_threshold(uint8_t *in, uint8_t *out)
{
    int p = t_size;
    memset(in, 1, 2049);
    xdev_coll_op_t sum = {XDEV_COLL_UINT8, XDEV_COLL_SUM, NULL, 0, NULL};
    static const char *const algs[] = {"direct", "recursive_doubling"};
    for (int k = 0; k < 2; k++) {
        t_phase("allreduce=%s, 2048 and 2049 bytes", algs[k]);
        xdev_coll_group_t *g = t_world("XDEV_COLL_ALLREDUCE", algs[k]);
        int rc = xdev_coll_allreduce(g, in, out, t_rank == p - 1 ? 2049 : 2048, &sum);
        CHECK(rc == XDEV_ERR_TRUNCATE || rc == XDEV_ERR_PEER,
              "allreduce=%s with the last member's count one longer: %d (%s), want an error",
              algs[k], rc, xdev_strerror(rc));
        CHECK_RC(xdev_coll_group_free(g));
    }
}

/* A notice names the call that failed. Member 0 finishes a gather (a
 * sender) and then fails a scatterv it roots (its own count off by one)
 * while a late member has not entered the gather: in round 0 the gather's
 * root, which has the notice before it posts; in round 1 (3 members or
 * more) another member, whose block the root waits for as the notice
 * comes. The gather must complete whole everywhere, and the scatterv fail
 * everywhere: members failing the gather for a notice of the scatterv
 * would disagree with member 0 about which call failed. */
static void notice_of_later_call(uint8_t *out)
{
    int p = t_size, r = t_rank;
    size_t *c = t_malloc(2 * sizeof(size_t) * (size_t)p), *d = c + p;
    uint8_t blk[8], *all = t_malloc(8 * (size_t)p), *sb = t_malloc(8 * (size_t)p);
    for (int i = 0; i < p; i++) {
        c[i] = 8;
        d[i] = 8 * (size_t)i;
    }
    memset(sb, 's', 8 * (size_t)p);
    for (int round = 0; round < (p > 2 ? 2 : 1); round++) {
        int root = round ? 1 : p - 1, late = p - 1;
        t_phase("a notice of a later call, round %d", round);
        xdev_coll_group_t *g = NULL;
        CHECK_RC(xdev_coll_group_create(t_dev, NULL, p, t_next_ctx(), &g));
        t_fill(blk, 8, 90 + (uint64_t)round, r);
        if (r == late) usleep(300 * 1000);
        int rc = xdev_coll_gather(g, blk, 8, all, root);
        CHECK(rc == XDEV_OK, "gather before the call member 0 fails: %d (%s), want OK", rc,
              xdev_strerror(rc));
        for (int q = 0; q < p && r == root; q++)
            CHECK_DATA(all + 8 * (size_t)q, 8, 90 + (uint64_t)round, q, "member %d's block", q);
        rc = xdev_coll_scatterv(g, sb, c, d, out, r == 0 ? 9 : 8, 0);
        CHECK(rc == (r == 0 ? XDEV_ERR_TRUNCATE : XDEV_ERR_PEER),
              "scatterv whose root's own count is off: %d (%s)", rc, xdev_strerror(rc));
        CHECK_RC(xdev_coll_group_free(g));
    }
    free(c);
    free(all);
    free(sb);
}

int case_mismatch(void)
{
    /* Requests of a failed collective may write into its buffers until
     * xdev_finalize: every case's buffers live until then. */
    size_t p = (size_t)t_size, *c = t_malloc(4 * sizeof(size_t) * p), n = 16 * p + 2049;
    uint8_t *in = t_malloc(n), *out = t_malloc(n);
    if (p > 1) own_count_mismatch(c, in, out);
    if (p > 1) layout_mismatch((int32_t *)in, (int32_t *)out);
    if (p > 1) forced_across_threshold(in, out);
    if (p > 1) notice_of_later_call(out);
    /* The failed collectives' requests are abandoned at finalize. */
    t_phase("xdev_finalize");
    int rc = xdev_finalize(t_dev);
    CHECK(rc == XDEV_OK || rc == XDEV_ERR_CANCELED, "xdev_finalize returned %d (%s)", rc,
          xdev_strerror(rc));
    free(c);
    free(in);
    free(out);
    if (t_rank == 0) printf("coll mismatch: %d ranks: PASS\n", t_size);
    return 0;
}

int case_args(void)
{
    int p = t_size, r = t_rank;
    group_args();
    xdev_coll_group_t *g = t_world(NULL, NULL);
    uint8_t buf[64], out[64 * 16];
    memset(buf, 0x5A, sizeof buf);
    memset(out, 0x5A, sizeof out);
    size_t *counts = t_malloc(sizeof(size_t) * (size_t)p), *displs = t_malloc(sizeof(size_t) * (size_t)p);
    for (int i = 0; i < p; i++) {
        counts[i] = 4;
        displs[i] = 4 * (size_t)i;
    }
    xdev_coll_op_t sum = {XDEV_COLL_INT32, XDEV_COLL_SUM, NULL, 0, NULL};

    t_phase("collective arguments");
    EXPECT(xdev_coll_barrier(NULL), XDEV_ERR_ARG);
    EXPECT(xdev_coll_bcast(NULL, buf, 4, 0), XDEV_ERR_ARG);
    EXPECT(xdev_coll_bcast(g, NULL, 4, 0), XDEV_ERR_ARG);
    EXPECT(xdev_coll_bcast(g, buf, 4, -1), XDEV_ERR_ARG);
    EXPECT(xdev_coll_bcast(g, buf, 4, p), XDEV_ERR_ARG);
    EXPECT(xdev_coll_gather(g, NULL, 4, out, 0), XDEV_ERR_ARG);
    if (p > 1) EXPECT(xdev_coll_alltoall(g, buf, SIZE_MAX / 2 + 1, out), XDEV_ERR_ARG);
    if (r == 0) EXPECT(xdev_coll_gather(g, buf, 4, NULL, 0), XDEV_ERR_ARG);
    if (r == 0) EXPECT(xdev_coll_gatherv(g, buf, 4, out, NULL, displs, 0), XDEV_ERR_ARG);
    if (r == 0) EXPECT(xdev_coll_scatter(g, NULL, buf, 4, 0), XDEV_ERR_ARG);
    if (r == 0) EXPECT(xdev_coll_scatterv(g, out, counts, NULL, buf, 4, 0), XDEV_ERR_ARG);
    EXPECT(xdev_coll_scatter(g, out, NULL, 4, 0), XDEV_ERR_ARG);
    EXPECT(xdev_coll_allgather(g, buf, 4, NULL), XDEV_ERR_ARG);
    EXPECT(xdev_coll_allgatherv(g, buf, 4, out, NULL, displs), XDEV_ERR_ARG);
    EXPECT(xdev_coll_alltoall(g, NULL, 4, out), XDEV_ERR_ARG);
    EXPECT(xdev_coll_alltoallv(g, buf, counts, displs, out, NULL, displs), XDEV_ERR_ARG);
    EXPECT(xdev_coll_reduce(g, buf, out, 4, NULL, 0), XDEV_ERR_ARG);
    EXPECT(xdev_coll_reduce(g, buf, out, 4, &sum, p), XDEV_ERR_ARG);
    EXPECT(xdev_coll_allreduce(g, buf, out, SIZE_MAX / 2, &sum), XDEV_ERR_ARG);
    xdev_coll_op_t bad[] = {
        {XDEV_COLL_FLOAT, XDEV_COLL_BAND, NULL, 0, NULL},  /* bitwise on floats */
        {XDEV_COLL_DOUBLE, XDEV_COLL_BXOR, NULL, 0, NULL},
        {99, XDEV_COLL_SUM, NULL, 0, NULL},                 /* no such type */
        {XDEV_COLL_INT32, 0, NULL, 0, NULL},                /* no such op */
        {XDEV_COLL_INT32, 99, NULL, 0, NULL},
        {0, XDEV_COLL_USER, NULL, 4, NULL},                 /* user op without function */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        t_phase("bad op %zu", k);
        EXPECT(xdev_coll_allreduce(g, buf, out, 4, &bad[k]), XDEV_ERR_ARG);
        EXPECT(xdev_coll_reduce(g, buf, out, 4, &bad[k], 0), XDEV_ERR_ARG);
        EXPECT(xdev_coll_scan(g, buf, out, 4, &bad[k]), XDEV_ERR_ARG);
        EXPECT(xdev_coll_reduce_scatter(g, buf, out, counts, &bad[k]), XDEV_ERR_ARG);
    }
    EXPECT(xdev_coll_reduce_scatter(g, buf, out, NULL, &sum), XDEV_ERR_ARG);
    for (size_t i = 0; i < sizeof buf; i++) CHECK(buf[i] == 0x5A, "buf byte %zu changed", i);
    for (size_t i = 0; i < sizeof out; i++) CHECK(out[i] == 0x5A, "out byte %zu changed", i);

    /* The group was not harmed. */
    t_phase("group still works");
    int32_t v = 1, total = 0;
    CHECK_RC(xdev_coll_allreduce(g, &v, &total, 1, &sum));
    CHECK(total == p, "allreduce after bad calls: %d", total);
    CHECK_RC(xdev_coll_group_free(g));
    free(counts);
    free(displs);
    return 0;
}
