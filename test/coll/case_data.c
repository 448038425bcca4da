/*
 * case_data.c - the data-moving collectives against local references:
 * bcast, gather(v), scatter(v), allgather(v), alltoall(v), with every
 * algorithm (forced through XDEV_COLL_*), every root and the size sweep.
 * Receive buffers start as 0xEE and every byte outside the delivered
 * regions (v forms leave gaps) must still be 0xEE afterwards.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define FILLER 0xEE
#define GAP 5

static void check_filler(const uint8_t *p, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        CHECK(p[i] == FILLER, "%s: byte %zu outside the data was written", what, i);
}

/* Large messages go to a few roots only when ranks are many. */
static int root_used(int root, size_t size)
{
    if (t_size <= 3 || size < MiB) return 1;
    return root == 0 || root == t_size / 2;
}

static void test_bcast(const char *alg, size_t size, uint64_t seed)
{
    xdev_coll_group_t *g = t_world("XDEV_COLL_BCAST", alg);
    uint8_t *buf = t_malloc(size);
    for (int root = 0; root < t_size; root++) {
        if (!root_used(root, size)) continue;
        t_phase("bcast %s size %zu root %d", alg, size, root);
        if (t_rank == root) t_fill(buf, size, seed + root, root);
        else memset(buf, FILLER, size);
        CHECK_RC(xdev_coll_bcast(g, buf, size, root));
        CHECK_DATA(buf, size, seed + root, root, "bcast %s size %zu root %d", alg, size, root);
    }
    free(buf);
    CHECK_RC(xdev_coll_group_free(g));
}

/* The transport the tests were started with ("auto" if none). All ranks
 * run on this one host, so under auto or shm the devices open shm alone;
 * any other puts a network transport between them. */
static const char *transport(void)
{
    const char *tp = getenv("XDEV_TRANSPORT");
    return tp && *tp ? tp : "auto";
}

static int shm_alone(const char *tp) { return !strcmp(tp, "auto") || !strcmp(tp, "shm"); }

/* An automatic bcast of size bytes from member 0, its data checked;
 * returns how many messages this member sent in it. */
static uint64_t auto_bcast_sent(size_t size, uint64_t seed)
{
    xdev_coll_group_t *g = t_world("XDEV_COLL_BCAST", NULL);
    uint8_t *buf = t_malloc(size);
    if (t_rank == 0) t_fill(buf, size, seed, 0);
    xdev_stats_t before, after;
    CHECK_RC(xdev_stats(t_dev, &before));
    t_phase("bcast auto choice, size %zu", size);
    CHECK_RC(xdev_coll_bcast(g, buf, size, 0));
    CHECK_RC(xdev_stats(t_dev, &after));
    CHECK_DATA(buf, size, seed, 0, "bcast auto choice, size %zu", size);
    uint64_t sent = 0;
    for (int i = 0; i < after.ntransports; i++)
        sent += after.transport[i].msgs_sent - before.transport[i].msgs_sent;
    free(buf);
    CHECK_RC(xdev_coll_group_free(g));
    return sent;
}

/* The automatic choice for a long broadcast: the tree when every rank is
 * on this host over shm (where the scatter + ring only copies more), the
 * scatter + ring when ranks talk over a network transport. Told apart by
 * what the last member sends: it is a leaf of the tree, and passes p - 1
 * blocks along the ring. */
static void test_bcast_choice(void)
{
    const char *tp = transport();
    uint64_t sent = auto_bcast_sent(64 * KiB, 77);
    if (t_rank == t_size - 1) {
        uint64_t want = shm_alone(tp) ? 0 : (uint64_t)t_size - 1;
        CHECK(sent == want, "the last member sent %llu messages in a 64 KiB bcast over %s, want %llu",
              (unsigned long long)sent, tp, (unsigned long long)want);
    }
}

/* The automatic choice for a short broadcast in a group of up to 8: the
 * root sends to every member itself, so no member passes it on (in the
 * tree, member 2 of 4 or more would pass it to member 3). */
