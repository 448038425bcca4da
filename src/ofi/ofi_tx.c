/*
 * ofi_tx.c - sending: per-peer queues, fragments, credits, control frames.
 *
 * A send to an idle peer that fits the provider's inject size leaves at
 * once with fi_inject and is done before ofi_send returns. Anything else
 * is queued; the peer's messages are cut into frames of at most
 * tp->frame_max (one receive buffer, or the shm provider's inject size:
 * frame_limit in ofi_fabric.c), each posted with fi_sendv straight from the
 * caller's payload (a two-entry iov: frame header and head from the
 * context, then the payload slice), as long as the peer has credits.
 * A message is handed back once every frame's completion is in.
 *
 * Control frames: CREDIT (injected, no completion needed), PING and BYE
 * (posted with a context: their completion is the point).
 */
#include <stdlib.h>
#include <string.h>
#include "ofi.h"
#include "../kit/dlist.h"

#define INJECT_BUF 4096

ofi_ctx_t *ofi_ctx_get(xdev_tp_t *tp)
{
    ofi_ctx_t *c = tp->free_ctx;
    if (c)
        tp->free_ctx = c->next_free;
    return c;
}

void ofi_ctx_put(xdev_tp_t *tp, ofi_ctx_t *c)
{
    c->next_free = tp->free_ctx;
    tp->free_ctx = c;
}

void *ofi_mr_desc(struct fid_mr *mr)
{
    return mr ? fi_mr_desc(mr) : NULL;
}

void *ofi_reg_desc(const xdev_reg_t *reg)
{
    return reg ? (void *)(uintptr_t)reg->lkey : NULL;
}

ofi_msg_t *ofi_msg_new(xdev_tp_t *tp, ofi_peer_t *p)
{
    (void)tp;
    ofi_msg_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->peer = p->rank;
    XDEV_DLIST_PUSH(p->inflight, m, prev, next);
    return m;
}

void ofi_msg_free(xdev_tp_t *tp, ofi_peer_t *p, ofi_msg_t *m)
{
    XDEV_DLIST_UNLINK_HEAD(p->inflight, m, prev, next);
    xdev_regcache_put(tp->regcache, m->reg);
    for (unsigned i = 0; m->piece_regs && i < m->op_niov; i++)
        xdev_regcache_put(tp->regcache, m->piece_regs[i]);
    free(m->piece_regs);
    free(m);
}

/* Register what the provider needs registered (FI_MR_LOCAL) of op's
 * payload: the buffer, or each piece of a vector. */
static bool register_payload(xdev_tp_t *tp, ofi_msg_t *m, const xdev_txop_t *op)
{
    if (!(tp->mr_mode & FI_MR_LOCAL) || !op->payload_len)
        return true;
    if (!op->payload_niov)
        return xdev_regcache_get(tp->regcache, (void *)op->payload, op->payload_len, &m->reg) ==
               XDEV_OK;
    m->piece_regs = calloc(op->payload_niov, sizeof *m->piece_regs);
    if (!m->piece_regs)
        return false;
    m->op_niov = op->payload_niov;
    for (unsigned i = 0; i < op->payload_niov; i++)
        if (op->payload_iov[i].len &&
            xdev_regcache_get(tp->regcache, op->payload_iov[i].base, op->payload_iov[i].len,
                              &m->piece_regs[i]) != XDEV_OK)
            return false; /* ofi_msg_free puts back what was taken */
    return true;
}

/* Frame header for the next frame to p; the credits it returns count as
 * returned only once the frame is posted (commit). */
static unsigned put_hdr(xdev_tp_t *tp, ofi_peer_t *p, uint8_t *b, uint8_t kind)
{
    unsigned n = xdev_credits_to_return(&p->cr, 0xffff);
    b[0] = kind;
    b[1] = p->tx_seq;
    b[2] = (uint8_t)n;
    b[3] = (uint8_t)(n >> 8);
    xdev_put_le32(b + 4, (uint32_t)tp->rank);
    return n;
}

static void commit(ofi_peer_t *p, unsigned credits_returned, bool takes_credit)
{
    p->tx_seq++;
    xdev_credits_sent(&p->cr, credits_returned, takes_credit);
}

