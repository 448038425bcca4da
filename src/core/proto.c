/*
 * proto.c - the protocols every transport shares: matching of arrivals
 * against posted receives, the unexpected queue and its memory bound,
 * eager, synchronous and rendezvous sends, and the path to one's own rank.
 *
 * The transport hands us each arrival's head first (xdev_core_rx_begin) so
 * that we can say where the payload belongs before it is read: straight
 * into a matching receive's buffer, into a buffer of the unexpected queue
 * while the memory bound allows, or nowhere yet (deferred: the transport
 * stops reading from that peer, which is what slows a flooding sender down,
 * until a receive or freed memory gives the payload a place).
 */
#include <stdlib.h>
#include <string.h>
#include "device.h"
#include "../kit/dlist.h"

#define UX_ENTRY_COST sizeof(uxmsg_t)

/* ---- request id cookies: a tagged pointer tells a request from an
 * unexpected entry in xdev_rx_t.cookie ---- */

static void *cookie_of_ux(uxmsg_t *e) { return (void *)((uintptr_t)e | 1); }
static bool cookie_is_ux(void *c) { return ((uintptr_t)c & 1) != 0; }
static uxmsg_t *ux_of_cookie(void *c) { return (uxmsg_t *)((uintptr_t)c & ~(uintptr_t)1); }

static int wild_kind(int src, int tag)
{
    return (src == XDEV_ANY_SOURCE ? 1 : 0) | (tag == XDEV_ANY_TAG ? 2 : 0);
}

static void head_init(xdev_head_t *h, const xdev_t *d, int dst, int tag, int ctx, uint32_t type)
{
    memset(h, 0, sizeof *h);
    h->hdr.src = (uint32_t)d->rank;
    h->hdr.dst = (uint32_t)dst;
    h->hdr.tag = tag;
    h->hdr.ctx = ctx;
    h->hdr.type = type;
}

static void op_build(xdev_txop_t *op, const xdev_head_t *h, const void *payload, size_t len)
{
    op->next = NULL;
    op->sent = 0;
    op->head_len = (uint32_t)xdev_wire_encode(h, xdev_txop_head(op));
    op->payload = payload;
    op->payload_len = len;
    op->payload_niov = 0;
}

/* ---- a request's buffer: one piece of memory, or a vector's pieces ---- */

static const xdev_iov_t *req_iov(const xreq_t *r)
{
    return r->niov ? (const xdev_iov_t *)r->buf : NULL;
}

/* An op carrying the first len bytes of s's buffer. */
static void op_build_req(xdev_txop_t *op, const xdev_head_t *h, const xreq_t *s, size_t len)
{
    op_build(op, h, s->buf, len); /* the vector itself when niov */
    op->payload_niov = s->niov;
}

/* Copy n bytes from src to offset off of r's buffer. */
static void req_put(xreq_t *r, size_t off, const void *src, size_t n)
{
    if (r->niov)
        xdev_iov_scatter(req_iov(r), r->niov, off, src, n);
    else if (n)
        xdev_copy((char *)r->buf + off, src, n);
}

/* Copy the first n bytes of s's buffer into r's (a send to oneself). */
static void req_copy(xreq_t *r, const xreq_t *s, size_t n)
{
    if (!s->niov) {
        req_put(r, 0, s->buf, n);
        return;
    }
    const xdev_iov_t *iov = req_iov(s);
    for (size_t i = 0, off = 0; i < s->niov && off < n; i++) {
        size_t k = iov[i].len < n - off ? iov[i].len : n - off;
        req_put(r, off, iov[i].base, k);
        off += k;
    }
}

/* Have the transport place n bytes of the arriving message in r's buffer. */
static void rx_into(xdev_rx_t *rx, xreq_t *r, size_t n)
{
    rx->dst = r->niov ? NULL : r->buf;
    rx->dst_len = n;
    rx->dst_iov = req_iov(r);
    rx->dst_niov = r->niov;
}

/* ---- unexpected queue ---- */

/* Give e a buffer for payload bytes, counted against the bound together
 * with the entry itself unless e is charged already (an offer read in:
 * fetch_offer), past it when `over` (see stream_awaited). False (nothing
 * more charged) when the bound or memory says no: the payload must then
 * wait where it is (deferred). */
static bool ux_buffer(xdev_t *d, uxmsg_t *e, size_t payload, bool over)
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
static void ux_data_put(xdev_t *d, uxmsg_t *e)
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
static bool stream_awaited(const xdev_t *d, int peer)
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
static XDEV_HOT void stream_restart(xdev_t *d, int peer)
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
static void ux_discard(xdev_t *d, uxmsg_t *e)
{
    d->ux_bytes -= e->charge;
    ux_data_put(d, e);
    ux_release(d, e);
}

static int ux_enqueue(xdev_t *d, uxmsg_t *e)
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

