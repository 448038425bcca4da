/*
 * bcast.c - broadcast: the root sending to every member (direct) in small
 * groups, for short messages or on one host; a binomial tree (minimum
 * spanning tree) for other short ones; for long ones a binomial scatter
 * of p blocks followed by a ring allgather of the blocks, so that no link
 * carries the whole message more than about twice (van de Geijn; F-MPJ's
 * MSTScatter + BKTAllgather).
 */
#include "coll.h"

enum { PH_TREE, PH_SCATTER, PH_RING, PH_DIRECT };

/* Lowest set bit of vr (vr > 0); the root's subtree is all p ranks. */
static int subtree_mask(int vr, int p)
{
    if (vr == 0) {
        int m = 1;
        while (m < p) m <<= 1;
        return m;
    }
    return vr & -vr;
}

int coll_bcast_binomial(xdev_coll_group_t *g, void *buf, size_t len, int root, int phase)
{
    int p = g->size, vr = coll_rel(g, root), rc;
    int mask = subtree_mask(vr, p);
    if (vr != 0) {
        if ((rc = coll_irecv(g, buf, len, coll_abs(g, vr - mask, root), phase))) return rc;
        if ((rc = coll_waitall(g))) return rc;
    }
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (vr + mask < p)
            if ((rc = coll_isend(g, buf, len, coll_abs(g, vr + mask, root), phase))) return rc;
    return coll_waitall(g);
}

/* Bytes of the blocks [lo, hi) when len bytes are cut into blocks of chunk. */
static size_t span_end(size_t len, size_t chunk, int i)
{
    size_t e = (size_t)i * chunk;
    return e < len ? e : len;
}

static int bcast_scatter_ring(xdev_coll_group_t *g, char *buf, size_t len, int root)
{
    int p = g->size, vr = coll_rel(g, root), rc;
    size_t chunk = (len + (size_t)p - 1) / (size_t)p;
    int mask = subtree_mask(vr, p);
    /* Scatter: member vr gets the blocks of its subtree [vr, vr + mask). */
    if (vr != 0) {
        int hi = vr + mask < p ? vr + mask : p;
        size_t lo_b = span_end(len, chunk, vr), hi_b = span_end(len, chunk, hi);
        if (hi_b > lo_b) {
            rc = coll_irecv(g, buf + lo_b, hi_b - lo_b, coll_abs(g, vr - mask, root), PH_SCATTER);
            if (rc || (rc = coll_waitall(g))) return rc;
        }
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        int c = vr + mask;
        if (c >= p) continue;
        int hi = c + mask < p ? c + mask : p;
        size_t lo_b = span_end(len, chunk, c), hi_b = span_end(len, chunk, hi);
        if (hi_b > lo_b)
            if ((rc = coll_isend(g, buf + lo_b, hi_b - lo_b, coll_abs(g, c, root), PH_SCATTER)))
                return rc;
    }
    if ((rc = coll_waitall(g))) return rc;

    /* Ring allgather of the blocks, in relative ranks. */
    int right = coll_abs(g, (vr + 1) % p, root), left = coll_abs(g, (vr + p - 1) % p, root);
    for (int s = 0; s < p - 1; s++) {
        int sb = (vr - s + p) % p, rb = (vr - s - 1 + p) % p;
        size_t s_lo = span_end(len, chunk, sb), s_hi = span_end(len, chunk, sb + 1);
        size_t r_lo = span_end(len, chunk, rb), r_hi = span_end(len, chunk, rb + 1);
        if (r_hi > r_lo && (rc = coll_irecv(g, buf + r_lo, r_hi - r_lo, left, PH_RING))) return rc;
        if (s_hi > s_lo && (rc = coll_isend(g, buf + s_lo, s_hi - s_lo, right, PH_RING)))
            return rc;
        if ((rc = coll_waitall(g))) return rc;
    }
    return XDEV_OK;
}

/* The root sends to every member itself: no member waits for another to
 * pass the message on. */
static int bcast_direct(xdev_coll_group_t *g, void *buf, size_t len, int root)
{
    int rc;
    if (g->rank != root)
        return (rc = coll_irecv(g, buf, len, root, PH_DIRECT)) ? rc : coll_waitall(g);
    for (int vr = 1; vr < g->size; vr++)
        if ((rc = coll_isend(g, buf, len, coll_abs(g, vr, root), PH_DIRECT))) return rc;
    return coll_waitall(g);
}

int xdev_coll_bcast(xdev_coll_group_t *g, void *buf, size_t len, int root)
{
    if (!g || !coll_buf_ok(buf, len) || !coll_root_ok(g, root)) return XDEV_ERR_ARG;
    int rc = coll_begin(g);
    if (rc) return rc;
    if (g->size > 1) {
        int alg = coll_pick(g, F_BCAST, len, g->size > 2);
        rc = alg == BCAST_SCATTER_RING ? bcast_scatter_ring(g, buf, len, root)
             : alg == BCAST_DIRECT     ? bcast_direct(g, buf, len, root)
                                       : coll_bcast_binomial(g, buf, len, root, PH_TREE);
    }
    return coll_end(g, rc);
}
