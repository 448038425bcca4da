/*
 * reduce.c - reduce and reduce_scatter, and the two reduction building
 * blocks allreduce shares: a binomial-tree reduce (short messages: log p
 * steps, every child's contribution received at once) and a ring
 * reduce-scatter (long messages: p - 1 steps, each moving 1/p of the data,
 * so every member sends and combines about the vector once). reduce for
 * long messages is the ring reduce-scatter followed by a gather of the
 * blocks to the root; reduce_scatter for short ones a reduce to member 0
 * and a scatter of the blocks.
 */
#include <stdlib.h>

#include "coll.h"

enum { PH_TREE, PH_RING, PH_GATHER, PH_SCATTER };

int coll_reduce_binomial(xdev_coll_group_t *g, const void *sbuf, void *rbuf, size_t count,
                         const xdev_coll_op_t *op, size_t esz, int root, int phase)
{
    int p = g->size, vr = coll_rel(g, root), rc = XDEV_OK;
    size_t bytes = count * esz;
    int nchild = 0;
    for (int mask = 1; mask < p && !(vr & mask) && vr + mask < p; mask <<= 1) nchild++;
    int parent = coll_abs(g, vr - (vr & -vr), root);
    if (vr != 0 && !nchild) /* a leaf passes its own vector on as it is */
        return (rc = coll_isend(g, sbuf, bytes, parent, phase)) ? rc : coll_waitall(g);
    char *acc = vr == 0 ? rbuf : NULL, *slots = NULL;
    if (!acc && !(acc = coll_alloc(g, bytes))) return XDEV_ERR_NOMEM;
    /* The last child's vector lands in acc and this member's own is
     * combined into it, which saves copying sbuf into acc first (the ops
     * are commutative). In place acc holds this member's own already. */
    int in_acc = nchild && acc != sbuf; /* children received into acc: 0 or 1 */
    int nslots = nchild - in_acc;
    if (!in_acc) coll_copy(acc, sbuf, bytes);
    if (nslots && !(slots = coll_alloc(g, (size_t)nslots * bytes))) {
        rc = XDEV_ERR_NOMEM;
        goto out;
    }
    for (int k = 0, mask = 1; k < nchild && !rc; k++, mask <<= 1)
        rc = coll_irecv(g, k < nslots ? coll_at(slots, (size_t)k * bytes) : acc, bytes,
                        coll_abs(g, vr + mask, root), phase);
    if (!rc) rc = coll_waitall(g);
    if (!rc && in_acc) coll_op_apply(op, sbuf, acc, count);
    for (int k = 0; k < nslots && !rc; k++)
        coll_op_apply(op, coll_at(slots, (size_t)k * bytes), acc, count);
    if (!rc && vr != 0) {
        rc = coll_isend(g, acc, bytes, parent, phase);
        if (!rc) rc = coll_waitall(g);
    }
out:
    coll_free(g, slots);
    if (acc != rbuf) coll_free(g, acc);
    return rc;
}

/* The ring's tag: the phase (below 16) and a hash of this member's block
 * lengths, which place every block. Members that disagree on them may
 * still pass blocks of equal lengths, from places that differ, which no
 * receive's size would show; the tag shows it instead. */
static int ring_tag(const size_t *len, int p, int phase)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (int i = 0; i < p; i++)
        for (size_t v = len[i], k = 0; k < sizeof v; k++, v >>= 8)
            h = (h ^ (uint8_t)v) * 16777619u;
    return phase | (int)((h & 0x3ffffff) << 4); /* never XDEV_COLL_NOTICE_TAG */
}

int coll_ring_reduce_scatter(xdev_coll_group_t *g, const void *sbuf, void *work,
                             const size_t *start, const size_t *len, const xdev_coll_op_t *op,
                             size_t esz, int phase)
{
    int p = g->size, r = g->rank, rc = XDEV_OK;
    /* Each block arrives once, so it can land in work and be combined with
     * sbuf's there, with no copy of sbuf first; only in place would it land
     * on this member's own contribution, so then it lands beside. */
    if (p == 1) { /* no step brings block r in: it is this member's own */
        coll_copy(coll_at(work, start[0] * esz), coll_cat(sbuf, start[0] * esz), len[0] * esz);
        return XDEV_OK;
    }
    char *tmp = NULL;
    if (sbuf == work) {
        size_t most = 0;
        for (int i = 0; i < p; i++)
            if (len[i] > most) most = len[i];
        if (!(tmp = coll_alloc(g, most * esz))) return XDEV_ERR_NOMEM;
    }
    int right = (r + 1) % p, left = (r + p - 1) % p, tag = ring_tag(len, p, phase);
    /* Step s passes on the partial sum of block r - s - 1 (at step 0 this
     * member's own part) and receives the left neighbour's of block
     * r - s - 2; after p - 1 steps the last one received is block r,
     * complete. A member whose lengths differ from its left neighbour's
     * fails at step 0 and passes on nothing it received; so does its right
     * neighbour, and every block's path of p - 1 steps goes through one of
     * them: no member completes with blocks taken from the wrong places. */
    for (int s = 0; s < p - 1 && !rc; s++) {
        int sb = (r - s - 1 + p) % p, rb = (r - s - 2 + 2 * p) % p;
        const void *from = s == 0 ? sbuf : work;
        char *blk = coll_at(work, start[rb] * esz);
        rc = coll_irecv_tagged(g, tmp ? tmp : blk, len[rb] * esz, left, tag);
        if (!rc) rc = coll_isend(g, coll_cat(from, start[sb] * esz), len[sb] * esz, right, tag);
        if (!rc) rc = coll_waitall(g);
        if (!rc)
            coll_op_apply(op, tmp ? tmp : coll_cat(sbuf, start[rb] * esz), blk, len[rb]);
    }
    coll_free(g, tmp);
    return rc;
}