static void ux_dequeue(xdev_t *d, uxmsg_t *e)
{
    if (!e->queued)
        return;
    for (int i = 0; i < 4; i++)
        xdev_mtable_remove(&d->unexpected, &e->node[i]);
    e->queued = false;
}

static void ux_retry_deferred(xdev_t *d);

static void ux_free(xdev_t *d, uxmsg_t *e)
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
static XDEV_HOT uxmsg_t *ux_find(xdev_t *d, int src, int tag, int ctx)
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
    if (!e)
        stream_restart(d, src); /* what it looks for may be behind a stop */
    return e;
}

/* ---- posted receives ---- */

static xreq_t *req_of_mnode(xdev_mnode_t *n)
{
    return n ? (xreq_t *)(void *)((char *)n - offsetof(xreq_t, mnode)) : NULL;
}

/* r leaves the posted receives (taken, failed or cancelled). */
static void posted_drop(xdev_t *d, xreq_t *r)
{
    xdev_mtable_remove(&d->posted, &r->mnode);
    d->posted_wild[wild_kind(r->peer, r->tag)]--;
    if (r->peer != XDEV_ANY_SOURCE)
        d->peers[r->peer].posted--;
}

/* r, or an earlier-posted wildcard receive that matches (src, tag, ctx). */
static xreq_t *earliest_wild(xdev_t *d, xreq_t *r, int src, int tag, int ctx)
{
    const int keys[3][2] = { { XDEV_ANY_SOURCE, tag }, { src, XDEV_ANY_TAG },
                             { XDEV_ANY_SOURCE, XDEV_ANY_TAG } };
    for (int k = 1; k <= 3; k++) {
        if (!d->posted_wild[k])
            continue;
        xreq_t *c = req_of_mnode(xdev_mtable_head(&d->posted, keys[k - 1][0], keys[k - 1][1], ctx));
        if (c && (!r || c->seq < r->seq))
            r = c;
    }
    return r;
}

/* Remove and return the earliest-posted receive that matches an arrival
 * from (src, tag, ctx): the heads of the four keys it could be under. */
static XDEV_HOT xreq_t *posted_take(xdev_t *d, int src, int tag, int ctx)
{
    xreq_t *r = req_of_mnode(xdev_mtable_head(&d->posted, src, tag, ctx));
    /* Usually no wildcard receive is posted: nothing to compare with. */
    if (d->posted_wild[1] | d->posted_wild[2] | d->posted_wild[3])
        r = earliest_wild(d, r, src, tag, ctx);
    if (r)
        posted_drop(d, r);
    return r;
}

/* A receive has matched a message of `len` bytes: fill in its status. */
static size_t recv_accept(xreq_t *r, int src, int tag, size_t len)
{
    size_t n = len < r->len ? len : r->len;
    r->status.source = src;
    r->status.tag = tag;
    r->status.count = n;
    r->status.msg_len = len;
    r->status.error = len > r->len ? XDEV_ERR_TRUNCATE : XDEV_OK;
    r->phase = PH_RECV_FILLING;
    return n;
}

/* ---- sending ---- */

static XDEV_HOT void op_sent(xdev_t *d, xreq_t *r)
{
    switch (r->phase) {
    case PH_SEND_EAGER:
    case PH_RNDZ_DATA:
        req_complete(d, r, XDEV_OK);
        break;
    case PH_SEND_SYNC:
        r->flags |= F_WRITTEN;
        if (r->flags & F_ACKED)
            req_complete(d, r, XDEV_OK);
        break;
    default:
        break;
    }
}

/* Hand r's op to the transport and deal with an immediate outcome. */
static XDEV_HOT void send_op(xdev_t *d, xreq_t *r, int peer)
{
    int rc = peer_ops(d, peer)->send(peer_tp(d, peer), peer, &r->op, XDEV_TX_QUEUE);
    if (rc == 1)
        op_sent(d, r);
    else if (rc < 0)
        req_complete(d, r, XDEV_ERR_PEER);
}

/*
 * Control ops: a receive answers its sender (RNDZ_REPLY, RNDZ_END,
 * SYNC_ACK) at moments where running out of memory could not be reported
 * to anyone, and the sender would wait for good. So every receive claims
 * CTL_PER_RECV ops from a cache when it is posted, where XDEV_ERR_NOMEM
 * still changes nothing; the cache keeps ctl_nfree >= ctl_claimed. Done
 * ops come back to it, and it keeps a few spare for senders' RNDZ_START.
 */
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

static void ctl_put(xdev_t *d, xdev_txop_t *op)
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
static int send_ctl(xdev_t *d, int peer, const xdev_head_t *h, xreq_t *r)
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
static void send_control(xdev_t *d, xreq_t *r, int peer, uint32_t type, uint64_t sreq)
{
    xdev_head_t h;
    head_init(&h, d, peer, r->status.tag, r->ctx, type);
    h.f[0] = sreq;
    send_ctl(d, peer, &h, r);
}

