/*
 * control.c - control ops: the head-only messages a receive sends its
 * sender (SYNC_ACK, RNDZ_REPLY, RNDZ_END), and a sender's RNDZ_START, each
 * in an op of its own.
 *
 * A receive answers at moments where running out of memory could not be
 * reported to anyone, and the sender would wait for good. So every receive
 * claims CTL_PER_RECV ops from a cache when it is posted, where
 * XDEV_ERR_NOMEM still changes nothing; the cache keeps ctl_nfree >=
 * ctl_claimed. Done ops come back to it, and it keeps a few spare for
 * senders' RNDZ_START.
 */
#include <stdlib.h>
#include "proto.h"

#define CTL_PER_RECV 2
#define CTL_SPARE 64

static xdev_txop_t *ctl_pop(xdev_t *d)
{
    xdev_txop_t *op = d->ctl_free;
    d->ctl_free = op->next;
    d->ctl_nfree--;
    return op;
}

static void ctl_push(xdev_t *d, xdev_txop_t *op)
{
    op->next = d->ctl_free;
    d->ctl_free = op;
    d->ctl_nfree++;
}

void ctl_put(xdev_t *d, xdev_txop_t *op)
{
    if (d->ctl_nfree >= d->ctl_claimed + CTL_SPARE)
        free(op);
    else
        ctl_push(d, op);
}

XDEV_HOT int proto_claim_ctl(xdev_t *d, xreq_t *r)
{
    while (d->ctl_nfree < d->ctl_claimed + CTL_PER_RECV) {
        xdev_txop_t *op = malloc(sizeof *op);
        if (!op)
            return XDEV_ERR_NOMEM;
        ctl_push(d, op);
    }
    d->ctl_claimed += CTL_PER_RECV;
    r->ctl_claim = CTL_PER_RECV;
    return XDEV_OK;
}

XDEV_HOT void proto_unclaim_ctl(xdev_t *d, xreq_t *r)
{
    d->ctl_claimed -= r->ctl_claim;
    r->ctl_claim = 0;
}

void proto_free_ctl(xdev_t *d)
{
    while (d->ctl_free)
        free(ctl_pop(d));
}

/* Send a head-only message in an op of its own (see enum op_owner), on
 * behalf of receive r (its claim) or of a sender (r NULL: it can take
 * XDEV_ERR_NOMEM). */
int send_ctl(xdev_t *d, int peer, const xdev_head_t *h, xreq_t *r)
{
    if (d->peers[peer].dead)
        return XDEV_ERR_PEER;
    xdev_txop_t *op;
    if (r && r->ctl_claim) {
        r->ctl_claim--;
        d->ctl_claimed--;
        op = ctl_pop(d);
    } else if (d->ctl_nfree > d->ctl_claimed) {
        op = ctl_pop(d);
    } else if (!(op = malloc(sizeof *op))) {
        return XDEV_ERR_NOMEM;
    }
    op_build(op, h, NULL, 0);
    op->owner = OP_CONTROL;
    int rc = peer_ops(d, peer)->send(peer_tp(d, peer), peer, op, XDEV_TX_QUEUE);
    if (rc != 0)
        ctl_put(d, op);
    return rc < 0 ? XDEV_ERR_PEER : XDEV_OK;
}

/* Tell the sender of receive r's message (request sreq) that it was
 * matched (SYNC_ACK) or read (RNDZ_END). It fails only with a dead peer. */
void send_control(xdev_t *d, xreq_t *r, int peer, uint32_t type, uint64_t sreq)
{
    xdev_head_t h;
    head_init(&h, d, peer, r->status.tag, r->ctx, type);
    h.f[0] = sreq;
    send_ctl(d, peer, &h, r);
}
