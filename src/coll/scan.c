/*
 * scan.c - inclusive prefix reduction, keeping rank order for any
 * associative operation: by recursive doubling (log p exchanges; a member
 * combines what it gets from a lower rank on the left of its partial and
 * what it gets from a higher rank on the right) for short vectors, or by a
 * linear chain (member i waits for the prefix of 0..i-1, combines, passes
 * it on) for long ones, which moves each vector once.
 */
#include <stdlib.h>

#include "coll.h"

enum { PH_DOUBLING, PH_CHAIN };

static int scan_linear(xdev_coll_group_t *g, void *rbuf, size_t count, const xdev_coll_op_t *op,
                       size_t esz)
{
    int p = g->size, r = g->rank, rc = XDEV_OK;
    size_t bytes = count * esz;
    if (r > 0) {
        char *tmp = coll_alloc(g, bytes);
        if (!tmp) return XDEV_ERR_NOMEM;
        rc = coll_irecv(g, tmp, bytes, r - 1, PH_CHAIN);
        if (!rc) rc = coll_waitall(g);
        if (!rc) coll_op_apply(op, tmp, rbuf, count); /* prefix(0..r-1) op mine */
        coll_free(g, tmp);
    }
    if (!rc && r + 1 < p) {
        rc = coll_isend(g, rbuf, bytes, r + 1, PH_CHAIN);
        if (!rc) rc = coll_waitall(g);
    }
    return rc;
}

static int scan_recursive_doubling(xdev_coll_group_t *g, void *rbuf,
                                   size_t count, const xdev_coll_op_t *op, size_t esz)
{
    int p = g->size, r = g->rank, rc = XDEV_OK;
    size_t bytes = count * esz;
    /* partial: op over the ranks of the current block of 2 * mask members
     * this member belongs to, in order; rbuf: op over ranks 0..r seen. */
    char *partial = coll_alloc(g, bytes), *tmp = coll_alloc(g, bytes);
    if (!partial || !tmp) {
        rc = XDEV_ERR_NOMEM;
        goto out;
    }
    coll_copy(partial, rbuf, bytes);
    for (int mask = 1; mask < p && !rc; mask <<= 1) {
        int dst = r ^ mask;
        if (dst >= p) continue;
        rc = coll_sendrecv(g, partial, bytes, dst, tmp, bytes, dst, PH_DOUBLING);
        if (rc) break;
        if (dst < r) {
            coll_op_apply(op, tmp, partial, count); /* lower ranks first */
            coll_op_apply(op, tmp, rbuf, count);
        } else {
            /* partial = partial op tmp: computed into tmp, then swapped. */
            coll_op_apply(op, partial, tmp, count);
            char *t = partial;
            partial = tmp;
            tmp = t;
        }
    }
out:
    coll_free(g, partial);
    coll_free(g, tmp);
    return rc;
}

int xdev_coll_scan(xdev_coll_group_t *g, const void *sbuf, void *rbuf, size_t count,
                   const xdev_coll_op_t *op)
{
    size_t esz, bytes;
    int rc = coll_begin_reduction(g, sbuf, rbuf, count, op, &esz, &bytes);
    if (rc) return rc;
    coll_copy(rbuf, sbuf, bytes);
    if (coll_pick(g, F_SCAN, bytes, 1) == SCAN_LINEAR)
        rc = scan_linear(g, rbuf, count, op, esz);
    else
        rc = scan_recursive_doubling(g, rbuf, count, op, esz);
    return coll_end(g, rc);
}