/* Small message to an idle peer: one injected frame, done at once. */
static int try_inject(xdev_tp_t *tp, ofi_peer_t *p, xdev_txop_t *op)
{
    size_t total = OFI_HDR + op->head_len + op->payload_len;
    if (total > tp->inject_max || total > INJECT_BUF)
        return -FI_EAGAIN;
    uint8_t b[INJECT_BUF];
    unsigned n = put_hdr(tp, p, b, K_WHOLE);
    memcpy(b + OFI_HDR, xdev_txop_head(op), op->head_len);
    xdev_txop_copy(b + OFI_HDR + op->head_len, op, 0, op->payload_len);
    int rc = (int)fi_inject(tp->ep, b, total, p->addr);
    if (rc == 0)
        commit(p, n, true);
    return rc;
}

/* Post the next frame of m (its op's message). */
static int post_frame(xdev_tp_t *tp, ofi_peer_t *p, ofi_msg_t *m)
{
    xdev_txop_t *op = m->op;
    ofi_ctx_t *c = ofi_ctx_get(tp);
    if (!c)
        return -FI_EAGAIN;
    /* The run of the caller's memory this frame carries. A vector's frames
     * end where its pieces do: each is still a frame header and one run,
     * no copy. */
    size_t left = op->payload_len - m->posted;
    void *at = (char *)op->payload + m->posted;
    xdev_reg_t *reg = m->reg;
    if (op->payload_niov && left) {
        unsigned piece;
        size_t span = xdev_iov_span(op->payload_iov, op->payload_niov, m->posted, &at, &piece);
        left = left < span ? left : span;
        reg = m->piece_regs ? m->piece_regs[piece] : NULL;
    }
    size_t blen, n;
    unsigned credits;
    if (!m->started) {
        bool whole = left == op->payload_len && OFI_HDR + op->head_len + left <= tp->frame_max;
        size_t hdr = whole ? OFI_HDR : OFI_FIRST_HDR;
        credits = put_hdr(tp, p, c->bytes, whole ? K_WHOLE : K_FIRST);
        if (!whole)
            xdev_put_le64(c->bytes + OFI_HDR, op->payload_len);
        memcpy(c->bytes + hdr, xdev_txop_head(op), op->head_len);
        blen = hdr + op->head_len;
        n = tp->frame_max - blen;
    } else {
        credits = put_hdr(tp, p, c->bytes, K_MORE);
        blen = OFI_HDR;
        n = tp->frame_max - OFI_HDR;
    }
    if (n > left)
        n = left;
    struct iovec iov[2] = {
        { .iov_base = c->bytes, .iov_len = blen },
        { .iov_base = at, .iov_len = n },
    };
    void *desc[2] = { tp->ctx_desc, ofi_reg_desc(reg) };
    c->msg = m;
    c->peer = p->rank;
    c->kind = 0;
    int rc = (int)fi_sendv(tp->ep, iov, desc, n ? 2 : 1, p->addr, c);
    if (rc != 0) {
        ofi_ctx_put(tp, c);
        return rc;
    }
    commit(p, credits, true);
    m->started = true;
    m->pending++;
    m->posted += n;
    m->all_posted = m->posted == op->payload_len;
    return 0;
}

/* Start the message of the next queued op. */
static bool start_next(xdev_tp_t *tp, ofi_peer_t *p)
{
    xdev_txop_t *op = p->txq.head;
    ofi_msg_t *m = ofi_msg_new(tp, p);
    if (!m)
        return false;
    if (!register_payload(tp, m, op)) {
        ofi_msg_free(tp, p, m);
        return false;
    }
    xdev_txq_pop(&p->txq);
    m->op = op;
    p->cur = m;
    return true;
}

/* Post what credits, contexts and the provider allow. No callbacks here:
 * this runs inside ofi_send too. */
