/*
 * unexpected.c - messages that arrived before their receive: the queue
 * receives and probes match against, its memory bound, and the deferred
 * payloads that wait with their transport, stopping its stream, until a
 * receive or freed memory gives them a place.
 */
#include <stdlib.h>
#include <string.h>
#include "proto.h"
#include "../kit/dlist.h"

#define UX_ENTRY_COST sizeof(uxmsg_t)

/* Give e a buffer for payload bytes, counted against the bound together
 * with the entry itself unless e is charged already (an offer read in:
 * fetch_offer), past it when `over` (see stream_awaited). False (nothing
 * more charged) when the bound or memory says no: the payload must then
 * wait where it is (deferred). */
bool ux_buffer(xdev_t *d, uxmsg_t *e, size_t payload, bool over)
{
    size_t bytes = (e->charge ? 0 : UX_ENTRY_COST) + payload;
    if (!over && d->ux_bytes + bytes > d->cfg.unexpected_limit)
        return false;
    if (payload <= UX_SMALL)
        e->data = payload ? e->small : NULL;
    else if (!(e->data = xdev_payload_get(&d->payloads, payload, &e->data_cap)))
        return false;
    d->ux_bytes += bytes;
    if (d->ux_bytes > d->ux_peak)
        d->ux_peak = d->ux_bytes;
    e->charge += bytes;
    return true;
}

/* A new entry, zeroed, a spare one if there is one. */
static uxmsg_t *ux_alloc(xdev_t *d)
{
    uxmsg_t *e = d->ux_spare;
    if (!e)
        return calloc(1, sizeof *e);
    d->ux_spare = e->next;
    d->ux_nspare--;
    memset(e, 0, offsetof(uxmsg_t, small)); /* small is written before it is read */
    return e;
}

/* Freed entries are kept for reuse, as many as the bound lets the queue
 * hold: a burst of unexpected messages is likely to come again. Handed
 * back to malloc, a burst's entries went back to the system at its end
 * and were faulted in again by the next (here 2 us a message in bursts
 * of 100,000, against under 0.1 with them kept). */
static void ux_release(xdev_t *d, uxmsg_t *e)
{
    if ((d->ux_nspare + 1) * sizeof *e > d->cfg.unexpected_limit) {
        free(e);
        return;
    }
    e->next = d->ux_spare;
    d->ux_spare = e;
    d->ux_nspare++;
}

/* Let go of e's payload buffer, if it has one of its own. */
void ux_data_put(xdev_t *d, uxmsg_t *e)
{
    if (e->data != e->small)
        xdev_payload_put(&d->payloads, e->data, e->data_cap);
    e->data = NULL;
}

/* Does a request of ours wait for a message that comes on peer's stream (a
 * rendezvous reply, its data or end, a synchronous send's ack, or a
 * message a posted receive from peer or any source takes)? It may sit
 * behind unexpected messages the program receives only once that request
 * completed, so the stream must not stop at one of them for want of room:
 * those are buffered past the bound. Looked for only when the bound is
 * reached. */
bool stream_awaited(const xdev_t *d, int peer)
{
    for (uint32_t i = 0; i < d->nslots; i++) {
        const xreq_t *r = d->slots[i].req;
        if (!r)
            continue;
        if (r->kind == REQ_SEND ? r->peer == peer && (r->phase == PH_WAIT_REPLY ||
                                                      (r->phase == PH_SEND_SYNC &&
                                                       !(r->flags & F_ACKED)))
                                : (r->status.source == peer && r->phase == PH_WAIT_DATA) ||
                                      (r->phase == PH_RECV_POSTED &&
                                       (r->peer == peer || r->peer == XDEV_ANY_SOURCE)))
            return true;
    }
    return false;
}

/* Give deferred e a buffer (past the bound when `over`) and let its
 * transport read it in; false if it stays deferred. */
static bool ux_resume(xdev_t *d, uxmsg_t *e, bool over)
{
    size_t payload = e->type == XDEV_MSG_RNDZ_START ? 0 : e->len;
    if (!ux_buffer(d, e, payload, over))
        return false;
    e->state = UX_ARRIVING;
    d->ux_deferred--;
    xdev_rx_t to = { .dst = e->data, .dst_len = payload };
    peer_ops(d, e->src)->resume(peer_tp(d, e->src), e->token, &to);
    return true;
}

/* A request, or a probe, now waits for something on peer's stream (on
 * every peer's for XDEV_ANY_SOURCE): if the stream stopped at an
 * unexpected message for want of room, read it in past the bound (a
 * stopped stream holds one such message, at its head). */
XDEV_HOT void stream_restart(xdev_t *d, int peer)
{
    if (!d->ux_deferred || peer == d->rank)
        return;
    for (uxmsg_t *e = d->ux_head; e && d->ux_deferred; e = e->next) {
        if (e->state != UX_DEFERRED || (peer != XDEV_ANY_SOURCE && e->src != peer) ||
            e->self_sreq || e->rreq)
            continue;
        ux_resume(d, e, true);
        if (peer != XDEV_ANY_SOURCE)
            return;
    }
}

