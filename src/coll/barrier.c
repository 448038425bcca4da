/*
 * barrier.c - two barriers:
 *   linear         every member tells member 0 it has arrived; member 0,
 *                  once all have, releases each (groups of 3 to 8);
 *   dissemination  in round k every member signals the member 2^k ahead and
 *                  waits for the one 2^k behind; after ceil(log2 p) rounds
 *                  everyone has heard, indirectly, from everyone.
 * In a small group on shared memory the linear one is the cheaper barrier
 * here (4.1-4.5 us at 4 ranks on 2 cores against 4.4-5.3, 9-12 at 8
 * against 15-21): member 0 takes every arrival in one wait and releases
 * every member at once, where dissemination needs every member scheduled
 * in every round. Its order of leaving is also what the next collective
 * meets: member 0 leaves first, so a collective rooted there (a bcast,
 * OSU's barrier between timed calls) finds its root already sending;
 * dissemination lets members go in no such order, and at 4 ranks on 2
 * cores a bcast's children then often waited a time slice for a root
 * still in the barrier (3.1 us an 8-byte bcast per call, against 0.65).
 * Every member of the linear barrier waits on all the others (member 0
 * for their arrivals, the rest for a release that needs every arrival),
 * so with more ranks than cores each yields at once, as in an exchange:
 * whichever member runs instead has work to do. Waiting as below a root
 * instead (32 polls first), it took 4.9-5.2 us at 4 ranks on 2 cores
 * against 2.9, and 20 at 8 against 8.3.
 */
#include "coll.h"

/* From 3 up to this many members the linear barrier is the automatic
 * choice; member 0 handles 2 (p - 1) messages in it. Two members are
 * quicker with one exchange (dissemination's one round: 0.25 us here
 * against 0.38, and both leave at once). */
#define LINEAR_MEMBERS 8

enum { PH_UP, PH_DOWN };

static int barrier_linear(xdev_coll_group_t *g)
{
    int p = g->size, rc;
    if (g->rank != 0)
        return (rc = coll_irecv(g, NULL, 0, 0, PH_DOWN)) || (rc = coll_isend(g, NULL, 0, 0, PH_UP))
                   ? rc
                   : coll_waitall_from_all(g);
    for (int i = 1; i < p; i++)
        if ((rc = coll_irecv(g, NULL, 0, i, PH_UP))) return rc;
    if ((rc = coll_waitall_from_all(g))) return rc;
    for (int i = 1; i < p; i++)
        if ((rc = coll_isend(g, NULL, 0, i, PH_DOWN))) return rc;
    return coll_waitall(g);
}

static int barrier_dissemination(xdev_coll_group_t *g)
{
    int p = g->size, rc = XDEV_OK;
    for (int k = 1, phase = 0; k < p && !rc; k <<= 1, phase++)
        rc = coll_sendrecv(g, NULL, 0, (g->rank + k) % p, NULL, 0, (g->rank - k + p) % p, phase);
    return rc;
}

int xdev_coll_barrier(xdev_coll_group_t *g)
{
    if (!g) return XDEV_ERR_ARG;
    int rc = coll_begin(g);
    if (rc) return rc;
    int alg = g->cfg.forced[F_BARRIER];
    if (alg == COLL_AUTO)
        alg = g->size > 2 && g->size <= LINEAR_MEMBERS ? BARRIER_LINEAR : BARRIER_DISSEMINATION;
    rc = alg == BARRIER_LINEAR ? barrier_linear(g) : barrier_dissemination(g);
    return coll_end(g, rc);
}
