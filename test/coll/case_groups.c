/*
 * case_groups.c - groups that are not the whole job, and isolation: two
 * groups on two contexts (one with the ranks in reverse order) run
 * collectives interleaved with each other and with user point-to-point
 * traffic on a third context, whose receives (one of them a full wildcard)
 * are posted before the collectives and use the same tags the collectives
 * use. Nothing may match across contexts. Then the even and the odd ranks
 * each form a group and run collectives inside it.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define USER_CTX 7
#define USER_LEN 3000

static void interleaved(void)
{
    int p = t_size, r = t_rank;
    int *rev = t_malloc(sizeof(int) * (size_t)p);
    for (int i = 0; i < p; i++) rev[i] = p - 1 - i;
    xdev_coll_group_t *a = t_world(NULL, NULL), *b = NULL;
    CHECK_RC(xdev_coll_group_create(t_dev, rev, p, t_next_ctx(), &b));
    CHECK(xdev_coll_group_rank(b) == p - 1 - r, "reversed group rank %d", xdev_coll_group_rank(b));

    /* User traffic in flight across the collectives: tags 0 and 256 are
     * the first collectives' tags on the groups' contexts. */
    uint8_t in1[USER_LEN], in2[USER_LEN], out1[USER_LEN], out2[USER_LEN];
    xdev_request_t rq[4];
    xdev_status_t st;
    int next = (r + 1) % p, prev = (r + p - 1) % p;
    t_fill(out1, USER_LEN, 77, r);
    t_fill(out2, USER_LEN, 78, r);
    CHECK_RC(xdev_irecv(t_dev, in1, USER_LEN, prev, 0, USER_CTX, &rq[0]));
    CHECK_RC(xdev_irecv(t_dev, in2, USER_LEN, XDEV_ANY_SOURCE, XDEV_ANY_TAG, USER_CTX, &rq[1]));

    for (int it = 0; it < 20; it++) {
        int64_t v = r + it, sum = 0;
        xdev_coll_op_t op = {XDEV_COLL_INT64, XDEV_COLL_SUM, NULL, 0, NULL};
        t_phase("interleaved %d: allreduce on a", it);
        CHECK_RC(xdev_coll_allreduce(a, &v, &sum, 1, &op));
        CHECK(sum == (int64_t)p * (p - 1) / 2 + (int64_t)p * it, "allreduce on a: %lld",
              (long long)sum);
        t_phase("interleaved %d: bcast on b", it);
        uint8_t buf[5000];
        int root = it % p; /* a group rank of b */
        if (xdev_coll_group_rank(b) == root) t_fill(buf, sizeof buf, (uint64_t)it, root);
        else memset(buf, 0, sizeof buf);
        CHECK_RC(xdev_coll_bcast(b, buf, sizeof buf, root));
        CHECK_DATA(buf, sizeof buf, (uint64_t)it, root, "bcast on b, iteration %d", it);
        if (it == 5) { /* user messages arrive while collectives run */
            CHECK_RC(xdev_isend(t_dev, out1, USER_LEN, next, 0, USER_CTX, &rq[2]));
            CHECK_RC(xdev_isend(t_dev, out2, USER_LEN, next, 256, USER_CTX, &rq[3]));
        }
        t_phase("interleaved %d: allgather on b", it);
        int32_t mine = r * 10 + it, *all = t_malloc(sizeof(int32_t) * (size_t)p);
        CHECK_RC(xdev_coll_allgather(b, &mine, sizeof mine, all));
        for (int i = 0; i < p; i++)
            CHECK(all[i] == (p - 1 - i) * 10 + it, "allgather on b: slot %d is %d", i, all[i]);
        free(all);
        CHECK_RC(xdev_coll_barrier(a));
    }
    t_phase("user traffic");
    CHECK_RC(xdev_wait(&rq[0], &st));
    CHECK(st.error == XDEV_OK && st.source == prev && st.tag == 0 && st.count == USER_LEN,
          "user receive: error %d source %d tag %d count %zu", st.error, st.source, st.tag, st.count);
    CHECK_DATA(in1, USER_LEN, 77, prev, "user message 1");
    CHECK_RC(xdev_wait(&rq[1], &st));
    CHECK(st.error == XDEV_OK && st.source == prev && st.tag == 256 && st.count == USER_LEN,
          "wildcard user receive: error %d source %d tag %d", st.error, st.source, st.tag);
    CHECK_DATA(in2, USER_LEN, 78, prev, "user message 2");
    CHECK_RC(xdev_wait(&rq[2], NULL));
    CHECK_RC(xdev_wait(&rq[3], NULL));
    CHECK_RC(xdev_coll_group_free(a));
    CHECK_RC(xdev_coll_group_free(b));
    free(rev);
}

