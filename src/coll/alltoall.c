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
#include <stdlib.h>

#include "coll.h"

enum { PH_DATA };

static int alltoallv_linear(xdev_coll_group_t *g, const void *sbuf, const size_t *sc,
                            const size_t *sd, void *rbuf, const size_t *rc_, const size_t *rd)
{
    int p = g->size, r = g->rank, rc = XDEV_OK;
    for (int k = 1; k < p && !rc; k++) {
        int src = (r - k + p) % p;
        rc = coll_irecv(g, coll_at(rbuf, rd[src]), rc_[src], src, PH_DATA);
    }
    for (int k = 1; k < p && !rc; k++) {
        int dst = (r + k) % p;
        rc = coll_isend(g, coll_cat(sbuf, sd[dst]), sc[dst], dst, PH_DATA);
    }
    coll_copy(coll_at(rbuf, rd[r]), coll_cat(sbuf, sd[r]), sc[r]);
    return rc ? rc : coll_waitall_from_all(g);
}

static int alltoallv_pairwise(xdev_coll_group_t *g, const void *sbuf, const size_t *sc,
                              const size_t *sd, void *rbuf, const size_t *rc_, const size_t *rd)
{
    int p = g->size, r = g->rank, rc = XDEV_OK;
    int pof2 = (p & (p - 1)) == 0;
    coll_copy(coll_at(rbuf, rd[r]), coll_cat(sbuf, sd[r]), sc[r]);
    for (int k = 1; k < p && !rc; k++) {
        int dst = pof2 ? r ^ k : (r + k) % p;
        int src = pof2 ? r ^ k : (r - k + p) % p;
        rc = coll_sendrecv(g, coll_cat(sbuf, sd[dst]), sc[dst], dst, coll_at(rbuf, rd[src]),
                           rc_[src], src, PH_DATA);
    }
    return rc;
}

static int run(xdev_coll_group_t *g, const void *sbuf, const size_t *sc, const size_t *sd,
               void *rbuf, const size_t *rc_, const size_t *rd, size_t local_bytes)
{
    int rc = coll_begin(g);
    if (rc) return rc;
    if (coll_pick(g, F_ALLTOALL, local_bytes, 1) == ALLTOALL_PAIRWISE)
        rc = alltoallv_pairwise(g, sbuf, sc, sd, rbuf, rc_, rd);
    else
        rc = alltoallv_linear(g, sbuf, sc, sd, rbuf, rc_, rd);
    return coll_end(g, rc);
}

int xdev_coll_alltoall(xdev_coll_group_t *g, const void *sbuf, size_t len, void *rbuf)
{
    if (!g) return XDEV_ERR_ARG;
    int ok = 1;
    size_t total = coll_bytes(len, (size_t)g->size, &ok);
    if (!ok || !coll_buf_ok(sbuf, total) || !coll_buf_ok(rbuf, total)) return XDEV_ERR_ARG;
    size_t *cd = malloc(2 * sizeof *cd * (size_t)g->size);
    if (!cd) return XDEV_ERR_NOMEM;
    for (int i = 0; i < g->size; i++) {
        cd[i] = len;
        cd[g->size + i] = (size_t)i * len;
    }
    /* The per-block size picks the algorithm: what each step moves. */
    int rc = run(g, sbuf, cd, cd + g->size, rbuf, cd, cd + g->size, len);
    free(cd);
    return rc;
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
    return run(g, sbuf, sc, sd, rbuf, rc_, rd, most);
}
