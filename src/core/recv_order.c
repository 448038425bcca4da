/*
 * recv_order.c - receives of one sender's messages complete in the order
 * the messages arrived, so that what we have of a sender that dies is a
 * prefix of what it sent (see peer_t in device.h).
 *
 * Only a rendezvous can be overtaken: an eager message is placed before
 * the next message from its sender is read, but a matched rendezvous waits
 * for its data while later messages from the same sender keep arriving.
 * Such a receive is open until its data is in; a later message's receive
 * that is done meanwhile is held until every open receive before it is
 * done too. With no rendezvous under way from a sender, nothing here costs
 * more than the look at its open list.
 */
#include "device.h"
#include "../kit/dlist.h"

/* Lists are kept in arrival order; they are short (the rendezvous a
 * sender has under way), so a walk to the insertion point is cheap. */
static void list_insert(xreq_t **head, xreq_t *r)
{
    xreq_t *prev = NULL, *at = *head;
    while (at && at->arrival < r->arrival) {
        prev = at;
        at = at->pl_next;
    }
    r->pl_prev = prev;
    r->pl_next = at;
    if (at)
        at->pl_prev = r;
    if (prev)
        prev->pl_next = r;
    else
        *head = r;
}

static void list_remove(xreq_t **head, xreq_t *r)
{
    XDEV_DLIST_UNLINK_HEAD(*head, r, pl_prev, pl_next);
}

static peer_t *sender_of(xdev_t *d, const xreq_t *r)
{
    return &d->peers[r->status.source];
}

/* Receives from p need this file's care while something of it is open,
 * claimed and not yet fetched, or its stream is cut; the fast paths test
 * this one flag. */
static void update(peer_t *p)
{
    p->ordering = p->open || p->claimed_offers || p->cut != UINT64_MAX;
}

/* A claimed rendezvous offer is open in all but name: nothing its sender
 * sent after it may complete before its data is in. claims.c fetches it
 * when something later would (proto_fetch_claims). */
void order_claim(peer_t *p)
{
    p->claimed_offers++;
    p->ordering = true;
}

void order_unclaim(peer_t *p)
{
    p->claimed_offers--;
    update(p);
}

/* A receive after the sender's cut never delivers: its message is lost
 * with everything after it. */
static void fail_lost(xdev_t *d, xreq_t *r)
{
    r->status.count = 0;
    req_complete(d, r, XDEV_ERR_PEER);
}

/* Complete what no open receive before it holds back any more. A claimed
 * offer before the first held receive is fetched first, and holds it back
 * in turn (a fetch of ours delivers nothing, so needs no such care); a
 * fetch can open or finish inside, so look again each time. */
static void release_held(xdev_t *d, peer_t *p)
{
    while (p->held) {
        if (p->claimed_offers && !(p->held->flags & F_FETCH))
            proto_fetch_claims(d, (int)(p - d->peers), p->held->arrival);
        xreq_t *r = p->held;
        if (!r || (p->open && p->open->arrival < r->arrival))
            return;
        list_remove(&p->held, r);
        r->flags &= (uint16_t)~F_HELD;
        if (r->arrival > p->cut)
            fail_lost(d, r);
        else
            req_complete(d, r, XDEV_OK); /* or the error order_fail left */
    }
}

void order_open(xdev_t *d, xreq_t *r)
{
    peer_t *p = sender_of(d, r);
    r->flags |= F_OPEN;
    list_insert(&p->open, r);
    p->ordering = true;
}

static void close_open(peer_t *p, xreq_t *r)
{
    if (r->flags & F_OPEN) {
        list_remove(&p->open, r);
        r->flags &= (uint16_t)~F_OPEN;
        update(p);
    }
}

void order_done(xdev_t *d, xreq_t *r)
{
    peer_t *p = sender_of(d, r);
    if (!p->ordering) { /* the usual case: nothing under way from this sender */
        req_complete(d, r, XDEV_OK);
        return;
    }
    close_open(p, r);
    r->flags |= F_HELD;
    list_insert(&p->held, r);
    release_held(d, p);
}

void order_fail(xdev_t *d, xreq_t *r, int err)
{
    peer_t *p = sender_of(d, r);
    close_open(p, r);
    r->status.count = 0; /* what was read of it does not count (xdev.h) */
    r->status.error = err;
    /* A receive that failed with its sender (before the transport has
     * told us the sender is gone) cuts the stream there. */
    if (err == XDEV_ERR_PEER && r->arrival < p->cut) {
        p->cut = r->arrival;
        p->ordering = true;
    }
    /* Its turn still comes after the receives of earlier messages, as a
     * done one's does: held, it completes with its error. Completing it
     * at once would overtake an earlier rendezvous whose data is still
     * coming through the ring. */
    r->phase = PH_RECV_FILLING; /* no data message may take it now */
    r->flags |= F_HELD;
    list_insert(&p->held, r);
    release_held(d, p);
}

uint64_t order_first_open(const peer_t *p)
{
    return p->open ? p->open->arrival : UINT64_MAX;
}

void order_sender_failed(xdev_t *d, int peer, uint64_t cut)
{
    peer_t *p = &d->peers[peer];
    p->cut = cut;
    p->ordering = true;
    /* Everything held is behind an open receive, so behind the cut. */
    while (p->open) {
        xreq_t *r = p->open;
        close_open(p, r);
        fail_lost(d, r);
    }
    while (p->held) {
        xreq_t *r = p->held;
        list_remove(&p->held, r);
        r->flags &= (uint16_t)~F_HELD;
        fail_lost(d, r);
    }
}