void proto_release_mem(xdev_t *d, xreq_t *r)
{
    int peer = r->kind == REQ_SEND ? r->peer : r->status.source;
    const xdev_tp_ops_t *ops = peer_ops(d, peer);
    if (ops->mem_release)
        ops->mem_release(peer_tp(d, peer), &r->mem);
    r->flags &= (uint16_t)~F_MEM;
}

/* Hand r's rma op (filled in) to the transport. 1: done already; 0: it
 * comes back through xdev_core_rma_done; < 0: nothing moved. */
static int start_rma(xdev_t *d, xreq_t *r, int peer)
{
    const xdev_tp_ops_t *ops = peer_ops(d, peer);
    if (!ops->rma || d->peers[peer].dead)
        return XDEV_ERR_PEER;
    r->phase = PH_RMA;
    return ops->rma(peer_tp(d, peer), peer, &r->rma);
}

/* Receiver: the data is in r's buffer, read by rma. */
static void rndz_read_done(xdev_t *d, xreq_t *r)
{
    send_control(d, r, r->status.source, XDEV_MSG_RNDZ_END, r->remote_id);
    order_done(d, r);
}

/* Sender: the data is in the receiver's buffer, written by rma; say so. */
static void rndz_written(xdev_t *d, xreq_t *s)
{
    xdev_head_t h;
    head_init(&h, d, s->peer, s->tag, s->ctx, XDEV_MSG_RNDZ_WRITTEN);
    h.f[0] = s->remote_id;
    op_build(&s->op, &h, NULL, 0);
    s->phase = PH_RNDZ_DATA;
    send_op(d, s, s->peer);
}

/* Rendezvous: r matched the sender's RNDZ_START (request sreq, mode, and
 * the address and key of its buffer for READ); r's status already says how
 * many bytes it accepts. Read them where the
 * sender exposed its buffer; else reply, exposing r's buffer for the
 * sender to write into when it asked for that, or asking it to stream. */
static void rndz_reply(xdev_t *d, xreq_t *r, int mode);

static void rndz_accept(xdev_t *d, xreq_t *r, uint64_t sreq, int mode, uint64_t addr,
                        uint64_t key)
{
    int peer = r->status.source;
    r->remote_id = sreq;
    order_open(d, r);
    if (mode == XDEV_RNDZ_READ && !r->niov) { /* one-sided only into one piece */
        if (!r->status.count) {
            rndz_read_done(d, r);
            return;
        }
        r->rma = (xdev_rmaop_t){ .local = r->buf, .len = r->status.count,
                                 .remote_addr = addr, .remote_key = key, .write = false };
        int rc = start_rma(d, r, peer);
        if (rc == 1)
            rndz_read_done(d, r);
        if (rc >= 0)
            return;
    }
    rndz_reply(d, r, mode);
}

/* Receiver: answer the sender of r's offer (r->remote_id): write into r's
 * buffer when it offered that (mode) and the transport can expose it, else
 * stream the data as RNDZ_DATA. */
static void rndz_reply(xdev_t *d, xreq_t *r, int mode)
{
    int peer = r->status.source;
    const xdev_tp_ops_t *ops = peer_ops(d, peer);
    xdev_head_t h;
    head_init(&h, d, peer, r->status.tag, r->ctx, XDEV_MSG_RNDZ_REPLY);
    h.f[0] = r->remote_id;
    h.f[1] = r->id;
    h.f[2] = r->status.count;
    h.f[3] = XDEV_RNDZ_SEND;
    if (mode == XDEV_RNDZ_WRITE && r->status.count && !r->niov && ops->mem_expose &&
        ops->mem_expose(peer_tp(d, peer), peer, r->buf, r->status.count, true, &r->mem) ==
            XDEV_OK) {
        r->flags |= F_MEM;
        h.f[3] = XDEV_RNDZ_WRITE;
        h.f[4] = r->mem.addr;
        h.f[5] = r->mem.key;
    }
    r->phase = PH_WAIT_DATA;
    int rc = send_ctl(d, peer, &h, r);
    if (rc != XDEV_OK)
        order_fail(d, r, rc);
    else
        stream_restart(d, peer);
}

/* Sender: offer s's data with RNDZ_START, exposing the buffer for the
 * receiver to read when the transport prefers that. */
