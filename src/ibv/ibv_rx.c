/*
 * ibv_rx.c - the shared receive queue and handing arrivals to the core.
 *
 * Completions of every peer arrive mixed on one CQ; each peer's own are in
 * the order it sent them. A peer's arrival is fed to the core buffer by
 * buffer. When the core defers an arrival (its unexpected memory is full),
 * that buffer and every later one from the same peer are held, in order,
 * until ops->resume; meanwhile the peer gets no credits back for them, so
 * it soon stops sending, which is the back-pressure the core asks for.
 *
 * Used buffers go back on the SRQ in batches (one post per batch), and
 * only then are the peers that used them owed credits.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include "ibv.h"

#define REPOST_BATCH 16

static uint8_t *buf_data(xdev_tp_t *tp, uint32_t idx)
{
    return (uint8_t *)tp->pool + (size_t)idx * tp->buf_bytes;
}

int ibv_rx_init(xdev_tp_t *tp)
{
    for (uint32_t i = 0; i < tp->nrx; i++)
        tp->repost[tp->nrepost++] = i;
    ibv_rx_repost(tp);
    return tp->nrepost ? XDEV_ERR_SYSTEM : XDEV_OK;
}

/* A buffer the peer filled is free again; it is owed a credit once the
 * buffer is back on the SRQ. Buffers may wait for the next idle poll
 * (ibv_tp_progress), but not one of the reserve that credit-only frames
 * use (owe false), nor one whose peer is then due a grant: so no peer
 * waits on more than half its window of buffers we freed, as when every
 * poll reposted, whatever we do between calls. */
static void release(xdev_tp_t *tp, ibv_peer_t *p, uint32_t idx, bool owe)
{
    tp->repost[tp->nrepost++] = idx;
    bool grant_due = false;
    if (owe && p->state != PEER_DEAD) {
        if (p->owed_unposted++ == 0)
            tp->dirty[tp->ndirty++] = p;
        grant_due = xdev_credits_due_after(&p->cr, p->owed_unposted, tp->credits);
    }
    if (!owe || grant_due)
        tp->repost_now = true;
    if (tp->nrepost >= REPOST_BATCH)
        ibv_rx_repost(tp);
}

/* Post the used buffers, a batch at a time. Kept out of ibv_rx_repost,
 * which every poll calls: the compiler sets up the batch's chain of work
 * requests before its loop, work a poll with nothing to post should not
 * pay (it was a fifth of an idle poll's cost under emulation). */
static __attribute__((noinline)) void post_batches(xdev_tp_t *tp)
{
    struct ibv_recv_wr wr[REPOST_BATCH], *bad;
    struct ibv_sge sge[REPOST_BATCH];
    while (tp->nrepost) {
        uint32_t n = tp->nrepost < REPOST_BATCH ? tp->nrepost : REPOST_BATCH;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t idx = tp->repost[tp->nrepost - n + i];
            sge[i] = (struct ibv_sge){ .addr = (uintptr_t)buf_data(tp, idx),
                                       .length = (uint32_t)tp->buf_bytes,
                                       .lkey = tp->pool_mr->lkey };
            wr[i] = (struct ibv_recv_wr){ .wr_id = wr_id_make(WR_RECV, 0, idx),
                                          .next = i + 1 < n ? &wr[i + 1] : NULL,
                                          .sg_list = &sge[i], .num_sge = 1 };
        }
        if (ibv_post_srq_recv(tp->srq, wr, &bad))
            break; /* cannot happen with the SRQ sized for every buffer */
        tp->nrepost -= n;
    }
}

void ibv_rx_repost(xdev_tp_t *tp)
{
    tp->repost_now = false;
    if (tp->nrepost)
        post_batches(tp);
    /* Only now are the buffers really there to be filled again. */
    while (tp->ndirty) {
        ibv_peer_t *p = tp->dirty[--tp->ndirty];
        p->cr.owed += p->owed_unposted;
        p->owed_unposted = 0;
        ibv_tx_grant(tp, p);
    }
}

static void hold(ibv_peer_t *p, ibv_buf_t *bufs, uint32_t idx, bool front)
{
    if (front) {
        bufs[idx].next = p->pend_head;
        p->pend_head = idx + 1;
        if (!p->pend_tail)
            p->pend_tail = idx + 1;
        return;
    }
    bufs[idx].next = 0;
    if (p->pend_tail)
        bufs[p->pend_tail - 1].next = idx + 1;
    else
        p->pend_head = idx + 1;
    p->pend_tail = idx + 1;
}

static uint32_t unhold(ibv_peer_t *p, ibv_buf_t *bufs)
{
    uint32_t idx = p->pend_head - 1;
    p->pend_head = bufs[idx].next;
    if (!p->pend_head)
        p->pend_tail = 0;
    return idx;
}

/* Parse the first fragment of a message and ask the core where it goes.
 * Returns the offset of its payload, 0 if the peer broke the format. */
