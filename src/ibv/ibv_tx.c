/*
 * ibv_tx.c - sending: per-peer queues, fragments, inline sends, credits.
 *
 * A message that fits the device's inline limit is posted straight from
 * the core's op (head and payload as two gather entries, copied by the
 * post itself): no buffer, no copy of ours, and the op is done at once.
 * Anything else is copied into send buffers of the pool, one fragment per
 * buffer; the op is the core's again as soon as its last byte is copied.
 *
 * Every fragment costs one credit (one receive buffer at the peer) and
 * carries the credits we owe the peer in its immediate data. A peer's ops
 * leave in order, one op's fragments back to back; ops that cannot move
 * (no credit, no send buffer, a full send queue, or no connection yet)
 * wait in the peer's queue and move from the progress loop.
 */
#include <arpa/inet.h>
#include <string.h>
#include <stdio.h>
#include "ibv.h"

static size_t op_total(const xdev_txop_t *op)
{
    return op->prefix_len + op->head_len + op->payload_len;
}

static bool can_post(xdev_tp_t *tp, ibv_peer_t *p)
{
    return !p->broken && p->sq_inflight < tp->sq_depth;
}

static bool post(ibv_peer_t *p, struct ibv_send_wr *wr)
{
    struct ibv_send_wr *bad;
    int rc = ibv_post_send(p->qp, wr, &bad);
    if (rc) {
        if (ibv_debug)
            fprintf(stderr, "xdev-ibv: post_send: %s\n", strerror(rc));
        p->broken = true;
        return false;
    }
    p->sq_inflight++;
    return true;
}

/* Post a send that hands back what credits we owe in its immediate data.
 * A frame of data takes a credit; one without carries credits alone. */
static bool post_frame(ibv_peer_t *p, struct ibv_send_wr *wr, bool data)
{
    unsigned back = xdev_credits_to_return(&p->cr, IMM_CREDITS_MASK);
    wr->opcode = IBV_WR_SEND_WITH_IMM;
    wr->imm_data = htonl(back | (data ? 0 : IMM_CREDIT_ONLY));
    if (!post(p, wr))
        return false;
    xdev_credits_sent(&p->cr, back, data);
    return true;
}

/* Can op go inline, in one post from its own memory? Its head and one
 * payload buffer are two gather entries, all the QP takes: a vector's
 * pieces are copied into send buffers instead (push_fragment gathers). */
static bool inline_ok(const xdev_tp_t *tp, const xdev_txop_t *op)
{
    return op_total(op) <= tp->max_inline && !op->payload_niov;
}

/* Post the whole op inline. */
static bool push_inline(ibv_peer_t *p, int peer, xdev_txop_t *op)
{
    struct ibv_sge sge[2] = {
        { .addr = (uintptr_t)(op->wire + XDEV_TP_PREFIX_MAX - op->prefix_len),
          .length = op->prefix_len + op->head_len },
        { .addr = (uintptr_t)op->payload, .length = (uint32_t)op->payload_len },
    };
    struct ibv_send_wr wr = {
        .wr_id = wr_id_make(WR_SEND_INLINE, (unsigned)peer, 0),
        .sg_list = sge,
        .num_sge = op->payload_len ? 2 : 1,
        .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
    };
    if (!post_frame(p, &wr, true))
        return false;
    op->sent = op_total(op);
    return true;
}

/* Copy the op's next fragment into a send buffer and post it. */
static bool push_fragment(xdev_tp_t *tp, ibv_peer_t *p, int peer, xdev_txop_t *op)
{
    uint32_t idx = tp->tx_free - 1;
    uint8_t *b = (uint8_t *)tp->pool + (size_t)idx * tp->buf_bytes;
    size_t framing = op->prefix_len + op->head_len, len = 0;
    if (op->sent < framing) {
        len = framing - op->sent;
        memcpy(b, op->wire + XDEV_TP_PREFIX_MAX - op->prefix_len + op->sent, len);
    }
    size_t done = op->sent > framing ? op->sent - framing : 0;
    size_t n = op->payload_len - done;
    if (n > tp->buf_bytes - len)
        n = tp->buf_bytes - len;
    xdev_txop_copy(b + len, op, done, n);
    len += n;
    struct ibv_sge sge = { .addr = (uintptr_t)b, .length = (uint32_t)len, .lkey = tp->pool_mr->lkey };
    struct ibv_send_wr wr = {
        .wr_id = wr_id_make(WR_SEND_BUF, (unsigned)peer, idx),
        .sg_list = &sge,
        .num_sge = 1,
        .send_flags = IBV_SEND_SIGNALED,
    };
    if (len <= tp->max_inline)
        wr.send_flags |= IBV_SEND_INLINE;
    tp->tx_free = tp->bufs[idx].next;
    if (!post_frame(p, &wr, true)) {
        tp->bufs[idx].next = tp->tx_free;
        tp->tx_free = idx + 1;
        return false;
    }
    op->sent += len;
    return true;
}

