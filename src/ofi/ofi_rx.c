/*
 * ofi_rx.c - receiving: the pool of posted buffers, frames put back into
 * messages, and messages the core defers.
 *
 * Every data frame goes to its sender's backlog and is handed on from
 * there in order: a WHOLE or FIRST frame's head to xdev_core_rx_begin,
 * its payload (and that of the MORE frames after it) copied to where the
 * core says, each buffer reposted as soon as it is copied out. When the
 * core defers a message, its first frame stays at the backlog head, and
 * what the peer sends meanwhile stays in its buffers behind it; the peer
 * runs out of credits and waits. ofi_resume only notes the place; the
 * copying happens in the next progress call.
 *
 * A frame the peer could not have sent correctly (far out of sequence, a MORE
 * where a message starts or the reverse, a bad head, more payload than
 * announced, credits it was never given) fails the peer, and so does a
 * frame that never comes (a provider lost it), once later ones have waited
 * for it for a peer timeout (ofi_timers); the peer is told (ofi_peer_reject).
 * A frame naming no rank we serve is dropped: there is nobody to blame.
 */
#include <stdlib.h>
#include <string.h>
#include "ofi.h"

static void post(xdev_tp_t *tp, ofi_rxbuf_t *b)
{
    b->posted = fi_recv(tp->ep, b->data, OFI_BUF_BYTES, tp->rx_desc, FI_ADDR_UNSPEC, b) == 0;
    if (!b->posted) {
        b->next = tp->unposted;
        tp->unposted = b;
    }
}

/*
 * The provider failed a posted receive: a frame too long for a buffer
 * (nobody we serve sends one), or, with tcp;ofi_rxm, a receive it had
 * matched to a frame of a peer whose connection broke. tcp;ofi_rxm can
 * report such a receive failed twice, the second time after we could have
 * posted the buffer again: put back, it would then be posted twice, and
 * two frames of live peers would land in one buffer (seen as frames out of
 * sequence and corrupted messages from live peers when a third rank died).
 * So a failed buffer is never posted again, and a report for a buffer the
 * provider does not hold is ignored. The pool has a buffer for every
 * credit; a frame that finds none waits in the provider, and a job loses a
 * few buffers only when peers die.
 */
void ofi_rx_failed(xdev_tp_t *tp, ofi_rxbuf_t *b)
{
    if (!b->posted)
        return;
    b->posted = false;
    tp->retired++;
    ofi_say("rank %d: receive buffer %zu retired after an error (%zu so far)", tp->rank,
            (size_t)(b - tp->rxbufs), tp->retired);
}

void ofi_rx_repost_all(xdev_tp_t *tp)
{
    ofi_rxbuf_t *b = tp->unposted;
    tp->unposted = NULL;
    while (b) {
        ofi_rxbuf_t *next = b->next;
        post(tp, b);
        b = next;
    }
}

int ofi_rx_pool_open(xdev_tp_t *tp)
{
    tp->rxbufs = calloc(tp->nrxbufs, sizeof *tp->rxbufs);
    if (!tp->rxbufs)
        return XDEV_ERR_NOMEM;
    if ((tp->mr_mode & FI_MR_LOCAL) &&
        ofi_mr_local(tp, tp->rxbufs, tp->nrxbufs * sizeof *tp->rxbufs, FI_RECV, &tp->rx_mr) != XDEV_OK)
        return XDEV_ERR_INIT;
    tp->rx_desc = ofi_mr_desc(tp->rx_mr);
    for (size_t i = 0; i < tp->nrxbufs; i++)
        post(tp, &tp->rxbufs[i]);
    return tp->unposted ? XDEV_ERR_INIT : XDEV_OK;
}

void ofi_rx_pool_close(xdev_tp_t *tp)
{
    free(tp->rxbufs);
}

/* Credits we owe p go back in a CREDIT frame once half of them are owed
 * (sooner, they ride on our next frame to it). */