static void test_bcast_short_choice(void)
{
    uint64_t sent = auto_bcast_sent(8, 78);
    uint64_t want = t_rank == 0 ? (uint64_t)t_size - 1 : 0;
    CHECK(sent == want, "member %d sent %llu messages in an 8-byte bcast from 0 of %d, want %llu",
          t_rank, (unsigned long long)sent, t_size, (unsigned long long)want);
}

/* The automatic choice for long alltoall blocks, at 4 ranks: everything
 * posted at once over shm alone, pairwise exchange over tcp. Rank 0
 * enters late. Posted at once, every other member sends its block to
 * rank 0 as it enters; pairwise, member 3 trades first with 2, then with
 * 1, which waits for rank 0 in its first step, so nothing of member 3's
 * can reach rank 0 before rank 0 enters. Blocks of 48 KiB are long (from
 * 32 KiB) and still eager, so what was sent is in rank 0's rings. */
static void test_alltoall_choice(void)
{
    const char *tp = transport();
    int one_host = shm_alone(tp);
    size_t blk = 48 * KiB;
    int ctx = t_next_ctx();
    xdev_coll_group_t *g;
    CHECK_RC(xdev_coll_group_create(t_dev, NULL, t_size, ctx, &g));
    uint8_t *sbuf = t_malloc(blk * 4), *rbuf = t_malloc(blk * 4);
    for (int i = 0; i < 4; i++) t_fill(sbuf + (size_t)i * blk, blk, 90 + (uint64_t)i, t_rank);
    if (t_rank == 0) {
        t_phase("alltoall auto choice: rank 0 looks before it enters");
        double until = t_now() + (one_host ? 10.0 : 0.3);
        int waiting = 0, from_last = 0;
        while (t_now() < until && !(one_host && waiting == 3)) {
            waiting = 0;
            for (int src = 1; src < 4; src++) {
                int found = 0;
                xdev_status_t st;
                CHECK_RC(xdev_iprobe(t_dev, src, XDEV_ANY_TAG, ctx, &found, &st));
                waiting += found;
                if (src == 3) from_last = found;
            }
        }
        if (one_host)
            CHECK(waiting == 3, "over shm alone %d of 3 blocks were sent before rank 0 entered", waiting);
        else
            CHECK(!from_last, "over %s member 3 sent its block before rank 0 entered", tp);
    }
    t_phase("alltoall auto choice");
    CHECK_RC(xdev_coll_alltoall(g, sbuf, blk, rbuf));
    for (int i = 0; i < 4; i++)
        CHECK_DATA(rbuf + (size_t)i * blk, blk, 90 + (uint64_t)t_rank, i, "alltoall auto choice from %d", i);
    free(sbuf);
    free(rbuf);
    CHECK_RC(xdev_coll_group_free(g));
}

/* v-form layout: member i's count and displacement, members placed in
 * reverse order with GAP filler bytes between them. */
static size_t v_count(size_t blk, int i) { return i == 1 ? 0 : blk + (size_t)(i % 3); }
static size_t v_layout(size_t blk, size_t *counts, size_t *displs)
{
    size_t at = 0;
    for (int i = t_size - 1; i >= 0; i--) {
        counts[i] = v_count(blk, i);
        displs[i] = at;
        at += counts[i] + GAP;
    }
    return at;
}

static void check_v(const uint8_t *buf, const size_t *counts, const size_t *displs, size_t total,
                    uint64_t seed, const char *what)
{
    uint8_t *mask = t_malloc(total);
    memset(mask, 0, total);
    for (int i = 0; i < t_size; i++) {
        CHECK_DATA(buf + displs[i], counts[i], seed, i, "%s: block of member %d", what, i);
        memset(mask + displs[i], 1, counts[i]);
    }
    for (size_t k = 0; k < total; k++)
        CHECK(mask[k] || buf[k] == FILLER, "%s: gap byte %zu written", what, k);
    free(mask);
}