/* Move as much of op as credits, buffers and the send queue allow; true
 * once all of it is posted. */
static bool push(xdev_tp_t *tp, ibv_peer_t *p, int peer, xdev_txop_t *op)
{
    while (op->sent < op_total(op)) {
        if (p->cr.avail <= 0 || !can_post(tp, p))
            return false;
        if (op->sent == 0 && inline_ok(tp, op)) {
            if (!push_inline(p, peer, op))
                return false;
        } else if (!tp->tx_free || !push_fragment(tp, p, peer, op)) {
            return false;
        }
    }
    return true;
}

static bool sendable(const ibv_peer_t *p)
{
    return p->state == PEER_UP && p->remote_ready;
}

void ibv_tx_kick(xdev_tp_t *tp, ibv_peer_t *p)
{
    if (p->in_txlist || !sendable(p) || (!p->txq.head && !ibv_rma_pending(p)))
        return;
    p->in_txlist = true;
    p->tx_next = tp->txlist;
    tp->txlist = p;
}

static void prepare(xdev_txop_t *op)
{
    op->prefix_len = IBV_PREFIX;
    op->sent = 0;
    op->next = NULL;
    xdev_put_le64(op->wire + XDEV_TP_PREFIX_MAX - IBV_PREFIX, op->head_len + op->payload_len);
}

/* A peer we send to is one we want: only then does a keepalive tell us
 * of its death when no pidfd can (ibv_keepalive). A connection that the
 * peer asked for is up before our first send to it, so the send itself
 * must say so; ibv_want_peer does nothing more for a connected peer. */
static void want(xdev_tp_t *tp, ibv_peer_t *p, int peer)
{
    if (!p->wanted)
        ibv_want_peer(tp, peer);
}

/* The short tier: the whole op in one post (inline, or one send buffer)
 * now, or nothing. */
static int send_now(xdev_tp_t *tp, ibv_peer_t *p, int peer, xdev_txop_t *op)
{
    if (p->txq.head || !sendable(p) || p->cr.avail <= 0 || !can_post(tp, p))
        return 0;
    if (inline_ok(tp, op))
        return push_inline(p, peer, op);
    if (op_total(op) <= tp->buf_bytes && tp->tx_free)
        return push_fragment(tp, p, peer, op);
    return 0;
}

int ibv_send(xdev_tp_t *tp, int peer, xdev_txop_t *op, int how)
{
    ibv_peer_t *p = &tp->peers[peer];
    if (p->state == PEER_DEAD)
        return XDEV_ERR_PEER;
    want(tp, p, peer);
    prepare(op);
    if (how == XDEV_TX_NOW)
        return send_now(tp, p, peer, op);
    if (!p->txq.head && sendable(p) && push(tp, p, peer, op))
        return 1;
    xdev_txq_push(&p->txq, op);
    ibv_tx_kick(tp, p);
    return 0;
}

/* Move one peer's queue; finished ops go back to the core only once the
 * queue is consistent, as the core may queue more from tx_done. */
static void run_peer(xdev_tp_t *tp, ibv_peer_t *p)
{
    int peer = (int)(p - tp->peers);
    if (sendable(p))
        ibv_rma_run(tp, p);
    while (p->txq.head && sendable(p) && push(tp, p, peer, p->txq.head))
        xdev_core_tx_done(tp->dev, xdev_txq_pop(&p->txq), XDEV_OK);
    if (p->broken && p->state != PEER_DEAD)
        ibv_peer_fail(tp, peer);
}

