/*
 * claims.c - messages a matched probe took out of matching: kept until
 * their handle is received, and the rendezvous data of one fetched early
 * when a later message of its sender is received first. An offer read in
 * as it arrives (fetch_offer) is fetched the same way.
 */
#include <stdlib.h>
#include "proto.h"
#include "../kit/dlist.h"

void proto_claim(xdev_t *d, uxmsg_t *e)
{
    ux_dequeue(d, e);
    e->claimed = true;
    e->claim = ++d->claims;
    XDEV_DLIST_PUSH(d->claimed, e, cl_prev, cl_next);
    if (e->type == XDEV_MSG_RNDZ_START)
        order_claim(&d->peers[e->src]);
}

/* Claims are few (messages probed and not yet received), so a walk is
 * cheap, and it means a stale or copied handle is refused, never used. */
uxmsg_t *proto_find_claim(xdev_t *d, const void *e, uint64_t claim)
{
    for (uxmsg_t *c = d->claimed; c; c = c->cl_next)
        if (c == e && c->claim == claim)
            return c;
    return NULL;
}

void proto_recv_claimed(xdev_t *d, uxmsg_t *e, xreq_t *r)
{
    XDEV_DLIST_UNLINK_HEAD(d->claimed, e, cl_prev, cl_next);
    e->claimed = false;
    if (e->type == XDEV_MSG_RNDZ_START)
        order_unclaim(&d->peers[e->src]);
    take_unexpected(d, e, r);
}

/*
 * A claimed rendezvous has no buffer until its handle is received, yet a
 * message its sender sent after it may be received first (a thread may
 * receive its claims in any order). Holding that receive back until the
 * handle is received could wait forever, and letting it complete would
 * break the prefix rule if the sender then died. So the core reads the
 * claim's data into memory of its own, as an open receive like any
 * rendezvous, and the later receive is held behind it as usual. Claims
 * received in the order they were made never pay for this copy.
 */
struct claim_fetch {
    xdev_request_t req; /* first: found again from its request */
    uxmsg_t *msg;
};

/* Read offer e into data (cap bytes of the payload pool); false, with
 * nothing changed, if memory for the request ran out. */
static bool fetch(xdev_t *d, uxmsg_t *e, void *data, size_t cap, bool claimed)
{
    struct claim_fetch *f = malloc(sizeof *f);
    xreq_t *r = f ? xreq_of(&f->req) : NULL;
    if (!f || req_start(d, r, REQ_RECV, data, e->len, e->src, e->tag, e->ctx) != XDEV_OK) {
        free(f);
        return false;
    }
    f->msg = e;
    e->fetch = f;
    e->data = data;
    e->data_cap = cap;
    e->type = XDEV_MSG_EAGER; /* its data will be here, as an eager message's is */
    e->state = UX_ARRIVING;
    if (claimed)
        order_unclaim(&d->peers[e->src]);
    r->flags |= F_FETCH;
    recv_accept(r, e->src, e->tag, e->len);
    r->arrival = e->arrival;
    rndz_accept(d, r, e->remote_id, e->rndz_mode, e->remote_addr, e->remote_key);
    return true;
}

static void fetch_claim(xdev_t *d, uxmsg_t *e)
{
    size_t cap;
    void *data = xdev_payload_get(&d->payloads, e->len ? e->len : 1, &cap);
    /* Memory ran out: the later receive completes unheld (xdev.h), and
     * the next one tries again. */
    if (data && !fetch(d, e, data, cap, true))
        xdev_payload_put(&d->payloads, data, cap);
}

/* An offer within its sender's eager limit is a message its transport
 * copies once (xdev_core_peer_rndz_from): read it in as it arrives, as
 * the eager message would have been, so that its send completes whether a
 * receive is posted or not (two ranks may each send the other one before
 * receiving). Past the unexpected bound it waits for its receive. */
void fetch_offer(xdev_t *d, uxmsg_t *e)
{
    size_t charged = e->charge;
    if (ux_buffer(d, e, e->len, false) && !fetch(d, e, e->data, e->data_cap, false)) {
        d->ux_bytes -= e->charge - charged;
        e->charge = charged;
        ux_data_put(d, e);
    }
}

void proto_fetch_claims(xdev_t *d, int src, uint64_t before)
{
    for (uxmsg_t *e = d->claimed; e; e = e->cl_next)
        if (e->src == src && e->type == XDEV_MSG_RNDZ_START && e->state == UX_READY &&
            e->arrival < before)
            fetch_claim(d, e);
}

void proto_fetch_done(xdev_t *d, xreq_t *r)
{
    struct claim_fetch *f = (struct claim_fetch *)(void *)public_of(r);
    uxmsg_t *e = f->msg;
    bool ok = r->status.error == XDEV_OK;
    req_reap(d, r, NULL);
    free(f);
    e->fetch = NULL;
    if (ok)
        e->state = UX_READY;
    else
        ux_lose(d, e);
    xreq_t *w = e->rreq; /* its handle was received meanwhile */
    if (w) {
        e->rreq = NULL;
        take_unexpected(d, e, w);
    }
}
