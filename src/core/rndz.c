/*
 * rndz.c - the rendezvous, both sides: the sender offers (RNDZ_START), the
 * receive that matches reads the data one-sided, asks to have it written,
 * or asks for it streamed (RNDZ_REPLY), and each side learns the end.
 */
#include "proto.h"

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

void rndz_accept(xdev_t *d, xreq_t *r, uint64_t sreq, int mode, uint64_t addr,
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
int rndz_start(xdev_t *d, xreq_t *s)
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

int rx_rndz_end(xdev_t *d, int peer, const xdev_rx_t *rx)
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

int rx_rndz_reply(xdev_t *d, int peer, const xdev_rx_t *rx)
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

int rx_rndz_data(xdev_t *d, int peer, xdev_rx_t *rx)
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

int rx_rndz_written(xdev_t *d, int peer, const xdev_rx_t *rx)
{
    xreq_t *r = req_lookup(d, rx->head.f[0]);
    if (!r || r->kind != REQ_RECV || r->phase != PH_WAIT_DATA || r->status.source != peer ||
        !(r->flags & F_MEM))
        return XDEV_ERR_PEER;
    order_done(d, r);
    return XDEV_RX_DELIVER;
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