void ofi_tx_flush(xdev_tp_t *tp, ofi_peer_t *p)
{
    if (!p->resolved || p->failed || p->broken)
        return;
    while (p->cr.avail > 0) {
        if (!p->cur && (!p->txq.head || !start_next(tp, p)))
            break;
        int rc = post_frame(tp, p, p->cur);
        if (rc == -FI_EAGAIN) {
            ofi_service_later(tp, p); /* a context or the provider frees up */
            break;
        }
        if (rc != 0) {
            p->broken = true;
            ofi_service_later(tp, p);
            break;
        }
        if (p->cur->all_posted)
            p->cur = NULL;
    }
}

/* True once op left whole; false leaves it to the queue. */
static bool inject_now(xdev_tp_t *tp, ofi_peer_t *p, xdev_txop_t *op)
{
    if (!p->resolved || p->broken || p->txq.head || p->cur || p->cr.avail <= 0)
        return false;
    int rc = try_inject(tp, p, op);
    if (rc != 0 && rc != -FI_EAGAIN) {
        p->broken = true;
        ofi_service_later(tp, p);
    }
    return rc == 0;
}

static void prepare(ofi_peer_t *p, xdev_txop_t *op)
{
    op->next = NULL;
    op->sent = 0;
    op->prefix_len = 0;
    p->active = true;
}

/* The short tier is one injected frame: our frame header, an eager head
 * and the payload. */
size_t ofi_short_max(xdev_tp_t *tp)
{
    size_t frame = tp->inject_max < INJECT_BUF ? tp->inject_max : INJECT_BUF;
    size_t framing = OFI_HDR + xdev_wire_head_len(XDEV_MSG_EAGER);
    return frame > framing ? frame - framing : 0;
}

int ofi_send(xdev_tp_t *tp, int peer, xdev_txop_t *op, int how)
{
    ofi_peer_t *p = &tp->peers[peer];
    if (p->failed)
        return XDEV_ERR_PEER;
    prepare(p, op);
    if (how == XDEV_TX_NOW)
        return inject_now(tp, p, op);
    if (!p->resolved) {
        int rc = ofi_resolve(tp, p, false);
        if (rc < 0) {
            p->broken = true;
            ofi_service_later(tp, p);
        } else if (rc == 0 && !p->give_up_ms) {
            p->give_up_ms = xdev_now_ms() + (uint64_t)tp->peer_timeout_ms;
        }
    }
    if (inject_now(tp, p, op))
        return 1;
    xdev_txq_push(&p->txq, op);
    ofi_tx_flush(tp, p);
    return 0;
}

/* A control frame to p. Returns true once it is posted. */
bool ofi_send_ctrl(xdev_tp_t *tp, ofi_peer_t *p, uint8_t kind)
{
    if (!p->resolved || p->failed || p->broken)
        return false;
    bool takes_credit = kind == K_PING;
    if (kind == K_CREDIT && tp->inject_max >= OFI_HDR) {
        uint8_t b[OFI_HDR];
        unsigned n = put_hdr(tp, p, b, kind);
        if (fi_inject(tp->ep, b, OFI_HDR, p->addr) != 0)
            return false;
        commit(p, n, false);
        return true;
    }
    ofi_ctx_t *c = ofi_ctx_get(tp);
    if (!c)
        return false;
    unsigned n = put_hdr(tp, p, c->bytes, kind);
    c->msg = NULL;
    c->peer = p->rank;
    c->kind = kind;
    if (fi_send(tp->ep, c->bytes, OFI_HDR, tp->ctx_desc, p->addr, c) != 0) {
        ofi_ctx_put(tp, c);
        return false;
    }
    commit(p, n, takes_credit);
    p->nctl++;
    return true;
}

/* p lives, and we failed it: it sent us a frame after we did (a rank that
 * published its address past the peer timeout), or it broke its stream
 * (ofi_peer_reject). Tell it, or it waits for ever for what we no longer
 * answer: it then fails us as we failed it. Injected, outside the sequence
 * and the credits, which a failed peer no longer has; a provider without
 * inject leaves it untold. */
void ofi_tell_gone(xdev_tp_t *tp, ofi_peer_t *p)
{
    if (p->gone_told || tp->inject_max < OFI_HDR || ofi_resolve(tp, p, false) != 1)
        return;
    uint8_t b[OFI_HDR] = { K_GONE };
    xdev_put_le32(b + 4, (uint32_t)tp->rank);
    p->gone_told = fi_inject(tp->ep, b, OFI_HDR, p->addr) == 0;
}