size_t *coll_equal_blocks(size_t count, int p)
{
    size_t *b = malloc(2 * sizeof *b * (size_t)p);
    for (int i = 0; b && i < p; i++) {
        b[i] = coll_block_start(count, p, i);
        b[p + i] = coll_block_len(count, p, i);
    }
    return b;
}

static int reduce_ring_gather(xdev_coll_group_t *g, const void *sbuf, void *rbuf, size_t count,
                              const xdev_coll_op_t *op, size_t esz, int root)
{
    int p = g->size, r = g->rank, rc = XDEV_OK;
    size_t *b = coll_equal_blocks(count, p);
    char *work = r == root ? rbuf : coll_alloc(g, count * esz);
    if (!b || (!work && r != root)) {
        rc = XDEV_ERR_NOMEM;
        goto out;
    }
    rc = coll_ring_reduce_scatter(g, sbuf, work, b, b + p, op, esz, PH_RING);
    if (rc) goto out;
    if (r != root) {
        rc = coll_isend(g, coll_at(work, b[r] * esz), b[p + r] * esz, root, PH_GATHER);
    } else {
        for (int i = 0; i < p && !rc; i++)
            if (i != root)
                rc = coll_irecv(g, coll_at(work, b[i] * esz), b[p + i] * esz, i, PH_GATHER);
    }
    if (!rc) rc = coll_waitall(g);
out:
    if (work != rbuf) coll_free(g, work);
    free(b);
    return rc;
}

int xdev_coll_reduce(xdev_coll_group_t *g, const void *sbuf, void *rbuf, size_t count,
                     const xdev_coll_op_t *op, int root)
{
    size_t esz, bytes;
    if (!g || !coll_root_ok(g, root) || !coll_op_bytes(op, count, &esz, &bytes) ||
        !coll_buf_ok(sbuf, bytes) || (g->rank == root && !coll_buf_ok(rbuf, bytes)))
        return XDEV_ERR_ARG;
    int rc = coll_begin(g);
    if (rc) return rc;
    if (coll_pick(g, F_REDUCE, bytes, 1) == REDUCE_RING_GATHER)
        rc = reduce_ring_gather(g, sbuf, rbuf, count, op, esz, root);
    else
        rc = coll_reduce_binomial(g, sbuf, rbuf, count, op, esz, root, PH_TREE);
    return coll_end(g, rc);
}

static int reduce_scatter_run(xdev_coll_group_t *g, const void *sbuf, void *rbuf,
                              const size_t *b, size_t total, const xdev_coll_op_t *op,
                              size_t esz)
{
    int p = g->size, r = g->rank, rc = XDEV_OK;
    char *work = coll_alloc(g, total * esz);
    if (!work) return XDEV_ERR_NOMEM;
    if (coll_pick(g, F_REDUCE_SCATTER, total * esz, 1) == REDUCE_SCATTER_RING) {
        rc = coll_ring_reduce_scatter(g, sbuf, work, b, b + p, op, esz, PH_RING);
        if (!rc) coll_copy(rbuf, coll_at(work, b[r] * esz), b[p + r] * esz);
    } else {
        rc = coll_reduce_binomial(g, sbuf, work, total, op, esz, 0, PH_TREE);
        if (!rc && r != 0) rc = coll_irecv(g, rbuf, b[p + r] * esz, 0, PH_SCATTER);
        for (int i = 1; i < p && !rc && r == 0; i++)
            rc = coll_isend(g, coll_at(work, b[i] * esz), b[p + i] * esz, i, PH_SCATTER);
        if (!rc) rc = coll_waitall(g);
        if (!rc && r == 0) coll_copy(rbuf, work, b[p] * esz);
    }
    coll_free(g, work);
    return rc;
}

int xdev_coll_reduce_scatter(xdev_coll_group_t *g, const void *sbuf, void *rbuf,
                             const size_t *rcounts, const xdev_coll_op_t *op)
{
    if (!g || !rcounts) return XDEV_ERR_ARG;
    int p = g->size;
    size_t total = 0, esz, bytes;
    for (int i = 0; i < p; i++) {
        if (rcounts[i] > SIZE_MAX - total) return XDEV_ERR_ARG;
        total += rcounts[i];
    }
    if (!coll_op_bytes(op, total, &esz, &bytes) || !coll_buf_ok(sbuf, bytes) ||
        !coll_buf_ok(rbuf, rcounts[g->rank] * esz))
        return XDEV_ERR_ARG;
    size_t *b = malloc(2 * sizeof *b * (size_t)p);
    if (!b) return XDEV_ERR_NOMEM;
    for (int i = 0; i < p; i++) {
        b[i] = i ? b[i - 1] + rcounts[i - 1] : 0;
        b[p + i] = rcounts[i];
    }
    int rc = coll_begin(g);
    if (!rc) rc = coll_end(g, reduce_scatter_run(g, sbuf, rbuf, b, total, op, esz));
    free(b);
    return rc;
}
