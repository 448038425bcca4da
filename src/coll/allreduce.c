/*
 * allreduce.c - allreduce directly (every member sends its vector to every
 * other and reduces all of them itself) for short vectors in small groups;
 * by recursive doubling for other short vectors (log p exchanges of the
 * whole vector; for a group size that is not a power of two the first
 * 2 * rem members pair up and the even ones hand their vector to the odd
 * ones, sit out the doubling and get the result back at the end); by a
 * ring reduce-scatter + ring allgather for long vectors (each member sends
 * about 2 (p - 1) / p of the vector in all); or by a binomial reduce +
 * binomial broadcast (forced only).
 */
#include <stdlib.h>

#include "coll.h"

enum { PH_FOLD, PH_DOUBLING, PH_UNFOLD, PH_RS, PH_AG, PH_REDUCE, PH_BCAST, PH_DIRECT };

/* Every member sends its vector to every other one and reduces all p
 * itself, in rank order, so every member computes the same bits. One
 * round of p - 1 messages each way instead of log p rounds that each wait
 * for the slowest partner of the one before. */
static int allreduce_direct(xdev_coll_group_t *g, const void *sbuf, void *rbuf, size_t count,
                            const xdev_coll_op_t *op, size_t esz)
{
    int p = g->size, r = g->rank;
    size_t bytes = count * esz;
    char *all = coll_alloc(g, bytes * (size_t)p);
    if (!all) return XDEV_ERR_NOMEM;
    int rc = coll_exchange_all(g, sbuf, bytes, all, PH_DIRECT);
    if (!rc) {
        coll_copy(all + (size_t)r * bytes, sbuf, bytes);
        coll_copy(rbuf, all + (size_t)(p - 1) * bytes, bytes);
        for (int q = p - 2; q >= 0; q--)
            coll_op_apply(op, all + (size_t)q * bytes, rbuf, count);
    }
    coll_free(g, all);
    return rc;
}

static int allreduce_recursive_doubling(xdev_coll_group_t *g, void *rbuf, size_t count,
                                        const xdev_coll_op_t *op, size_t esz)
{
    int p = g->size, r = g->rank, rc = XDEV_OK;
    size_t bytes = count * esz;
    int pof2 = 1;
    while (pof2 * 2 <= p) pof2 *= 2;
    int rem = p - pof2, newrank;
    char *tmp = coll_alloc(g, bytes);
    if (!tmp) return XDEV_ERR_NOMEM;

    if (r < 2 * rem) {
        if (r % 2 == 0) { /* hand the vector to r + 1 and wait for the result */
            rc = coll_isend(g, rbuf, bytes, r + 1, PH_FOLD);
            if (!rc) rc = coll_waitall(g);
            newrank = -1;
        } else {
            rc = coll_irecv(g, tmp, bytes, r - 1, PH_FOLD);
            if (!rc) rc = coll_waitall(g);
            if (!rc) coll_op_apply(op, tmp, rbuf, count);
            newrank = r / 2;
        }
    } else {
        newrank = r - rem;
    }
    for (int mask = 1; newrank >= 0 && mask < pof2 && !rc; mask <<= 1) {
        int nd = newrank ^ mask;
        int dst = nd < rem ? nd * 2 + 1 : nd + rem;
        rc = coll_sendrecv(g, rbuf, bytes, dst, tmp, bytes, dst, PH_DOUBLING);
        /* Both partners compute in op(in, inout) the same commutative
         * combination, so every member ends with the same bits. */
        if (!rc) coll_op_apply(op, tmp, rbuf, count);
    }
    if (!rc && r < 2 * rem) {
        if (r % 2) rc = coll_isend(g, rbuf, bytes, r - 1, PH_UNFOLD);
        else rc = coll_irecv(g, rbuf, bytes, r + 1, PH_UNFOLD);
        if (!rc) rc = coll_waitall(g);
    }
    coll_free(g, tmp);
    return rc;
}

static int allreduce_ring(xdev_coll_group_t *g, const void *sbuf, void *rbuf, size_t count,
                          const xdev_coll_op_t *op, size_t esz)
{
    int p = g->size, r = g->rank, rc;
    size_t *b = coll_equal_blocks(count, p);
    if (!b) return XDEV_ERR_NOMEM;
    rc = coll_ring_reduce_scatter(g, sbuf, rbuf, b, b + p, op, esz, PH_RS);
    int right = (r + 1) % p, left = (r + p - 1) % p;
    for (int s = 0; s < p - 1 && !rc; s++) {
        int sb = (r - s + p) % p, rb = (r - s - 1 + p) % p;
        rc = coll_sendrecv(g, coll_at(rbuf, b[sb] * esz), b[p + sb] * esz, right,
                           coll_at(rbuf, b[rb] * esz), b[p + rb] * esz, left, PH_AG);
    }
    free(b);
    return rc;
}

int xdev_coll_allreduce(xdev_coll_group_t *g, const void *sbuf, void *rbuf, size_t count,
                        const xdev_coll_op_t *op)
{
    size_t esz, bytes;
    int rc = coll_begin_reduction(g, sbuf, rbuf, count, op, &esz, &bytes);
    if (rc) return rc;
    switch (coll_pick(g, F_ALLREDUCE, bytes, count >= (size_t)g->size)) {
    case ALLREDUCE_RING:
        rc = allreduce_ring(g, sbuf, rbuf, count, op, esz);
        break;
    case ALLREDUCE_DIRECT:
        rc = allreduce_direct(g, sbuf, rbuf, count, op, esz);
        break;
    case ALLREDUCE_REDUCE_BCAST:
        rc = coll_reduce_binomial(g, sbuf, rbuf, count, op, esz, 0, PH_REDUCE);
        if (!rc) rc = coll_bcast_binomial(g, rbuf, bytes, 0, PH_BCAST);
        break;
    default:
        coll_copy(rbuf, sbuf, bytes);
        rc = allreduce_recursive_doubling(g, rbuf, count, op, esz);
        break;
    }
    return coll_end(g, rc);
}
