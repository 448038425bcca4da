/*
 * loop.c - the loopback transport: a job of one whose messages to itself
 * go through the whole protocol (eager, rendezvous, synchronous sends,
 * deferral, truncation) instead of the core's shortcut for them.
 *
 * It is built only into the unit tests (test/unit/test_loop.c), which
 * register it with xdev_transport_add, and it is the smallest complete
 * transport: it fills the ops table and uses the kit, nothing else. A
 * sent op waits in a queue; progress hands the ops over in order, each in
 * the core's two steps, and stops at one the core defers until resume
 * gives it a place.
 */
#include <stdlib.h>
#include "../core/transport.h"
#include "../kit/txq.h"

struct xdev_tp {
    xdev_t *dev;
    int rank;
    size_t eager_limit;
    bool greeted;          /* the core knows our eager limit */
    xdev_txq_t queue;      /* sent, not yet handed to the core */
    xdev_txop_t *arriving; /* handed over, its payload not yet placed */
    xdev_rx_t rx;          /* arriving's */
    enum { IDLE, DEFERRED, RESUMED } state;
};

static int loop_open(xdev_t *dev, const xdev_tp_params_t *p, xdev_tp_t **out)
{
    for (int r = 0; r < p->size; r++)
        if (p->serve[r] && r != p->rank)
            return XDEV_ERR_INIT; /* no other rank lives in this process */
    xdev_tp_t *tp = calloc(1, sizeof *tp);
    if (!tp)
        return XDEV_ERR_NOMEM;
    tp->dev = dev;
    tp->rank = p->rank;
    tp->eager_limit = p->eager_limit;
    *out = tp;
    return XDEV_OK;
}

static int loop_send(xdev_tp_t *tp, int peer, xdev_txop_t *op, int how)
{
    (void)peer;
    if (how == XDEV_TX_NOW) /* no short tier */
        return 0;
    xdev_txq_push(&tp->queue, op);
    return 0;
}

/* Copy the payload where the core said, piece by piece for a vector. */
static void place(const xdev_rx_t *rx, const xdev_txop_t *op)
{
    if (!op->payload_niov) {
        xdev_rx_place(rx, 0, op->payload, op->payload_len);
        return;
    }
    size_t off = 0;
    for (unsigned i = 0; i < op->payload_niov; i++) {
        xdev_rx_place(rx, off, op->payload_iov[i].base, op->payload_iov[i].len);
        off += op->payload_iov[i].len;
    }
}

static void finish(xdev_tp_t *tp)
{
    xdev_txop_t *op = tp->arriving;
    place(&tp->rx, op);
    tp->arriving = NULL;
    tp->state = IDLE;
    xdev_core_rx_end(tp->dev, &tp->rx);
    xdev_core_tx_done(tp->dev, op, XDEV_OK);
}

/* Nothing arrives from outside: the device's own sends are all there is,
 * so there is never anything to wait for. */
static void loop_progress(xdev_tp_t *tp, bool woke)
{
    (void)woke;
    if (!tp->greeted) { /* the handshake a peer's transport would make */
        tp->greeted = true;
        xdev_core_peer_eager_limit(tp->dev, tp->rank, tp->eager_limit);
    }
    if (tp->state == RESUMED)
        finish(tp);
    while (tp->state == IDLE && tp->queue.head) {
        xdev_txop_t *op = xdev_txq_pop(&tp->queue);
        long head = xdev_wire_decode_head(xdev_txop_head(op), op->head_len, &tp->rx.head);
        tp->rx.len = op->payload_len;
        tp->rx.payload = op->payload_niov ? NULL : op->payload;
        tp->arriving = op;
        int rc = head > 0 ? xdev_core_rx_begin(tp->dev, tp->rank, tp, &tp->rx) : -1;
        if (rc < 0 || rc == XDEV_RX_DONE) { /* < 0: the core refused what it wrote itself */
            tp->arriving = NULL;
            xdev_core_tx_done(tp->dev, op, rc < 0 ? XDEV_ERR_PEER : XDEV_OK);
        } else if (rc == XDEV_RX_DEFER) {
            tp->state = DEFERRED;
        } else {
            finish(tp);
        }
    }
}

static int loop_wait_fd(xdev_tp_t *tp)
{
    (void)tp;
    return -1;
}

static int loop_arm(xdev_tp_t *tp)
{
    bool work = tp->state == RESUMED || (tp->state == IDLE && tp->queue.head);
    return work ? XDEV_ERR_BUSY : XDEV_OK;
}

static void loop_resume(xdev_tp_t *tp, void *token, const xdev_rx_t *to)
{
    (void)token;
    xdev_rx_set_dst(&tp->rx, to);
    tp->state = RESUMED; /* placed by the next progress: no callback from here */
}

static void loop_watch(xdev_tp_t *tp, int peer)
{
    (void)tp, (void)peer; /* a rank notices its own death */
}

static int loop_shutdown(xdev_tp_t *tp)
{
    return !tp->queue.head && !tp->arriving;
}

static void loop_close(xdev_tp_t *tp)
{
    free(tp);
}

const xdev_tp_ops_t xdev_loop_ops = {
    .name = "loop",
    .carries_self = true,
    .open = loop_open,
    .send = loop_send,
    .progress = loop_progress,
    .wait_fd = loop_wait_fd,
    .arm = loop_arm,
    .resume = loop_resume,
    .watch = loop_watch,
    .shutdown = loop_shutdown,
    .close = loop_close,
};
