/*
 * barrier.c - dissemination barrier: in round k every member signals the
 * member 2^k ahead and waits for the one 2^k behind; after ceil(log2 p)
 * rounds everyone has heard, indirectly, from everyone.
 */
#include "coll.h"

int xdev_coll_barrier(xdev_coll_group_t *g)
{
    if (!g) return XDEV_ERR_ARG;
    int rc = coll_begin(g);
    if (rc) return rc;
    int p = g->size, phase = 0;
    for (int k = 1; k < p && !rc; k <<= 1, phase++)
        rc = coll_sendrecv(g, NULL, 0, (g->rank + k) % p, NULL, 0, (g->rank - k + p) % p, phase);
    return coll_end(g, rc);
}