static int rndz_start(xdev_t *d, xreq_t *s)
{
    const xdev_tp_ops_t *ops = peer_ops(d, s->peer);
    xdev_tp_t *tp = peer_tp(d, s->peer);
    /* A vector is streamed: its pieces are gathered as the data leaves. */
    int mode = ops->rndz_mode && !s->niov ? ops->rndz_mode(tp, s->peer, s->len) : XDEV_RNDZ_SEND;
    xdev_head_t h;
    head_init(&h, d, s->peer, s->tag, s->ctx, XDEV_MSG_RNDZ_START);
    if (mode == XDEV_RNDZ_READ) {
        if (ops->mem_expose(tp, s->peer, s->buf, s->len, false, &s->mem) == XDEV_OK) {
            s->flags |= F_MEM;
            h.f[3] = s->mem.addr;
            h.f[4] = s->mem.key;
        } else {
            mode = XDEV_RNDZ_SEND;
        }
    }
    h.f[0] = s->id;
    h.f[1] = s->len;
    h.f[2] = (uint64_t)mode;
    s->rndz_mode = (uint8_t)mode;
    s->phase = PH_WAIT_REPLY;
    int rc = send_ctl(d, s->peer, &h, NULL);
    if (rc == XDEV_ERR_NOMEM) {
        if (s->flags & F_MEM)
            proto_release_mem(d, s);
        return rc; /* nothing was posted */
    }
    if (rc != XDEV_OK)
        req_complete(d, s, rc);
    else
        stream_restart(d, s->peer);
    return XDEV_OK;
}