void ofi_rx_owe_credits(xdev_tp_t *tp, ofi_peer_t *p)
{
    if (xdev_credits_due(&p->cr, tp->credits) && !p->failed && !ofi_send_ctrl(tp, p, K_CREDIT))
        ofi_service_later(tp, p);
}

static void release(xdev_tp_t *tp, ofi_peer_t *p, ofi_rxbuf_t *b, bool owe)
{
    post(tp, b);
    if (owe) {
        p->cr.owed++;
        ofi_rx_owe_credits(tp, p);
    }
}

static ofi_rxbuf_t *pop(ofi_peer_t *p)
{
    ofi_rxbuf_t *b = p->backlog_head;
    p->backlog_head = b->next;
    if (!p->backlog_head)
        p->backlog_tail = NULL;
    return b;
}

/* The backlog head's payload from `off` on belongs to the current message. */
static bool take_payload(xdev_tp_t *tp, ofi_peer_t *p, size_t off)
{
    ofi_rxbuf_t *b = p->backlog_head;
    if (!xdev_rxmsg_place(&p->in, b->data + off, b->len - off)) {
        ofi_peer_reject(tp, p);
        return false;
    }
    release(tp, p, pop(p), true);
    xdev_rxmsg_placed(tp->dev, &p->in);
    return true;
}

/* A WHOLE or FIRST frame at the backlog head: ask the core where its
 * payload goes. False when the backlog is not to be read further now. */
static bool start_message(xdev_tp_t *tp, ofi_peer_t *p)
{
    ofi_rxbuf_t *b = p->backlog_head;
    uint8_t kind = b->data[0];
    size_t hdr = kind == K_FIRST ? OFI_FIRST_HDR : OFI_HDR;
    xdev_rx_t *rx = &p->in.rx;
    /* A buffer holds a whole head: one cut short is as broken as a bad one. */
    long head = (kind == K_WHOLE || kind == K_FIRST) && b->len >= hdr
                    ? xdev_wire_decode_head(b->data + hdr, b->len - hdr, &rx->head)
                    : -1;
    if (head <= 0) {
        ofi_peer_reject(tp, p);
        return false;
    }
    size_t head_len = (size_t)head;
    size_t here = b->len - hdr - head_len;
    uint64_t len = kind == K_FIRST ? xdev_get_le64(b->data + OFI_HDR) : here;
    if (here > len || (kind == K_FIRST && len > SIZE_MAX)) {
        ofi_peer_reject(tp, p);
        return false;
    }
    rx->len = (size_t)len;
    p->rx_off = hdr + head_len;
    rx->payload = kind == K_WHOLE ? b->data + p->rx_off : NULL;
    int rc = xdev_rxmsg_begin(tp->dev, p->rank, p, &p->in);
    if (rc < 0) {
        ofi_peer_reject(tp, p);
        return false;
    }
    if (rc == XDEV_RX_DEFER)
        return false;
    if (rc == XDEV_RX_DONE) { /* the core took the whole frame */
        release(tp, p, pop(p), true);
        return true;
    }
    return take_payload(tp, p, p->rx_off);
}

void ofi_rx_drain(xdev_tp_t *tp, ofi_peer_t *p)
{
    /* Bounded, so one busy peer cannot starve the others. */
    for (int n = 0; n < 64; n++) {
        if (!p->backlog_head || p->failed)
            return;
        bool go_on;
        switch (p->in.state) {
        case XDEV_RXMSG_DEFERRED:
            return;
        case XDEV_RXMSG_RESUMED:
            go_on = take_payload(tp, p, p->rx_off);
            break;
        case XDEV_RXMSG_PAYLOAD:
            if (p->backlog_head->data[0] != K_MORE) {
                ofi_peer_reject(tp, p);
                return;
            }
            go_on = take_payload(tp, p, OFI_HDR);
            break;
        default:
            go_on = start_message(tp, p);
            break;
        }
        if (!go_on)
            return;
    }
    ofi_service_later(tp, p);
}