static uint32_t begin_message(xdev_tp_t *tp, int peer, const uint8_t *d, uint32_t len, int *rc)
{
    ibv_peer_t *p = &tp->peers[peer];
    xdev_rx_t *rx = &p->in.rx;
    if (len < IBV_PREFIX)
        return 0;
    uint64_t total = xdev_get_le64(d);
    /* A buffer holds a whole head: one cut short is as broken as a bad one. */
    long head_len = xdev_wire_decode_head(d + IBV_PREFIX, len - IBV_PREFIX, &rx->head);
    if (head_len <= 0 || total < (uint64_t)head_len || len - IBV_PREFIX > total)
        return 0;
    rx->len = (size_t)(total - (uint64_t)head_len);
    rx->payload = len - IBV_PREFIX == total ? d + IBV_PREFIX + head_len : NULL;
    *rc = xdev_rxmsg_begin(tp->dev, peer, p, &p->in);
    return (uint32_t)(IBV_PREFIX + head_len);
}

/* Feed buffer idx, from byte off, to the peer's arrival. False if the core
 * deferred a new arrival that starts in it (the caller holds it). */
static bool feed(xdev_tp_t *tp, int peer, uint32_t idx, uint32_t off)
{
    ibv_peer_t *p = &tp->peers[peer];
    const uint8_t *d = buf_data(tp, idx);
    uint32_t len = tp->bufs[idx].len;
    if (p->in.state == XDEV_RXMSG_IDLE) {
        int rc = 0;
        off = begin_message(tp, peer, d, len, &rc);
        if (!off || rc < 0) {
            ibv_peer_fail(tp, peer);
            return true;
        }
        if (rc == XDEV_RX_DONE) /* the core took it whole from the buffer */
            return true;
        if (rc == XDEV_RX_DEFER && p->in.state == XDEV_RXMSG_DEFERRED) {
            p->pend_off = off;
            return false;
        }
    }
    if (!xdev_rxmsg_place(&p->in, d + off, len - off)) {
        ibv_peer_fail(tp, peer);
        return true;
    }
    xdev_rxmsg_placed(tp->dev, &p->in);
    return true;
}

void ibv_rx_completion(xdev_tp_t *tp, struct ibv_wc *wc)
{
    uint32_t idx = wr_value_of(wc->wr_id);
    int peer = ibv_peer_of_qpn(tp, wc->qp_num);
    if (peer < 0 || wc->status != IBV_WC_SUCCESS || tp->peers[peer].state == PEER_DEAD) {
        IBV_TRACE(tp, "receive from qpn %u (peer %d): %s", wc->qp_num, peer,
                  ibv_wc_status_str(wc->status));
        tp->repost[tp->nrepost++] = idx;
        if (peer >= 0 && wc->status != IBV_WC_SUCCESS)
            ibv_peer_fail(tp, peer);
        return;
    }
    ibv_peer_t *p = &tp->peers[peer];
    uint32_t imm = wc->wc_flags & IBV_WC_WITH_IMM ? ntohl(wc->imm_data) : 0;
    p->heard = true;
    if (!p->remote_ready)
        ibv_peer_remote_ready(tp, p); /* it sent: its QP is ready */
    if (imm & IMM_CREDITS_MASK) {
        if (!xdev_credits_returned(&p->cr, imm & IMM_CREDITS_MASK, tp->credits)) {
            tp->repost[tp->nrepost++] = idx;
            ibv_peer_fail(tp, peer);
            return;
        }
        ibv_tx_kick(tp, p);
    }
    if (imm & IMM_CREDIT_ONLY) {
        release(tp, p, idx, false);
        return;
    }
    tp->bufs[idx].len = wc->byte_len;
    if (p->in.state == XDEV_RXMSG_DEFERRED || p->pend_head) {
        hold(p, tp->bufs, idx, false);
        return;
    }
    if (feed(tp, peer, idx, 0))
        release(tp, p, idx, true);
    else
        hold(p, tp->bufs, idx, true);
}

/* Deliver what peers hold now that the core resumed them. */
void ibv_rx_service(xdev_tp_t *tp)
{
    while (tp->service) {
        ibv_peer_t *p = tp->service;
        tp->service = p->service_next;
        p->in_service = false;
        int peer = (int)(p - tp->peers);
        while (p->pend_head && p->in.state != XDEV_RXMSG_DEFERRED && p->state != PEER_DEAD) {
            uint32_t off = p->pend_off;
            p->pend_off = 0;
            uint32_t idx = unhold(p, tp->bufs);
            if (feed(tp, peer, idx, off))
                release(tp, p, idx, true);
            else
                hold(p, tp->bufs, idx, true);
        }
    }
}

void ibv_resume(xdev_tp_t *tp, void *token, const xdev_rx_t *to)
{
    ibv_peer_t *p = token;
    if (xdev_rxmsg_resume(&p->in, to) && !p->in_service) {
        p->in_service = true;
        p->service_next = tp->service;
        tp->service = p;
    }
}

/* A failed peer's held buffers go back on the SRQ unread. */
void ibv_rx_drop_held(xdev_tp_t *tp, ibv_peer_t *p)
{
    while (p->pend_head)
        tp->repost[tp->nrepost++] = unhold(p, tp->bufs);
    p->in.state = XDEV_RXMSG_IDLE;
}
