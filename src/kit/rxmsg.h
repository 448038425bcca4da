/*
 * rxmsg.h - the message a transport is placing for one peer, where
 * messages arrive in pieces (ring records, frames) and the core may make
 * one wait (shm, ofi): where it stands, how much of it is in place, and
 * the steps every such transport takes the same way.
 */
#ifndef XDEV_KIT_RXMSG_H
#define XDEV_KIT_RXMSG_H

#include <stdbool.h>
#include "../core/transport.h"

enum xdev_rxmsg_state {
    XDEV_RXMSG_IDLE,     /* between messages */
    XDEV_RXMSG_DEFERRED, /* the core has not said where the payload goes */
    XDEV_RXMSG_RESUMED,  /* it has: the first piece is still where it came */
    XDEV_RXMSG_PAYLOAD,  /* more pieces of the payload are still to come */
};

typedef struct xdev_rxmsg {
    xdev_rx_t rx;  /* head, len and payload are the transport's to fill */
    size_t got;    /* payload bytes placed */
    uint8_t state; /* enum xdev_rxmsg_state */
} xdev_rxmsg_t;

/* Hand a parsed head to the core (xdev_core_rx_begin's result). Deferred
 * until the core answers: it may resume the message before it returns. */
static inline int xdev_rxmsg_begin(xdev_t *dev, int peer, void *token, xdev_rxmsg_t *m)
{
    m->got = 0;
    m->state = XDEV_RXMSG_DEFERRED;
    int rc = xdev_core_rx_begin(dev, peer, token, &m->rx);
    if (rc == XDEV_RX_DONE)
        m->state = XDEV_RXMSG_IDLE;
    return rc;
}

/* Place the next n payload bytes; false, placing nothing, if the peer
 * sends more than it announced. */
static inline bool xdev_rxmsg_place(xdev_rxmsg_t *m, const void *src, size_t n)
{
    if (n > m->rx.len - m->got)
        return false;
    xdev_rx_place(&m->rx, m->got, src, n);
    m->got += n;
    return true;
}

/* After placing a piece: end the message with the core once all of it is
 * in, else wait for the next piece. */
static inline void xdev_rxmsg_placed(xdev_t *dev, xdev_rxmsg_t *m)
{
    if (m->got < m->rx.len) {
        m->state = XDEV_RXMSG_PAYLOAD;
        return;
    }
    m->state = XDEV_RXMSG_IDLE;
    xdev_core_rx_end(dev, &m->rx);
}

/* ops->resume: a deferred message gets its place (false if m was not
 * waiting for one); the transport places it in its next progress call. */
static inline bool xdev_rxmsg_resume(xdev_rxmsg_t *m, const xdev_rx_t *to)
{
    if (m->state != XDEV_RXMSG_DEFERRED)
        return false;
    xdev_rx_set_dst(&m->rx, to);
    m->state = XDEV_RXMSG_RESUMED;
    return true;
}

#endif