static uxmsg_t *ux_new(xdev_t *d, int src, int tag, int ctx, uint32_t type, size_t len,
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

/* A send to our own rank: a copy, with the sender held back (deferred)
 * when the receive is not posted yet and the message is synchronous, large,
 * or over the unexpected-memory bound. */
static int self_send(xdev_t *d, xreq_t *s, bool sync)
{
    xreq_t *r = posted_take(d, d->rank, s->tag, s->ctx);
    if (r) {
        req_copy(r, s, recv_accept(r, d->rank, s->tag, s->len));
        req_complete(d, r, XDEV_OK);
        req_complete(d, s, XDEV_OK);
        return XDEV_OK;
    }
    uxmsg_t *e = ux_new(d, d->rank, s->tag, s->ctx, sync ? XDEV_MSG_EAGER_SYNC : XDEV_MSG_EAGER,
                        s->len, 0);
    if (!e)
        return XDEV_ERR_NOMEM;
    if (!sync && s->len <= d->cfg.eager_limit && ux_buffer(d, e, s->len, false)) {
        if (s->niov)
            xdev_iov_gather(e->data, req_iov(s), s->niov, 0, s->len);
        else if (s->len)
            xdev_copy(e->data, s->buf, s->len);
        e->state = UX_READY;
    } else {
        e->state = UX_DEFERRED;
        e->self_sreq = s;
        s->phase = PH_SELF_WAIT;
    }
    int rc = ux_enqueue(d, e);
    if (rc != XDEV_OK) {
        ux_discard(d, e);
        return rc;
    }
    if (e->state == UX_DEFERRED)
        d->ux_deferred++;
    else
        req_complete(d, s, XDEV_OK);
    return XDEV_OK;
}

XDEV_HOT int proto_send_now(xdev_t *d, const void *buf, size_t len, int dst, int tag, int ctx)
{
    if ((dst == d->rank && !d->self_by_tp) || d->peers[dst].dead)
        return 0;
    xdev_txop_t op;
    xdev_head_t h;
    head_init(&h, d, dst, tag, ctx, XDEV_MSG_EAGER);
    op_build(&op, &h, buf, len);
    if (peer_ops(d, dst)->send(peer_tp(d, dst), dst, &op, XDEV_TX_NOW) != 1)
        return 0;
    d->peers[dst].msgs_sent++;
    d->peers[dst].bytes_sent += len;
    return 1;
}

XDEV_HOT int proto_send(xdev_t *d, xreq_t *s, bool sync)
{
    if (sync)
        s->flags |= F_SYNC;
    s->status.count = s->len;
    s->status.msg_len = s->len;
    if (s->peer == d->rank && !d->self_by_tp) {
        d->self_msgs++;
        return self_send(d, s, sync);
    }
    peer_t *p = &d->peers[s->peer];
    if (p->dead) {
        req_complete(d, s, XDEV_ERR_PEER);
        return XDEV_OK;
    }
    p->msgs_sent++;
    p->bytes_sent += s->len;
    /* Under the eager limit a rendezvous is the transport's single copy,
     * never for a vector (which it would stream) or a synchronous send
     * (whose offer the receiver must not read before it matches). */
    if (s->len >= p->rndz_from && (s->len > d->cfg.eager_limit || (!s->niov && !sync))) {
        d->rndz_sent++;
        return rndz_start(d, s);
    }
    xdev_head_t h;
    head_init(&h, d, s->peer, s->tag, s->ctx, sync ? XDEV_MSG_EAGER_SYNC : XDEV_MSG_EAGER);
    h.f[0] = s->id;
    op_build_req(&s->op, &h, s, s->len);
    s->phase = sync ? PH_SEND_SYNC : PH_SEND_EAGER;
    send_op(d, s, s->peer);
    if (sync)
        stream_restart(d, s->peer);
    return XDEV_OK;
}

/* ---- receiving ---- */

bool proto_lost(const xdev_t *d, const uxmsg_t *e)
{
    return e->state == UX_LOST ||
           (e->src != d->rank && e->arrival > d->peers[e->src].cut && !e->kept);
}

/* r took unexpected entry e. */
static void take_unexpected(xdev_t *d, uxmsg_t *e, xreq_t *r)
{
    /* One still arriving (or being fetched) stays for whoever is reading
     * it: its receive fails behind the cut when its bytes are in. */
    if (proto_lost(d, e) && e->state != UX_ARRIVING) {
        r->status.source = e->src;
        r->status.tag = e->tag;
        r->status.count = 0;
        r->status.msg_len = e->len;
        req_complete(d, r, XDEV_ERR_PEER);
        ux_free(d, e);
        return;
    }
    size_t n = recv_accept(r, e->src, e->tag, e->len);
    r->arrival = e->arrival;
    ux_dequeue(d, e);
    if (e->state == UX_ARRIVING) {
        e->rreq = r; /* finished in xdev_core_rx_end or proto_fetch_done */
        return;
    }
    if (e->state == UX_DEFERRED && !e->self_sreq) {
        e->rreq = r;
        xdev_rx_t to = { .dst = NULL };
        if (e->type != XDEV_MSG_RNDZ_START) /* an offer's payload is empty */
            rx_into(&to, r, n);
        peer_ops(d, e->src)->resume(peer_tp(d, e->src), e->token, &to);
        return;
    }
    if (e->type == XDEV_MSG_RNDZ_START) {
        rndz_accept(d, r, e->remote_id, e->rndz_mode, e->remote_addr, e->remote_key);
    } else {
        if (e->self_sreq)
            req_copy(r, e->self_sreq, n);
        else
            req_put(r, 0, e->data, n);
        if (e->self_sreq) {
            req_complete(d, e->self_sreq, XDEV_OK);
            req_complete(d, r, XDEV_OK);
        } else if (e->kept) {
            req_complete(d, r, XDEV_OK); /* past the cut, yet kept: see there */
        } else {
            if (e->type == XDEV_MSG_EAGER_SYNC)
                send_control(d, r, e->src, XDEV_MSG_SYNC_ACK, e->remote_id);
            order_done(d, r);
        }
    }
    ux_free(d, e);
}

XDEV_HOT int proto_recv(xdev_t *d, xreq_t *r)
{
    uxmsg_t *e = ux_find(d, r->peer, r->tag, r->ctx);
    if (e) {
        take_unexpected(d, e, r);
        return XDEV_OK;
    }
    if (r->peer != XDEV_ANY_SOURCE && d->peers[r->peer].dead) {
        req_complete(d, r, XDEV_ERR_PEER);
        return XDEV_OK;
    }
    int rc = xdev_mtable_append(&d->posted, r->peer, r->tag, r->ctx, &r->mnode);
    if (rc != XDEV_OK)
        return rc;
    r->seq = ++d->post_seq;
    r->phase = PH_RECV_POSTED;
    d->posted_wild[wild_kind(r->peer, r->tag)]++;
    if (r->peer != XDEV_ANY_SOURCE)
        d->peers[r->peer].posted++;
    if (r->peer != XDEV_ANY_SOURCE && r->peer != d->rank)
        peer_ops(d, r->peer)->watch(peer_tp(d, r->peer), r->peer);
    stream_restart(d, r->peer);
    return XDEV_OK;
}

/* Memory was freed: give deferred payloads a buffer while the bound allows,
 * oldest first, so that their peers can be read from again. */
static void ux_retry_deferred(xdev_t *d)
{
    for (uxmsg_t *e = d->ux_head; e && d->ux_deferred; e = e->next) {
        if (e->state != UX_DEFERRED || e->self_sreq || e->rreq)
            continue;
        if (!ux_resume(d, e, false))
            break;
    }
}

/* An eager message or a rendezvous offer that no receive has been posted
 * for: buffered, or deferred where it is. Out of line, so that the
 * matched path (rx_message) stays compact: inlined into it, this cost a
 * two-rank exchange of 8 bytes (isend, irecv, wait both) 7% per round. */
static __attribute__((noinline)) int rx_unexpected(xdev_t *d, int peer, void *token,
                                                   xdev_rx_t *rx, size_t msglen,
                                                   uint64_t arrival)
{
    const xdev_hdr_t *h = &rx->head.hdr;
    bool offer = h->type == XDEV_MSG_RNDZ_START;
    uxmsg_t *e = ux_new(d, peer, h->tag, h->ctx, h->type, msglen, rx->head.f[0]);
    if (!e)
        return XDEV_ERR_NOMEM;
    e->arrival = arrival;
    if (offer) {
        e->rndz_mode = (uint8_t)rx->head.f[2];
        e->remote_addr = rx->head.f[3];
        e->remote_key = rx->head.f[4];
    }
    rx->unexpected = true;
    size_t payload = rx->len;
    if (ux_buffer(d, e, payload, false) ||
        (stream_awaited(d, peer) && ux_buffer(d, e, payload, true))) {
        e->state = UX_ARRIVING;
        rx->dst = e->data;
        rx->dst_len = payload;
    } else {
        e->state = UX_DEFERRED;
        e->token = token;
    }
    int rc = ux_enqueue(d, e);
    if (rc != XDEV_OK) {
        ux_discard(d, e);
        return rc;
    }
    rx->cookie = cookie_of_ux(e);
    if (e->state == UX_DEFERRED) {
        d->ux_deferred++;
        return XDEV_RX_DEFER;
    }
    return XDEV_RX_DELIVER;
}

/* An eager message or a rendezvous offer arrived from peer. */
static int rx_message(xdev_t *d, int peer, void *token, xdev_rx_t *rx)
{
    const xdev_hdr_t *h = &rx->head.hdr;
    bool offer = h->type == XDEV_MSG_RNDZ_START;
    size_t msglen = offer ? rx->head.f[1] : rx->len;
    if (d->finalizing)
        return XDEV_RX_DELIVER; /* nobody will receive it: discard */
    peer_t *p = &d->peers[peer];
    if (p->cut != UINT64_MAX)
        return XDEV_ERR_PEER; /* its stream broke: nothing after it counts */
    uint64_t arrival = ++p->arrivals;
    p->bytes_received += msglen;
    d->rndz_received += offer;

    xreq_t *r = posted_take(d, peer, h->tag, h->ctx);
    if (r) {
        size_t n = recv_accept(r, peer, h->tag, msglen);
        r->arrival = arrival;
        if (offer) {
            rndz_accept(d, r, rx->head.f[0], (int)rx->head.f[2], rx->head.f[3], rx->head.f[4]);
            return XDEV_RX_DELIVER;
        }
        if (h->type == XDEV_MSG_EAGER_SYNC) {
            r->flags |= F_SYNC;
            r->remote_id = rx->head.f[0];
        }
        rx_into(rx, r, n);
        rx->cookie = r;
        return XDEV_RX_DELIVER;
    }
    return rx_unexpected(d, peer, token, rx, msglen, arrival);
}


static int rx_sync_ack(xdev_t *d, int peer, const xdev_rx_t *rx)
{
    xreq_t *s = req_lookup(d, rx->head.f[0]);
    if (!s || s->kind != REQ_SEND || s->peer != peer || s->phase != PH_SEND_SYNC ||
        (s->flags & F_ACKED))
        return XDEV_ERR_PEER;
    s->flags |= F_ACKED;
    if (s->flags & F_WRITTEN)
        req_complete(d, s, XDEV_OK);
    return XDEV_RX_DELIVER;
}

static int rx_rndz_end(xdev_t *d, int peer, const xdev_rx_t *rx)
{
    xreq_t *s = req_lookup(d, rx->head.f[0]);
    if (!s || s->kind != REQ_SEND || s->peer != peer || s->phase != PH_WAIT_REPLY ||
        s->rndz_mode != XDEV_RNDZ_READ)
        return XDEV_ERR_PEER;
    req_complete(d, s, XDEV_OK);
    return XDEV_RX_DELIVER;
}

/* Sender: stream the first len bytes of s to the receive s->remote_id. */
static void rndz_stream(xdev_t *d, xreq_t *s, size_t len)
{
    xdev_head_t h;
    head_init(&h, d, s->peer, s->tag, s->ctx, XDEV_MSG_RNDZ_DATA);
    h.f[0] = s->remote_id;
    op_build_req(&s->op, &h, s, len);
    s->phase = PH_RNDZ_DATA;
    send_op(d, s, s->peer);
}

static int rx_rndz_reply(xdev_t *d, int peer, const xdev_rx_t *rx)
{
    xreq_t *s = req_lookup(d, rx->head.f[0]);
    const uint64_t *f = rx->head.f;
    if (!s || s->kind != REQ_SEND || s->peer != peer || s->phase != PH_WAIT_REPLY ||
        f[2] > s->len || (f[3] != XDEV_RNDZ_SEND && f[3] != XDEV_RNDZ_WRITE) ||
        (f[3] == XDEV_RNDZ_WRITE && s->rndz_mode != XDEV_RNDZ_WRITE))
        return XDEV_ERR_PEER;
    s->remote_id = f[1];
    if (f[3] == XDEV_RNDZ_WRITE) {
        s->rma = (xdev_rmaop_t){ .local = s->buf, .len = (size_t)f[2],
                                 .remote_addr = f[4], .remote_key = f[5], .write = true };
        int rc = f[2] ? start_rma(d, s, peer) : 1;
        if (rc == 1)
            rndz_written(d, s);
        if (rc >= 0)
            return XDEV_RX_DELIVER;
        /* nothing moved: stream it; the receiver takes RNDZ_DATA too */
    }
    rndz_stream(d, s, (size_t)f[2]);
    return XDEV_RX_DELIVER;
}

static int rx_rndz_data(xdev_t *d, int peer, xdev_rx_t *rx)
{
    xreq_t *r = req_lookup(d, rx->head.f[0]);
    if (!r || r->kind != REQ_RECV || r->phase != PH_WAIT_DATA || r->status.source != peer ||
        rx->len != r->status.count)
        return XDEV_ERR_PEER;
    r->phase = PH_RECV_FILLING;
    rx_into(rx, r, rx->len);
    rx->cookie = r;
    return XDEV_RX_DELIVER;
}

static int rx_rndz_written(xdev_t *d, int peer, const xdev_rx_t *rx)
{
    xreq_t *r = req_lookup(d, rx->head.f[0]);
    if (!r || r->kind != REQ_RECV || r->phase != PH_WAIT_DATA || r->status.source != peer ||
        !(r->flags & F_MEM))
        return XDEV_ERR_PEER;
    order_done(d, r);
    return XDEV_RX_DELIVER;
}

/* Does h come from peer, to us, with a tag and a context a receive could
 * have? */
static bool head_ok(const xdev_t *d, int peer, const xdev_hdr_t *h)
{
    return h->src == (uint32_t)peer && h->dst == (uint32_t)d->rank && h->tag >= 0 && h->ctx >= 0;
}

/* A plain eager message that is all in memory, for a receive already
 * posted: straight into it, the common case made short. 1 if it went. */
static XDEV_HOT int rx_whole(xdev_t *d, int peer, const xdev_rx_t *rx)
{
    const xdev_hdr_t *h = &rx->head.hdr;
    peer_t *p = &d->peers[peer];
    if (h->type != XDEV_MSG_EAGER || rx->len > p->eager_limit || d->finalizing || p->ordering)
        return 0;
    xreq_t *r = posted_take(d, peer, h->tag, h->ctx);
    if (!r)
        return 0;
    size_t n = recv_accept(r, peer, h->tag, rx->len);
    r->arrival = ++p->arrivals;
    p->bytes_received += rx->len;
    req_put(r, 0, rx->payload, n);
    req_complete(d, r, XDEV_OK); /* nothing is open from p: in order */
    return 1;
}

static int rx_dispatch(xdev_t *d, int peer, void *token, xdev_rx_t *rx)
{
    const xdev_hdr_t *h = &rx->head.hdr;
    switch (h->type) {
    case XDEV_MSG_EAGER:
    case XDEV_MSG_EAGER_SYNC:
        if (rx->len > d->peers[peer].eager_limit)
            return XDEV_ERR_PEER;
        return rx_message(d, peer, token, rx);
    case XDEV_MSG_RNDZ_START:
        if (rx->len || rx->head.f[2] > XDEV_RNDZ_WRITE)
            return XDEV_ERR_PEER;
        return rx_message(d, peer, token, rx);
    case XDEV_MSG_SYNC_ACK:
        return rx->len ? XDEV_ERR_PEER : rx_sync_ack(d, peer, rx);
    case XDEV_MSG_RNDZ_REPLY:
        return rx->len ? XDEV_ERR_PEER : rx_rndz_reply(d, peer, rx);
    case XDEV_MSG_RNDZ_DATA:
        return rx_rndz_data(d, peer, rx);
    case XDEV_MSG_RNDZ_END:
        return rx->len ? XDEV_ERR_PEER : rx_rndz_end(d, peer, rx);
    case XDEV_MSG_RNDZ_WRITTEN:
        return rx->len ? XDEV_ERR_PEER : rx_rndz_written(d, peer, rx);
    default:
        return XDEV_ERR_PEER;
    }
}

XDEV_HOT int xdev_core_rx_begin(xdev_t *d, int peer, void *token, xdev_rx_t *rx)
{
    d->activity++;
    rx->cookie = NULL;
    rx->unexpected = false;
    if (!head_ok(d, peer, &rx->head.hdr))
        return XDEV_ERR_PEER;
    if (rx->payload && rx_whole(d, peer, rx))
        return XDEV_RX_DONE;
    rx->dst = NULL;
    rx->dst_len = 0;
    rx->dst_iov = NULL;
    rx->dst_niov = 0;
    int rc = rx_dispatch(d, peer, token, rx);
    if (rc != XDEV_RX_DELIVER || !rx->payload)
        return rc;
    xdev_rx_place(rx, 0, rx->payload, rx->len);
    xdev_core_rx_end(d, rx);
    return XDEV_RX_DONE;
}

/* A receive's payload is all in place: finish the receive. */
static void recv_filled(xdev_t *d, xreq_t *r)
{
    if ((r->flags & F_SYNC) && !d->peers[r->status.source].dead)
        send_control(d, r, r->status.source, XDEV_MSG_SYNC_ACK, r->remote_id);
    order_done(d, r);
}

static void fetch_offer(xdev_t *d, uxmsg_t *e);

XDEV_HOT void xdev_core_rx_end(xdev_t *d, xdev_rx_t *rx)
{
    if (!rx->cookie)
        return;
    if (!cookie_is_ux(rx->cookie)) {
        recv_filled(d, rx->cookie);
        return;
    }
    uxmsg_t *e = ux_of_cookie(rx->cookie);
    xreq_t *r = e->rreq;
    if (!r) {
        e->state = UX_READY;
        if (e->type == XDEV_MSG_RNDZ_START && e->len && e->len <= d->peers[e->src].eager_limit)
            fetch_offer(d, e);
        return;
    }
    if (e->type == XDEV_MSG_RNDZ_START) {
        rndz_accept(d, r, e->remote_id, e->rndz_mode, e->remote_addr, e->remote_key);
    } else {
        if (e->data)
            req_put(r, 0, e->data, r->status.count);
        if (e->type == XDEV_MSG_EAGER_SYNC) {
            r->flags |= F_SYNC;
            r->remote_id = e->remote_id;
        }
        recv_filled(d, r);
    }
    ux_free(d, e);
}

XDEV_HOT void xdev_core_tx_done(xdev_t *d, xdev_txop_t *op, int err)
{
    d->activity++;
    if (op->owner == XDEV_OP_OWN)
        return;
    if (op->owner == OP_CONTROL) {
        ctl_put(d, op);
        return;
    }
    xreq_t *r = (xreq_t *)(void *)((char *)op - offsetof(xreq_t, op));
    if (err != XDEV_OK) {
        if (r->phase != PH_DONE)
            req_complete(d, r, err);
        return;
    }
    op_sent(d, r);
}

void xdev_core_tx_fail_all(xdev_t *d, xdev_txop_t *op)
{
    while (op) {
        xdev_txop_t *next = op->next;
        xdev_core_tx_done(d, op, XDEV_ERR_PEER);
        op = next;
    }
}

void xdev_core_rma_done(xdev_t *d, xdev_rmaop_t *op, int err)
{
    d->activity++;
    xreq_t *r = (xreq_t *)(void *)((char *)op - offsetof(xreq_t, rma));
    int peer = r->kind == REQ_SEND ? r->peer : r->status.source;
    /* The kernel or the device refused the one-sided copy, not the peer:
     * the data still goes, streamed, into the same buffer. */
    if (err == XDEV_ERR_SYSTEM && !d->peers[peer].dead && r->kind == REQ_SEND)
        rndz_stream(d, r, op->len);
    else if (err == XDEV_ERR_SYSTEM && !d->peers[peer].dead)
        rndz_reply(d, r, XDEV_RNDZ_SEND);
    else if (err != XDEV_OK && r->kind == REQ_RECV)
        order_fail(d, r, err);
    else if (err != XDEV_OK)
        req_complete(d, r, err);
    else if (r->kind == REQ_SEND)
        rndz_written(d, r);
    else
        rndz_read_done(d, r);
}

void xdev_core_peer_rndz_from(xdev_t *d, int peer, size_t from)
{
    size_t past = d->cfg.eager_limit + 1;
    size_t at = from && from < past ? from : past;
    __atomic_store_n(&d->peers[peer].rndz_from, at, __ATOMIC_RELAXED);
}

void xdev_core_peer_eager_limit(xdev_t *d, int peer, size_t limit)
{
    d->peers[peer].eager_limit = limit;
}

bool xdev_core_posted_from(const xdev_t *d, int peer)
{
    return d->peers[peer].posted != 0;
}

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

/* e's sender died before e could be completed: it will never be resumed
 * (its transport let go of it) and its memory goes back. */
static void ux_lose(xdev_t *d, uxmsg_t *e)
{
    if (e->state == UX_DEFERRED)
        d->ux_deferred--;
    d->ux_bytes -= e->charge;
    e->charge = 0;
    ux_data_put(d, e);
    e->state = UX_LOST;
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

/* ---- matched probe and cancel ---- */

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
static void fetch_offer(xdev_t *d, uxmsg_t *e)
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

void proto_drop(xdev_t *d, uxmsg_t *e)
{
    ux_free(d, e);
}

int proto_cancel(xdev_t *d, xreq_t *r)
{
    if (r->phase == PH_RECV_POSTED) {
        posted_drop(d, r);
        r->status.count = 0;
        req_complete(d, r, XDEV_ERR_CANCELED);
        return XDEV_OK;
    }
    if (r->phase == PH_SELF_WAIT) {
        /* A send to ourselves that no receive has taken: its entry is
         * still in matching unless a matched probe claimed it. */
        for (uxmsg_t *e = d->ux_head; e; e = e->next) {
            if (e->self_sreq != r)
                continue;
            if (e->claimed)
                return XDEV_ERR_TOO_LATE;
            ux_free(d, e);
            r->status.count = 0; /* nothing of it was sent */
            req_complete(d, r, XDEV_ERR_CANCELED);
            return XDEV_OK;
        }
    }
    /* Anything else has left, or been matched, at least in part. */
    return XDEV_ERR_TOO_LATE;
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