static void test_gather_scatter(const char *galg, size_t size, uint64_t seed)
{
    int p = t_size;
    size_t blk = size / (size_t)p;
    xdev_coll_group_t *gg = t_world("XDEV_COLL_GATHER", galg);
    xdev_coll_group_t *gs = t_world("XDEV_COLL_SCATTER", galg);
    uint8_t *mine = t_malloc(blk + 2), *all = t_malloc(blk * (size_t)p);
    size_t *counts = t_malloc(sizeof(size_t) * (size_t)p), *displs = t_malloc(sizeof(size_t) * (size_t)p);
    size_t vtotal = v_layout(blk, counts, displs);
    uint8_t *vbuf = t_malloc(vtotal);
    for (int root = 0; root < p; root++) {
        if (!root_used(root, size)) continue;
        t_phase("gather %s blk %zu root %d", galg, blk, root);
        t_fill(mine, blk, seed, t_rank);
        memset(all, FILLER, blk * (size_t)p);
        CHECK_RC(xdev_coll_gather(gg, mine, blk, all, root));
        if (t_rank == root)
            for (int i = 0; i < p; i++)
                CHECK_DATA(all + (size_t)i * blk, blk, seed, i, "gather %s blk %zu root %d from %d",
                           galg, blk, root, i);

        t_phase("scatter %s blk %zu root %d", galg, blk, root);
        if (t_rank == root)
            for (int i = 0; i < p; i++) t_fill(all + (size_t)i * blk, blk, seed + 1, i);
        memset(mine, FILLER, blk + 2);
        CHECK_RC(xdev_coll_scatter(gs, all, mine, blk, root));
        CHECK_DATA(mine, blk, seed + 1, t_rank, "scatter %s blk %zu root %d", galg, blk, root);
        check_filler(mine + blk, 2, "scatter tail");

        t_phase("gatherv blk %zu root %d", blk, root);
        size_t n = v_count(blk, t_rank);
        t_fill(mine, n, seed + 2, t_rank);
        memset(vbuf, FILLER, vtotal);
        CHECK_RC(xdev_coll_gatherv(gg, mine, n, vbuf, counts, displs, root));
        if (t_rank == root) check_v(vbuf, counts, displs, vtotal, seed + 2, "gatherv");

        t_phase("scatterv blk %zu root %d", blk, root);
        if (t_rank == root)
            for (int i = 0; i < p; i++) t_fill(vbuf + displs[i], counts[i], seed + 3, i);
        memset(mine, FILLER, blk + 2);
        CHECK_RC(xdev_coll_scatterv(gs, vbuf, counts, displs, mine, n, root));
        CHECK_DATA(mine, n, seed + 3, t_rank, "scatterv blk %zu root %d", blk, root);
        check_filler(mine + n, blk + 2 - n, "scatterv tail");
    }
    free(mine);
    free(all);
    free(vbuf);
    free(counts);
    free(displs);
    CHECK_RC(xdev_coll_group_free(gg));
    CHECK_RC(xdev_coll_group_free(gs));
}

static void test_allgather(const char *alg, size_t size, uint64_t seed)
{
    int p = t_size;
    size_t blk = size / (size_t)p;
    xdev_coll_group_t *g = t_world("XDEV_COLL_ALLGATHER", alg);
    uint8_t *mine = t_malloc(blk + 2), *all = t_malloc(blk * (size_t)p);
    t_phase("allgather %s blk %zu", alg, blk);
    t_fill(mine, blk, seed, t_rank);
    memset(all, FILLER, blk * (size_t)p);
    CHECK_RC(xdev_coll_allgather(g, mine, blk, all));
    for (int i = 0; i < p; i++)
        CHECK_DATA(all + (size_t)i * blk, blk, seed, i, "allgather %s blk %zu from %d", alg, blk, i);

    t_phase("allgatherv blk %zu", blk);
    size_t *counts = t_malloc(sizeof(size_t) * (size_t)p), *displs = t_malloc(sizeof(size_t) * (size_t)p);
    size_t vtotal = v_layout(blk, counts, displs);
    uint8_t *vbuf = t_malloc(vtotal);
    memset(vbuf, FILLER, vtotal);
    t_fill(mine, counts[t_rank], seed + 1, t_rank);
    CHECK_RC(xdev_coll_allgatherv(g, mine, counts[t_rank], vbuf, counts, displs));
    check_v(vbuf, counts, displs, vtotal, seed + 1, "allgatherv");
    free(mine);
    free(all);
    free(vbuf);
    free(counts);
    free(displs);
    CHECK_RC(xdev_coll_group_free(g));
}

