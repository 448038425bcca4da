/*
 * credits.h - flow control for transports whose peer keeps a fixed pool
 * of receive buffers for us (ibv's shared receive queue, ofi's posted
 * pool), where a send that finds no buffer would stall or be dropped.
 *
 * A sender may have at most `window` frames in the peer's buffers: each
 * frame takes a credit, and the receiver hands credits back as it frees
 * buffers, on its next frame to us or, once half the window is owed, in
 * a frame of their own. So a receiver whose core stops reading (it
 * defers) stops the sender instead of running the pool dry. The pool
 * holds every peer's window plus a small reserve for the frames that
 * carry credits alone, which take none.
 */
#ifndef XDEV_KIT_CREDITS_H
#define XDEV_KIT_CREDITS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct xdev_credits {
    int avail;      /* the peer's buffers we may still fill */
    unsigned owed;  /* buffers of its we freed: credits to hand back */
} xdev_credits_t;

/* Each peer's window: its share of `pool` buffers less `reserve`, within
 * [min, max]. */
static inline int xdev_credits_window(size_t pool, int npeers, int reserve, int min, int max)
{
    size_t share = pool / (size_t)npeers;
    int w = share > (size_t)max + (size_t)reserve ? max : (int)share - reserve;
    return w < min ? min : w;
}

/* The peer hands n back. More than we ever took means a broken peer
 * (whose sums would overflow): false, and nothing is taken. */
static inline bool xdev_credits_returned(xdev_credits_t *c, unsigned n, int window)
{
    if (n > (unsigned)(window - c->avail))
        return false;
    c->avail += (int)n;
    return true;
}

/* What a frame can carry back of what we owe, at most max; it counts as
 * handed back only once the frame is posted (xdev_credits_sent). */
static inline unsigned xdev_credits_to_return(const xdev_credits_t *c, unsigned max)
{
    return c->owed < max ? c->owed : max;
}

/* A frame left carrying `returned`; a data frame takes a credit. */
static inline void xdev_credits_sent(xdev_credits_t *c, unsigned returned, bool takes_credit)
{
    c->owed -= returned;
    if (takes_credit)
        c->avail--;
}

/* Enough would be owed, once `more` buffers not yet counted are (freed,
 * not yet reposted), to be worth a frame of its own. With half the
 * window at least in each, a peer has at most two such frames in flight. */
static inline bool xdev_credits_due_after(const xdev_credits_t *c, unsigned more, int window)
{
    unsigned owed = c->owed + more;
    return owed && owed * 2 >= (unsigned)window;
}

static inline bool xdev_credits_due(const xdev_credits_t *c, int window)
{
    return xdev_credits_due_after(c, 0, window);
}

#endif