/* A failed peer's message, to the core with XDEV_ERR_PEER; its memory
 * stays while the provider still holds contexts of it. */
static void hand_back(xdev_tp_t *tp, ofi_peer_t *p, ofi_msg_t *m)
{
    xdev_txop_t *op = m->op;
    xdev_rmaop_t *rma = m->rma;
    m->op = NULL;
    m->rma = NULL;
    if (m->pending == 0)
        ofi_msg_free(tp, p, m);
    if (op)
        xdev_core_tx_done(tp->dev, op, XDEV_ERR_PEER);
    if (rma)
        xdev_core_rma_done(tp->dev, rma, XDEV_ERR_PEER);
}

/* The completion (or error) of something posted with a context. */
void ofi_tx_complete(xdev_tp_t *tp, ofi_ctx_t *c, bool ok)
{
    ofi_peer_t *p = &tp->peers[c->peer];
    ofi_msg_t *m = c->msg;
    uint8_t kind = c->kind;
    size_t rma_len = c->rma_len;
    ofi_ctx_put(tp, c);
    if (!m) {
        p->nctl--;
        if (kind == K_PING)
            p->ping_out = false;
        if (kind == K_BYE)
            p->bye_done = ok;
    } else {
        m->pending--;
        if (m->rma && !p->failed) {
            p->rma_bytes -= rma_len;
            if (p->rmaq_head)
                ofi_service_later(tp, p); /* room for the next (ofi_rma_flush) */
        }
    }
    if (!ok && !p->failed) {
        /* The peer is gone or going, most likely (a reset connection):
         * what it sent before may still be coming up through the provider,
         * and stays receivable, so it is failed (which hands back m's op)
         * once that has had its time (ofi_timers). */
        if (!p->send_failed) {
            p->send_failed = true;
            p->failed_ms = xdev_now_ms();
            p->failed_polls = tp->polls;
        }
        return;
    }
    if (p->failed) {
        if (m && m->pending == 0) {
            bool held = m->op || m->rma;
            hand_back(tp, p, m);
            if (held && --p->held == 0)
                ofi_peer_released(tp, p);
        }
        return;
    }
    if (ok && m && m->pending == 0 && m->all_posted) {
        xdev_txop_t *op = m->op;
        xdev_rmaop_t *rma = m->rma;
        ofi_msg_free(tp, p, m);
        if (op)
            xdev_core_tx_done(tp->dev, op, XDEV_OK);
        else
            xdev_core_rma_done(tp->dev, rma, XDEV_OK);
    }
}

/* p failed: hand back everything queued for it, and every message the
 * provider is done with. A message whose frames or reads the provider
 * still works on is held until it reports them (ofi_tx_complete), as it
 * may yet touch the caller's memory: the answer to a read from a peer that
 * has just died still lands in the receive buffer, and a provider with a
 * progress thread of its own (sockets) writes it there while the caller,
 * told the receive failed, has freed the buffer. Returns how many are
 * held. */
unsigned ofi_tx_fail_all(xdev_tp_t *tp, ofi_peer_t *p)
{
    xdev_txop_t *q = xdev_txq_take_all(&p->txq);
    p->cur = NULL;
    p->rmaq_head = p->rmaq_tail = NULL;
    p->rma_bytes = 0; /* what completes from now on has no rma to count */
    unsigned held = 0;
    ofi_msg_t *next;
    for (ofi_msg_t *m = p->inflight; m; m = next) {
        next = m->next;
        if (m->pending && (m->op || m->rma))
            held++;
        else
            hand_back(tp, p, m);
    }
    xdev_core_tx_fail_all(tp->dev, q);
    return held;
}

/* Stop waiting for the provider (closing, or it never reported): hand
 * back what it still holds; the memory goes once it completes. */
void ofi_tx_release_held(xdev_tp_t *tp, ofi_peer_t *p)
{
    ofi_msg_t *next;
    for (ofi_msg_t *m = p->inflight; m; m = next) {
        next = m->next;
        hand_back(tp, p, m);
    }
    p->held = 0;
}