void ibv_tx_run(xdev_tp_t *tp)
{
    ibv_peer_t *list = tp->txlist;
    tp->txlist = NULL;
    while (list) {
        ibv_peer_t *p = list;
        list = p->tx_next;
        p->in_txlist = false;
        run_peer(tp, p);
        ibv_tx_kick(tp, p); /* still has work: stay listed */
        ibv_tx_grant(tp, p);
    }
}

/* Grant owed credits in a message of their own when the peer may be
 * running low and no send of ours is about to carry them. The SRQ has
 * room for GRANT_SLACK such messages per peer beyond the credits. */
void ibv_tx_grant(xdev_tp_t *tp, ibv_peer_t *p)
{
    if (!xdev_credits_due(&p->cr, tp->credits) || !sendable(p) || !can_post(tp, p))
        return;
    if (p->txq.head && p->cr.avail > 0)
        return; /* the next fragment carries them */
    ibv_tx_credit_msg(tp, p);
}

/* A message of no payload carrying what credits we owe. The receiver
 * reposts its buffer at once and owes nothing for it. */
void ibv_tx_credit_msg(xdev_tp_t *tp, ibv_peer_t *p)
{
    if (!sendable(p) || !can_post(tp, p))
        return;
    struct ibv_send_wr wr = {
        .wr_id = wr_id_make(WR_SEND_INLINE, (unsigned)(p - tp->peers), 0),
        .num_sge = 0,
        .send_flags = IBV_SEND_SIGNALED,
    };
    post_frame(p, &wr, false);
}

/* An RDMA write into the peer's keepalive slot: it uses no receive buffer
 * of the peer's, however long the peer does not look, and completes in
 * error once retries to a QP that is gone run out. */
void ibv_tx_keepalive(xdev_tp_t *tp, ibv_peer_t *p)
{
    if (!sendable(p) || !can_post(tp, p) || !p->ka_rkey)
        return;
    uint64_t beat = 1;
    struct ibv_sge sge = { .addr = (uintptr_t)&beat, .length = sizeof beat };
    struct ibv_send_wr wr = {
        .wr_id = wr_id_make(WR_SEND_INLINE, (unsigned)(p - tp->peers), 0),
        .sg_list = &sge,
        .num_sge = 1,
        .opcode = IBV_WR_RDMA_WRITE,
        .send_flags = IBV_SEND_SIGNALED | (sizeof beat <= tp->max_inline ? IBV_SEND_INLINE : 0),
        .wr.rdma = { .remote_addr = p->ka_addr, .rkey = p->ka_rkey },
    };
    if (!(wr.send_flags & IBV_SEND_INLINE))
        return; /* (every device inlines 8 bytes; no registered buffer here) */
    post(p, &wr);
}

void ibv_tx_completion(xdev_tp_t *tp, struct ibv_wc *wc)
{
    int peer = wr_peer_of(wc->wr_id);
    ibv_peer_t *p = &tp->peers[peer];
    if (wr_kind_of(wc->wr_id) == WR_SEND_BUF) {
        uint32_t idx = wr_value_of(wc->wr_id);
        tp->bufs[idx].next = tp->tx_free;
        tp->tx_free = idx + 1;
    }
    p->sq_inflight--;
    if (wc->status != IBV_WC_SUCCESS && p->state != PEER_DEAD)
        IBV_TRACE(tp, "peer %d: send completion %s", peer, ibv_wc_status_str(wc->status));
    if (wc->status != IBV_WC_SUCCESS)
        ibv_peer_fail(tp, peer);
    else
        ibv_tx_kick(tp, p);
}

/* Hand back every op queued for peer as failed. */
void ibv_fail_queue(xdev_tp_t *tp, int peer)
{
    xdev_core_tx_fail_all(tp->dev, xdev_txq_take_all(&tp->peers[peer].txq));
}

/* Nothing queued and nothing unacknowledged on any live connection. */
bool ibv_tx_idle(xdev_tp_t *tp)
{
    for (int i = 0; i < tp->size; i++) {
        ibv_peer_t *p = &tp->peers[i];
        if (p->state != PEER_DEAD && (p->txq.head || p->sq_inflight || p->rma_head))
            return false;
    }
    return true;
}
