/*
 * allgather.c - allgather(v): in a small group, for short messages, every
 * member sends its block straight to every other (one round); for other
 * short messages a binomial gather to member 0 then a binomial broadcast
 * of the whole (2 log p steps); for long ones a ring of p - 1 steps in
 * which each member passes on the block it received in the step before
 * (bandwidth-optimal). allgatherv uses the ring.
 */
#include "coll.h"

enum { PH_GATHER, PH_BCAST, PH_RING, PH_DIRECT };

/* Ring over blocks with per-member counts and displacements (bytes), or
 * none: len bytes each (coll_count_of). */
static int allgather_ring(xdev_coll_group_t *g, const void *sbuf, size_t len, void *rbuf,
                          const size_t *counts, const size_t *displs)
{
    int p = g->size, r = g->rank, rc;
    int right = (r + 1) % p, left = (r + p - 1) % p;
    for (int s = 0; s < p - 1; s++) {
        int sb = (r - s + p) % p, rb = (r - s - 1 + p) % p;
        /* The first step sends our own block from sbuf, not from its copy
         * in rbuf: a peer reading the copy, still dirty in our cache, took
         * 1.7 times as long (2 ranks, 1 MiB). */
        const void *src = s == 0 ? sbuf : coll_at(rbuf, coll_displ_of(displs, len, sb));
        rc = coll_irecv(g, coll_at(rbuf, coll_displ_of(displs, len, rb)),
                        coll_count_of(counts, len, rb), left, PH_RING);
        if (rc || (rc = coll_isend(g, src, coll_count_of(counts, len, sb), right, PH_RING)))
            return rc;
        if (s == 0) coll_copy(coll_at(rbuf, coll_displ_of(displs, len, r)), sbuf, len);
        if ((rc = coll_waitall(g))) return rc;
    }
    if (p == 1) coll_copy(coll_at(rbuf, coll_displ_of(displs, len, r)), sbuf, len);
    return XDEV_OK;
}

int xdev_coll_allgather(xdev_coll_group_t *g, const void *sbuf, size_t len, void *rbuf)
{
    if (!g || !coll_buf_ok(sbuf, len)) return XDEV_ERR_ARG;
    int ok = 1;
    size_t total = coll_bytes(len, (size_t)g->size, &ok);
    if (!ok || !coll_buf_ok(rbuf, total)) return XDEV_ERR_ARG;
    int rc = coll_begin(g);
    if (rc) return rc;
    int alg = coll_pick(g, F_ALLGATHER, total, 1);
    if (alg == ALLGATHER_DIRECT) {
        coll_copy(coll_at(rbuf, (size_t)g->rank * len), sbuf, len);
        rc = coll_exchange_all(g, sbuf, len, rbuf, PH_DIRECT);
    } else if (alg == ALLGATHER_RING) {
        rc = allgather_ring(g, sbuf, len, rbuf, NULL, NULL);
    } else {
        rc = coll_gather_binomial(g, sbuf, len, rbuf, 0, PH_GATHER);
        if (!rc) rc = coll_bcast_binomial(g, rbuf, total, 0, PH_BCAST);
    }
    return coll_end(g, rc);
}

int xdev_coll_allgatherv(xdev_coll_group_t *g, const void *sbuf, size_t len, void *rbuf,
                         const size_t *counts, const size_t *displs)
{
    if (!g || !coll_buf_ok(sbuf, len) || !counts || !displs)
        return XDEV_ERR_ARG;
    for (int i = 0; i < g->size; i++)
        if (!coll_buf_ok(rbuf, counts[i]) || (counts[i] && displs[i] > SIZE_MAX - counts[i]))
            return XDEV_ERR_ARG;
    if (counts[g->rank] != len) return coll_mismatch(g);
    int rc = coll_begin(g);
    if (rc) return rc;
    return coll_end(g, allgather_ring(g, sbuf, len, rbuf, counts, displs));
}
