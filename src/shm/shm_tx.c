/*
 * shm_tx.c - sending: each peer has a FIFO of ops that did not fit into
 * its ring at once. A send with an empty queue copies straight into the
 * ring and is done before it returns; anything else waits its turn, so a
 * later message never overtakes an earlier one, and is finished by
 * shm_flush from progress.
 */
#include "shm.h"

static void enqueue(shm_peer_t *p, xdev_txop_t *op)
{
    if (p->txq_tail)
        p->txq_tail->next = op;
    else
        p->txq_head = op;
    p->txq_tail = op;
}

/* The peer has begun reading our ring (see shm.h). */
static bool proven(shm_peer_t *p)
{
    if (!p->proven && atomic_load_explicit(&p->tx.ctl->seen, memory_order_acquire) != 0)
        p->proven = true;
    return p->proven;
}

int shm_send(xdev_tp_t *tp, int peer, xdev_txop_t *op)
{
    shm_peer_t *p = tp->by_rank[peer];
    if (p->gone)
        return XDEV_ERR_PEER;
    op->next = NULL;
    op->sent = 0;
    op->prefix_len = 0;
    if (!p->txq_head) {
        bool whole = shm_ring_push(&p->tx, op);
        shm_bell_after(tp, p);
        if (whole && proven(p))
            return 1;
    }
    enqueue(p, op);
    return 0;
}

int shm_inject(xdev_tp_t *tp, int peer, xdev_txop_t *op)
{
    shm_peer_t *p = tp->by_rank[peer];
    if (p->gone)
        return XDEV_ERR_PEER;
    if (p->txq_head || !proven(p))
        return 0;
    op->sent = 0;
    op->prefix_len = 0;
    if (!shm_ring_push_whole(&p->tx, op))
        return 0;
    shm_bell_after(tp, p);
    return 1;
}

/* Push what the ring takes, then hand back the ops that are in, only once
 * the queue is consistent again: the core may send from inside tx_done. */
void shm_flush(xdev_tp_t *tp, shm_peer_t *p)
{
    xdev_txop_t *done = NULL, **done_tail = &done;
    while (p->txq_head && shm_ring_push(&p->tx, p->txq_head) && proven(p)) {
        xdev_txop_t *op = p->txq_head;
        p->txq_head = op->next;
        op->next = NULL;
        *done_tail = op;
        done_tail = &op->next;
    }
    if (!p->txq_head)
        p->txq_tail = NULL;
    shm_bell_after(tp, p);
    while (done) {
        xdev_txop_t *op = done;
        done = op->next;
        xdev_core_tx_done(tp->dev, op, XDEV_OK);
    }
}

/* Hand back every op queued for p as failed. */
void shm_fail_queue(xdev_tp_t *tp, shm_peer_t *p)
{
    xdev_txop_t *op = p->txq_head;
    p->txq_head = p->txq_tail = NULL;
    xdev_core_tx_fail_all(tp->dev, op);
}

/* p has just been found gone. An op that is all in its ring and that p
 * has shown it reads (held only for that proof) was delivered; the rest
 * never will be. */
void shm_tx_gone(xdev_tp_t *tp, shm_peer_t *p)
{
    xdev_txop_t *op = p->txq_head;
    if (op && op->sent == (size_t)op->head_len + op->payload_len && proven(p)) {
        p->txq_head = op->next;
        if (!p->txq_head)
            p->txq_tail = NULL;
        xdev_core_tx_done(tp->dev, op, XDEV_OK);
    }
    shm_fail_queue(tp, p);
}
