/*
 * peer_failed.c - a sender died: what of its stream stays receivable, and
 * every request waiting on it fails.
 */
#include "proto.h"

/* Does r still wait for something from `peer`? */
static bool waits_on(const xreq_t *r, int peer)
{
    if (r->phase == PH_DONE)
        return false;
    if (r->kind == REQ_SEND)
        return r->peer == peer;
    if (r->phase == PH_RECV_POSTED)
        return r->peer == peer;
    return r->status.source == peer;
}

/* Could a receive take e whole now? */
static bool ux_complete(const uxmsg_t *e)
{
    return e->state == UX_READY && e->type != XDEV_MSG_RNDZ_START && !e->rreq;
}

/*
 * The prefix rule: of a sender that died, whole messages stay receivable
 * in the order it sent them up to the first one that can no longer be
 * completed (the cut: a rendezvous under way, or an unexpected message not
 * all here). That one's receive fails with XDEV_ERR_PEER: if no receive
 * has matched it yet, it stays queued as a lost marker for the receive
 * that will. Everything after it is dropped, and every later receive
 * naming the sender fails.
 *
 * Except what was matched while the sender lived: as a message received
 * then stays received, a claim whose data is all here stays receivable
 * through its handle, since a later message may have been received
 * already (its receive waited for the claim's data, proto_fetch_claims).
 * That holds up to the first matched message that cannot be completed
 * (`matched`: an open receive, a claim or a receive still waiting for
 * data); a claim past it fails, or the claims would have a hole.
 */
void xdev_core_peer_failed(xdev_t *d, int peer)
{
    peer_t *p = &d->peers[peer];
    if (p->dead)
        return;
    p->dead = true;
    d->deaths++;
    uint64_t matched = p->cut < order_first_open(p) ? p->cut : order_first_open(p);
    uint64_t cut = matched;
    for (uxmsg_t *e = d->ux_head; e; e = e->next) {
        if (e->src != peer || ux_complete(e))
            continue;
        if (e->arrival < cut)
            cut = e->arrival;
        if ((e->claimed || e->rreq) && e->arrival < matched)
            matched = e->arrival;
    }
    order_sender_failed(d, peer, cut);

    /* First take every entry past the cut out of the deferred set, so that
     * freeing memory below resumes none of them. */
    bool freed = false;
    for (uxmsg_t *e = d->ux_head; e; e = e->next) {
        if (e->src != peer || e->arrival < cut || e->state == UX_LOST)
            continue;
        if (e->claimed && e->arrival < matched && ux_complete(e)) {
            e->kept = true;
            continue;
        }
        freed |= e->charge != 0;
        ux_lose(d, e);
    }
    uxmsg_t *next;
    for (uxmsg_t *e = d->ux_head; e; e = next) {
        next = e->next;
        /* a claimed one stays for its handle, which then fails */
        if (e->src != peer || e->arrival < cut || (e->arrival == cut && !e->rreq) || e->claimed)
            continue;
        if (e->rreq) {
            e->rreq->status.count = 0;
            req_complete(d, e->rreq, XDEV_ERR_PEER);
        }
        ux_free(d, e);
    }
    if (freed && d->ux_deferred)
        ux_retry_deferred(d);

    bool wildcards = d->flags & XDEV_FLAG_WILDCARD_FAILS;
    for (uint32_t i = 0; i < d->nslots; i++) {
        xreq_t *r = d->slots[i].req;
        if (r && wildcards && r->phase == PH_RECV_POSTED && r->peer == XDEV_ANY_SOURCE) {
            posted_drop(d, r);
            req_complete(d, r, XDEV_ERR_PEER_PENDING);
            continue;
        }
        if (!r || !waits_on(r, peer))
            continue;
        if (r->phase == PH_RECV_POSTED) {
            posted_drop(d, r);
        } else if (r->kind == REQ_RECV) {
            r->status.count = 0;
        }
        req_complete(d, r, XDEV_ERR_PEER);
    }
}
