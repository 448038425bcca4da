/*
 * txq.h - a peer's queue of send ops not yet handed to the wire.
 *
 * Every transport keeps one per peer: ops wait here, in the order the core
 * gave them, while the peer is unreachable, out of credits or out of ring
 * room, and leave from the front. The ops' own `next` links make it, so
 * queueing costs no memory; on a peer's death the whole queue goes back to
 * the core at once (xdev_core_tx_fail_all).
 */
#ifndef XDEV_KIT_TXQ_H
#define XDEV_KIT_TXQ_H

#include <stddef.h>
#include "../core/transport.h"

typedef struct xdev_txq {
    xdev_txop_t *head, *tail;
} xdev_txq_t;

static inline void xdev_txq_push(xdev_txq_t *q, xdev_txop_t *op)
{
    op->next = NULL;
    if (q->tail)
        q->tail->next = op;
    else
        q->head = op;
    q->tail = op;
}

/* Take the front op off (NULL if none). */
static inline xdev_txop_t *xdev_txq_pop(xdev_txq_t *q)
{
    xdev_txop_t *op = q->head;
    if (op) {
        q->head = op->next;
        if (!q->head)
            q->tail = NULL;
        op->next = NULL;
    }
    return op;
}

/* Empty the queue; returns its ops, still linked, in order. */
static inline xdev_txop_t *xdev_txq_take_all(xdev_txq_t *q)
{
    xdev_txop_t *list = q->head;
    q->head = q->tail = NULL;
    return list;
}

#endif