/* An entry that never made it into the queues. */
void ux_discard(xdev_t *d, uxmsg_t *e)
{
    d->ux_bytes -= e->charge;
    ux_data_put(d, e);
    ux_release(d, e);
}

int ux_enqueue(xdev_t *d, uxmsg_t *e)
{
    /* A burst under one key (a root running ahead, a window under one
     * tag) finds its four lists through the entry before it, unhashed. */
    const uxmsg_t *last = d->ux_tail;
    bool like_last = last && last->queued && last->src == e->src && last->tag == e->tag &&
                     last->ctx == e->ctx;
    const int keys[4][2] = {
        { e->src, e->tag }, { XDEV_ANY_SOURCE, e->tag },
        { e->src, XDEV_ANY_TAG }, { XDEV_ANY_SOURCE, XDEV_ANY_TAG },
    };
    for (int i = 0; i < 4; i++) {
        if (like_last) {
            xdev_mtable_append_like(&d->unexpected, &last->node[i], &e->node[i]);
        } else if (xdev_mtable_append(&d->unexpected, keys[i][0], keys[i][1], e->ctx,
                                      &e->node[i])) {
            while (i--)
                xdev_mtable_remove(&d->unexpected, &e->node[i]);
            return XDEV_ERR_NOMEM;
        }
    }
    e->queued = true;
    XDEV_DLIST_APPEND(d->ux_head, d->ux_tail, e, prev, next);
    return XDEV_OK;
}

void ux_dequeue(xdev_t *d, uxmsg_t *e)
{
    if (!e->queued)
        return;
    for (int i = 0; i < 4; i++)
        xdev_mtable_remove(&d->unexpected, &e->node[i]);
    e->queued = false;
}

void ux_free(xdev_t *d, uxmsg_t *e)
{
    ux_dequeue(d, e);
    XDEV_DLIST_UNLINK(d->ux_head, d->ux_tail, e, prev, next);
    if (e->state == UX_DEFERRED)
        d->ux_deferred--;
    bool freed = e->charge != 0;
    d->ux_bytes -= e->charge;
    ux_data_put(d, e);
    ux_release(d, e);
    if (freed && d->ux_deferred)
        ux_retry_deferred(d);
}

/* The oldest unexpected message a receive for (src, tag, ctx) may take. */
XDEV_HOT uxmsg_t *ux_find(xdev_t *d, int src, int tag, int ctx)
{
    if (!d->ux_head)
        return NULL; /* the usual case, and no lookup needed to know it */
    xdev_mnode_t *n = xdev_mtable_head(&d->unexpected, src, tag, ctx);
    if (!n)
        return NULL;
    int k = wild_kind(src, tag);
    return (uxmsg_t *)(void *)((char *)(n - k) - offsetof(uxmsg_t, node));
}

uxmsg_t *proto_probe(xdev_t *d, int src, int tag, int ctx)
{
    uxmsg_t *e = ux_find(d, src, tag, ctx);
    if (e)
        return e;
    stream_restart(d, src); /* what it looks for may be behind a stop */
    peer_watch(d, src);
    return NULL;
}

uxmsg_t *ux_new(xdev_t *d, int src, int tag, int ctx, uint32_t type, size_t len,
                       uint64_t remote)
{
    uxmsg_t *e = ux_alloc(d);
    if (e) {
        e->src = src;
        e->tag = tag;
        e->ctx = ctx;
        e->type = type;
        e->len = len;
        e->remote_id = remote;
    }
    return e;
}

/* Memory was freed: give deferred payloads a buffer while the bound allows,
 * oldest first, so that their peers can be read from again. */
void ux_retry_deferred(xdev_t *d)
{
    for (uxmsg_t *e = d->ux_head; e && d->ux_deferred; e = e->next) {
        if (e->state != UX_DEFERRED || e->self_sreq || e->rreq)
            continue;
        if (!ux_resume(d, e, false))
            break;
    }
}

/* e's sender died before e could be completed: it will never be resumed
 * (its transport let go of it) and its memory goes back. */
void ux_lose(xdev_t *d, uxmsg_t *e)
{
    if (e->state == UX_DEFERRED)
        d->ux_deferred--;
    d->ux_bytes -= e->charge;
    e->charge = 0;
    ux_data_put(d, e);
    e->state = UX_LOST;
}

void proto_drop(xdev_t *d, uxmsg_t *e)
{
    ux_free(d, e);
}

/* Finalize: payloads still waiting with the transport will never be
 * received; let the transport read past them. */
void proto_drop_unexpected(xdev_t *d)
{
    for (uxmsg_t *e = d->ux_head; e; e = e->next) {
        if (e->state != UX_DEFERRED || e->self_sreq || e->rreq)
            continue;
        e->state = UX_ARRIVING;
        d->ux_deferred--;
        peer_ops(d, e->src)->resume(peer_tp(d, e->src), e->token, &(xdev_rx_t){ .dst = NULL });
    }
}