static void halves(void)
{
    int p = t_size, r = t_rank, n = 0;
    int *members = t_malloc(sizeof(int) * (size_t)p);
    for (int i = r % 2; i < p; i += 2) members[n++] = i;
    int ctx = t_next_ctx() + r % 2; /* each half its own context */
    t_next_ctx();
    xdev_coll_group_t *g = NULL;
    CHECK_RC(xdev_coll_group_create(t_dev, members, n, ctx, &g));
    CHECK(xdev_coll_group_size(g) == n, "half size");
    int me = xdev_coll_group_rank(g);
    CHECK(members[me] == r, "half rank %d is device rank %d, not %d", me, members[me], r);
    for (int it = 0; it < 5; it++) {
        t_phase("half %d iteration %d", r % 2, it);
        double v = r, sum = 0;
        xdev_coll_op_t op = {XDEV_COLL_DOUBLE, XDEV_COLL_SUM, NULL, 0, NULL};
        CHECK_RC(xdev_coll_allreduce(g, &v, &sum, 1, &op));
        double want = 0;
        for (int i = 0; i < n; i++) want += members[i];
        CHECK(sum == want, "half allreduce %g, want %g", sum, want);
        size_t len = 200 * KiB;
        uint8_t *buf = t_malloc(len);
        int root = n - 1;
        if (me == root) t_fill(buf, len, 900 + (uint64_t)it, r);
        CHECK_RC(xdev_coll_bcast(g, buf, len, root));
        CHECK_DATA(buf, len, 900 + (uint64_t)it, members[root], "half bcast");
        free(buf);
    }
    CHECK_RC(xdev_coll_group_free(g));
    free(members);
}

int case_groups(void)
{
    interleaved();
    halves();
    return 0;
}

/* With XDEV_WILDCARD_FAILS=1 a death or finalize anywhere fails the
 * group's wildcard notice receive with XDEV_ERR_PEER_PENDING. That is no
 * failure notice: once the last rank, a member of no group here, has
 * finalized, the others' group works on. */
int case_wildcard(void)
{
    int p = t_size, r = t_rank, last = p - 1;
    CHECK(p >= 3, "run with 3 ranks or more");
    xdev_coll_group_t *g = NULL;
    int ctx = t_next_ctx();
    /* A message from the last rank first: over tcp a peer never spoken
     * to has no connection whose end would tell of its finalize. */
    if (r == last) {
        for (int i = 0; i < last; i++) CHECK_RC(xdev_send(t_dev, NULL, 0, i, 0, ctx + 1));
        return 0; /* main finalizes it now */
    }
    xdev_status_t hello;
    CHECK_RC(xdev_recv(t_dev, NULL, 0, last, 0, ctx + 1, &hello));
    CHECK_RC(xdev_coll_group_create(t_dev, NULL, last, ctx, &g));
    t_phase("waiting until rank %d is gone", last);
    while (xdev_peer_state(t_dev, last) != XDEV_PEER_DEAD) {
        int found;
        xdev_status_t st;
        CHECK_RC(xdev_iprobe(t_dev, last, 0, ctx + 1, &found, &st)); /* drives progress */
    }
    for (int i = 0; i < 20; i++) {
        t_phase("collective %d after rank %d finalized", i, last);
        CHECK_RC(xdev_coll_barrier(g));
        int32_t v = r, sum = 0;
        xdev_coll_op_t op = {XDEV_COLL_INT32, XDEV_COLL_SUM, NULL, 0, NULL};
        CHECK_RC(xdev_coll_allreduce(g, &v, &sum, 1, &op));
        CHECK(sum == last * (last - 1) / 2, "allreduce: %d", sum);
    }
    CHECK_RC(xdev_coll_group_free(g));
    return 0;
}