/* Bytes member i sends member j in alltoallv; some pairs send nothing. */
static size_t a2av_count(size_t blk, int i, int j)
{
    return (i + j) % 5 == 0 ? 0 : blk + (size_t)((i + 2 * j) % 4);
}
static uint64_t a2a_seed(uint64_t seed, int to) { return seed ^ ((uint64_t)to << 32); }

static void test_alltoall(const char *alg, size_t size, uint64_t seed)
{
    int p = t_size;
    size_t blk = size / (size_t)p;
    xdev_coll_group_t *g = t_world("XDEV_COLL_ALLTOALL", alg);
    uint8_t *sbuf = t_malloc(blk * (size_t)p), *rbuf = t_malloc(blk * (size_t)p);
    t_phase("alltoall %s blk %zu", alg, blk);
    for (int j = 0; j < p; j++) t_fill(sbuf + (size_t)j * blk, blk, a2a_seed(seed, j), t_rank);
    memset(rbuf, FILLER, blk * (size_t)p);
    CHECK_RC(xdev_coll_alltoall(g, sbuf, blk, rbuf));
    for (int i = 0; i < p; i++)
        CHECK_DATA(rbuf + (size_t)i * blk, blk, a2a_seed(seed, t_rank), i,
                   "alltoall %s blk %zu from %d", alg, blk, i);
    free(sbuf);
    free(rbuf);

    t_phase("alltoallv %s blk %zu", alg, blk);
    size_t *sc = t_malloc(4 * sizeof(size_t) * (size_t)p), *sd = sc + p, *rc = sd + p, *rd = rc + p;
    size_t stotal = 0, rtotal = 0;
    for (int j = p - 1; j >= 0; j--) { /* send blocks in reverse order */
        sc[j] = a2av_count(blk, t_rank, j);
        sd[j] = stotal;
        stotal += sc[j];
    }
    for (int i = 0; i < p; i++) {
        rc[i] = a2av_count(blk, i, t_rank);
        rd[i] = rtotal;
        rtotal += rc[i] + GAP;
    }
    sbuf = t_malloc(stotal);
    rbuf = t_malloc(rtotal);
    for (int j = 0; j < p; j++) t_fill(sbuf + sd[j], sc[j], a2a_seed(seed + 1, j), t_rank);
    memset(rbuf, FILLER, rtotal);
    CHECK_RC(xdev_coll_alltoallv(g, sbuf, sc, sd, rbuf, rc, rd));
    for (int i = 0; i < p; i++) {
        CHECK_DATA(rbuf + rd[i], rc[i], a2a_seed(seed + 1, t_rank), i,
                   "alltoallv %s blk %zu from %d", alg, blk, i);
        check_filler(rbuf + rd[i] + rc[i], GAP, "alltoallv gap");
    }
    free(sbuf);
    free(rbuf);
    free(sc);
    CHECK_RC(xdev_coll_group_free(g));
}

int case_data(void)
{
    static const char *bcast[] = {"binomial", "scatter_ring", "direct", NULL};
    static const char *gather[] = {"binomial", "linear", NULL};
    static const char *allgather[] = {"gather_bcast", "ring", "direct", NULL};
    static const char *alltoall[] = {"linear", "pairwise", NULL};
    const size_t *sizes = t_sizes();
    uint64_t seed = 1;
    if (t_size >= 3) test_bcast_choice();
    if (t_size <= 8) test_bcast_short_choice();
    if (t_size == 4) test_alltoall_choice();
    for (int k = 0; sizes[k] != (size_t)-1; k++) {
        size_t s = sizes[k];
        for (int a = 0; bcast[a]; a++) test_bcast(bcast[a], s, seed++);
        test_bcast("auto", s, seed++);
        for (int a = 0; gather[a]; a++) test_gather_scatter(gather[a], s, seed++);
        test_gather_scatter("auto", s, seed++);
        for (int a = 0; allgather[a]; a++) test_allgather(allgather[a], s, seed++);
        test_allgather("auto", s, seed++);
        for (int a = 0; alltoall[a]; a++) test_alltoall(alltoall[a], s, seed++);
        test_alltoall("auto", s, seed++);
    }
    return 0;
}