/* The next frame of p in sequence. */
static void in_sequence(xdev_tp_t *tp, ofi_peer_t *p, ofi_rxbuf_t *b)
{
    uint8_t kind = b->data[0];
    unsigned credits = b->data[2] | (unsigned)b->data[3] << 8;
    if (kind < K_WHOLE || kind > K_BYE || !xdev_credits_returned(&p->cr, credits, tp->credits) ||
        ofi_resolve(tp, p, true) != 1) {
        post(tp, b);
        ofi_peer_reject(tp, p);
        return;
    }
    p->rx_seq++;
    p->active = true;
    p->last_heard_ms = tp->now_ms;
    if (!p->announced) {
        p->announced = true;
        xdev_core_peer_eager_limit(tp->dev, p->rank, p->eager_limit);
    }
    if (credits)
        ofi_tx_flush(tp, p);
    switch (kind) {
    case K_CREDIT:
        post(tp, b);
        return;
    case K_BYE:
        p->bye_rx = true;
        post(tp, b);
        return;
    case K_PING:
        release(tp, p, b, true);
        return;
    }
    if (p->backlog_tail)
        p->backlog_tail->next = b;
    else
        p->backlog_head = b;
    p->backlog_tail = b;
    ofi_rx_drain(tp, p);
}

/* A receive completed into b. Frames are matched to buffers in the order
 * they were sent, but a provider may complete a large one (its own
 * rendezvous) after a small one behind it: early frames wait in `early`
 * until the sequence reaches them. */
void ofi_rx_arrived(xdev_tp_t *tp, ofi_rxbuf_t *b, size_t len)
{
    if (!b->posted)
        return; /* see ofi_rx_failed */
    b->posted = false;
    b->len = len;
    b->next = NULL;
    uint32_t src = len >= OFI_HDR ? xdev_get_le32(b->data + 4) : UINT32_MAX;
    if (src >= (uint32_t)tp->size || !tp->serve[src]) {
        post(tp, b); /* nobody we know sent it */
        return;
    }
    ofi_peer_t *p = &tp->peers[src];
    if (b->data[0] == K_GONE) {
        post(tp, b);
        ofi_peer_fail(tp, p);
        return;
    }
    if (p->failed) {
        post(tp, b);
        ofi_tell_gone(tp, p);
        return;
    }
    uint8_t ahead = (uint8_t)(b->data[1] - p->rx_seq);
    if (ahead) {
        if (ahead >= OFI_EARLY_MAX || p->early[ahead]) {
            post(tp, b);
            ofi_peer_reject(tp, p);
            return;
        }
        p->early[ahead] = b;
        if (!p->nearly++)
            p->gap_ms = tp->now_ms;
        return;
    }
    in_sequence(tp, p, b);
    while (p->nearly && !p->failed) {
        /* the sequence moved on by one: so do the early slots */
        memmove(p->early, p->early + 1, (OFI_EARLY_MAX - 1) * sizeof p->early[0]);
        p->early[OFI_EARLY_MAX - 1] = NULL;
        if (!(b = p->early[0]))
            break;
        p->early[0] = NULL;
        p->nearly--;
        in_sequence(tp, p, b);
    }
    p->gap_ms = tp->now_ms; /* what still waits early, waits from now */
}

/* p failed: what it sent and we did not hand on is lost with it. */
void ofi_rx_drop(xdev_tp_t *tp, ofi_peer_t *p)
{
    while (p->backlog_head)
        post(tp, pop(p));
    for (int i = 0; i < OFI_EARLY_MAX; i++) {
        if (p->early[i])
            post(tp, p->early[i]);
        p->early[i] = NULL;
    }
    p->nearly = 0;
    p->in.state = XDEV_RXMSG_IDLE;
}

void ofi_resume(xdev_tp_t *tp, void *token, const xdev_rx_t *to)
{
    ofi_peer_t *p = token;
    if (!p->failed && xdev_rxmsg_resume(&p->in, to))
        ofi_service_later(tp, p);
}
