/*
 * alltoall.c - alltoall(v): for short blocks every receive and send is
 * posted at once (p - 1 of each, all overlapping; F-MPJ's nbFT); for long
 * ones a pairwise exchange of p - 1 steps, each member trading with one
 * partner per step (partner = rank XOR step when p is a power of two, else
 * rank + step / rank - step), which bounds the data in flight. Each pair
 * exchanges exactly one message per direction under either algorithm, so
 * members that pick differently (alltoallv sizes differ per member) still
 * match.
 */
#include "coll.h"

enum { PH_DATA };

/* The v form's blocks; alltoall passes no arrays, and its blocks are all
 * len bytes (coll_count_of). */
struct blocks {
    const size_t *sc, *sd, *rc, *rd;
    size_t len;
};

static size_t send_len(const struct blocks *b, int i) { return coll_count_of(b->sc, b->len, i); }
static size_t recv_len(const struct blocks *b, int i) { return coll_count_of(b->rc, b->len, i); }
static const void *send_at(const struct blocks *b, const void *sbuf, int i)
{
    return coll_cat(sbuf, coll_displ_of(b->sd, b->len, i));
}
static void *recv_at(const struct blocks *b, void *rbuf, int i)
{
    return coll_at(rbuf, coll_displ_of(b->rd, b->len, i));
}

static int alltoallv_linear(xdev_coll_group_t *g, const void *sbuf, void *rbuf,
                            const struct blocks *b)
{
    int p = g->size, r = g->rank, rc = XDEV_OK;
    for (int k = 1; k < p && !rc; k++) {
        int src = (r - k + p) % p;
        rc = coll_irecv(g, recv_at(b, rbuf, src), recv_len(b, src), src, PH_DATA);
    }
    for (int k = 1; k < p && !rc; k++) {
        int dst = (r + k) % p;
        rc = coll_isend(g, send_at(b, sbuf, dst), send_len(b, dst), dst, PH_DATA);
    }
    coll_copy(recv_at(b, rbuf, r), send_at(b, sbuf, r), send_len(b, r));
    return rc ? rc : coll_waitall_from_all(g);
}

static int alltoallv_pairwise(xdev_coll_group_t *g, const void *sbuf, void *rbuf,
                              const struct blocks *b)
{
    int p = g->size, r = g->rank, rc = XDEV_OK;
    int pof2 = (p & (p - 1)) == 0;
    coll_copy(recv_at(b, rbuf, r), send_at(b, sbuf, r), send_len(b, r));
    for (int k = 1; k < p && !rc; k++) {
        int dst = pof2 ? r ^ k : (r + k) % p;
        int src = pof2 ? r ^ k : (r - k + p) % p;
        rc = coll_sendrecv(g, send_at(b, sbuf, dst), send_len(b, dst), dst, recv_at(b, rbuf, src),
                           recv_len(b, src), src, PH_DATA);
    }
    return rc;
}

static int run(xdev_coll_group_t *g, const void *sbuf, void *rbuf, const struct blocks *b,
               size_t local_bytes)
{
    int rc = coll_begin(g);
    if (rc) return rc;
    if (coll_pick(g, F_ALLTOALL, local_bytes, 1) == ALLTOALL_PAIRWISE)
        rc = alltoallv_pairwise(g, sbuf, rbuf, b);
    else
        rc = alltoallv_linear(g, sbuf, rbuf, b);
    return coll_end(g, rc);
}

int xdev_coll_alltoall(xdev_coll_group_t *g, const void *sbuf, size_t len, void *rbuf)
{
    if (!g) return XDEV_ERR_ARG;
    int ok = 1;
    size_t total = coll_bytes(len, (size_t)g->size, &ok);
    if (!ok || !coll_buf_ok(sbuf, total) || !coll_buf_ok(rbuf, total)) return XDEV_ERR_ARG;
    /* The per-block size picks the algorithm: what each step moves. */
    const struct blocks b = {.len = len};
    return run(g, sbuf, rbuf, &b, len);
}

int xdev_coll_alltoallv(xdev_coll_group_t *g, const void *sbuf, const size_t *sc,
                        const size_t *sd, void *rbuf, const size_t *rc_, const size_t *rd)
{
    if (!g || !sc || !sd || !rc_ || !rd) return XDEV_ERR_ARG;
    size_t most = 0;
    for (int i = 0; i < g->size; i++) {
        if (!coll_buf_ok(sbuf, sc[i]) || !coll_buf_ok(rbuf, rc_[i])) return XDEV_ERR_ARG;
        if ((sc[i] && sd[i] > SIZE_MAX - sc[i]) || (rc_[i] && rd[i] > SIZE_MAX - rc_[i]))
            return XDEV_ERR_ARG;
        if (sc[i] > most) most = sc[i];
    }
    if (sc[g->rank] != rc_[g->rank]) return coll_mismatch(g);
    const struct blocks b = {sc, sd, rc_, rd, 0};
    return run(g, sbuf, rbuf, &b, most);
}
