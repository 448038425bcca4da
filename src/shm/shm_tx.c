/*
 * shm_tx.c - sending: each peer has a FIFO of ops that did not fit into
 * its ring at once. A send with an empty queue copies straight into the
 * ring and is done before it returns; anything else waits its turn, so a
 * later message never overtakes an earlier one, and is finished by
 * shm_flush from progress.
 */
#include "shm.h"

/* The peer has begun reading our ring (see shm.h). */
static bool proven(shm_peer_t *p)
{
    if (!p->proven && atomic_load_explicit(&p->tx.ctl->seen, memory_order_acquire) != 0)
        p->proven = true;
    return p->proven;
}

int shm_send(xdev_tp_t *tp, int peer, xdev_txop_t *op, int how)
{
    shm_peer_t *p = tp->by_rank[peer];
    if (p->gone)
        return XDEV_ERR_PEER;
    op->next = NULL;
    op->sent = 0;
    op->prefix_len = 0;
    if (op->payload_len >= SHM_MID_MIN)
        shm_mid_follow(tp, p, op->payload_len);
    if (how == XDEV_TX_NOW) { /* one record, or nothing */
        if (p->txq.head || !proven(p) || !shm_ring_push_whole(&p->tx, op))
            return 0;
        shm_bell_after(tp, p);
        return 1;
    }
    if (!p->txq.head) {
        bool whole = shm_ring_push(&p->tx, op);
        shm_bell_after(tp, p);
        if (whole && proven(p))
            return 1;
    }
    xdev_txq_push(&p->txq, op);
    return 0;
}

/* Push what the ring takes, then hand back the ops that are in, only once
 * the queue is consistent again: the core may send from inside tx_done. */
void shm_flush(xdev_tp_t *tp, shm_peer_t *p)
{
    xdev_txq_t done = { 0 };
    while (p->txq.head && shm_ring_push(&p->tx, p->txq.head) && proven(p))
        xdev_txq_push(&done, xdev_txq_pop(&p->txq));
    shm_bell_after(tp, p);
    for (xdev_txop_t *op; (op = xdev_txq_pop(&done));)
        xdev_core_tx_done(tp->dev, op, XDEV_OK);
}

/* Hand back every op queued for p as failed. */
void shm_fail_queue(xdev_tp_t *tp, shm_peer_t *p)
{
    xdev_core_tx_fail_all(tp->dev, xdev_txq_take_all(&p->txq));
}

/* p has just been found gone. An op that is all in its ring and that p
 * has shown it reads (held only for that proof) was delivered; the rest
 * never will be. */
void shm_tx_gone(xdev_tp_t *tp, shm_peer_t *p)
{
    xdev_txop_t *op = p->txq.head;
    if (op && op->sent == (size_t)op->head_len + op->payload_len && proven(p))
        xdev_core_tx_done(tp->dev, xdev_txq_pop(&p->txq), XDEV_OK);
    shm_fail_queue(tp, p);
}
