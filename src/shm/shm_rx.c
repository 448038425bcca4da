/*
 * shm_rx.c - receiving: the records of a peer's ring handed to the core.
 *
 * A start record's head goes to xdev_core_rx_begin. When the whole message
 * is in that record the core may take it from there (a plain eager one
 * straight into its posted receive); otherwise it says where the payload
 * belongs, and each record's payload is copied straight there (the first
 * dst_len bytes of the message; the rest is read and dropped) and the
 * record released at once, so a long message streams through the ring.
 * When the core defers a message, its start record stays in the ring and
 * the ring is not read until ops->resume gives the payload a place; the
 * copying then happens in the next progress call, not inside resume.
 *
 * Anything in a record that the peer could not have written (a bad
 * control word, a start record where a fragment belongs or the reverse,
 * an unknown type, more payload than announced, filler that does not end
 * the data area) fails the peer.
 */
#include <string.h>
#include "shm.h"

static void place(shm_peer_t *p, const uint8_t *src, size_t n)
{
    xdev_rx_place(&p->rxm, p->rx_got, src, n);
    p->rx_got += n;
}

/* The record at the head has been placed: release it, and hand the
 * message to the core once it is complete. */
static void placed(xdev_tp_t *tp, shm_peer_t *p, uint64_t ctrl)
{
    shm_rx_release(&p->rx, ctrl);
    if (p->rx_got < p->rxm.len) {
        p->rx_state = RX_PAYLOAD;
        return;
    }
    p->rx_state = RX_IDLE;
    xdev_core_rx_end(tp->dev, &p->rxm);
}

/* Parse a start record and ask the core where its payload goes. Returns
 * false when the ring is not to be read further now. */
static bool start_message(xdev_tp_t *tp, shm_peer_t *p, uint64_t ctrl)
{
    size_t body = (size_t)(ctrl & SHM_REC_BYTES);
    const uint8_t *b = shm_rx_body(&p->rx);
    xdev_rx_t *rx = &p->rxm;
    /* A start record holds a whole head: one cut short is as broken as a
     * bad one. */
    long head = (ctrl & SHM_REC_START) && body >= 8
                    ? xdev_wire_decode_head(b + 8, body - 8, &rx->head)
                    : -1;
    uint64_t len = 0;
    if (head > 0)
        memcpy(&len, b, 8);
    size_t head_len = head > 0 ? (size_t)head : 0;
    if (head <= 0 || body - 8 - head_len > len) {
        shm_peer_fail(tp, p);
        return false;
    }
    /* Say we read this ring before anything we do about the message can
     * be seen by its sender: that proves the ring (shm.h). And the other
     * way round, an op of ours held for that proof is handed back before
     * the core sees what may be the answer to it. */
    if (!p->rx_seen) {
        p->rx_seen = true;
        atomic_store_explicit(&p->rx.ctl->seen, 1, memory_order_release);
    }
    if (p->txq.head && !p->proven && !p->gone)
        shm_flush(tp, p);
    rx->len = (size_t)len;
    p->rx_skip = 8 + head_len;
    rx->payload = body - p->rx_skip == len ? b + p->rx_skip : NULL;
    p->rx_got = 0;
    p->rx_state = RX_DEFERRED; /* until the core answers */
    int rc = xdev_core_rx_begin(tp->dev, p->rank, p, rx);
    if (rc < 0) {
        shm_peer_fail(tp, p);
        return false;
    }
    if (rc == XDEV_RX_DEFER)
        return false;
    if (rc == XDEV_RX_DONE) {
        p->rx_state = RX_IDLE;
        shm_rx_release(&p->rx, ctrl);
        return true;
    }
    place(p, b + p->rx_skip, body - p->rx_skip);
    placed(tp, p, ctrl);
    return true;
}

/* The core gave a deferred message a place: the start record is still
 * at the head of the ring. */
static void resume_message(xdev_tp_t *tp, shm_peer_t *p)
{
    uint64_t ctrl = shm_rx_peek(&p->rx);
    size_t body = (size_t)(ctrl & SHM_REC_BYTES);
    /* The record is the one parsed before, unless the peer rewrote it. */
    if (!(ctrl & SHM_REC_START) || !shm_rx_valid(&p->rx, ctrl) || body < p->rx_skip ||
        body - p->rx_skip > p->rxm.len) {
        shm_peer_fail(tp, p);
        return;
    }
    place(p, shm_rx_body(&p->rx) + p->rx_skip, body - p->rx_skip);
    placed(tp, p, ctrl);
}

static bool fragment(xdev_tp_t *tp, shm_peer_t *p, uint64_t ctrl)
{
    size_t body = (size_t)(ctrl & SHM_REC_BYTES);
    if ((ctrl & SHM_REC_START) || body > p->rxm.len - p->rx_got) {
        shm_peer_fail(tp, p);
        return false;
    }
    place(p, shm_rx_body(&p->rx), body);
    placed(tp, p, ctrl);
    return true;
}

static void read_ring(xdev_tp_t *tp, shm_peer_t *p)
{
    /* Bounded, so one busy peer cannot starve the others. */
    for (int n = 0; n < SHM_RX_BUDGET && !p->failed; n++) {
        if (p->rx_state == RX_DEFERRED)
            return;
        if (p->rx_state == RX_RESUMED) {
            resume_message(tp, p);
            continue;
        }
        uint64_t ctrl = shm_rx_peek(&p->rx);
        if (!ctrl)
            return;
        if (!shm_rx_valid(&p->rx, ctrl)) {
            shm_peer_fail(tp, p);
            return;
        }
        if (ctrl & SHM_REC_PAD) {
            if (p->rx_state != RX_IDLE || (ctrl & SHM_REC_START) ||
                (p->rx.head & p->rx.mask) + shm_rec_size(ctrl & SHM_REC_BYTES) != p->rx.size) {
                shm_peer_fail(tp, p);
                return;
            }
            shm_rx_release(&p->rx, ctrl);
            continue;
        }
        bool go_on = p->rx_state == RX_IDLE ? start_message(tp, p, ctrl) : fragment(tp, p, ctrl);
        /* One unexpected message per call: the rest waits in the ring,
         * where it costs nothing and fills it so that the sender waits,
         * rather than in buffers that a lagging receiver would have to
         * allocate (first touches of fresh pages cost 13 us each here). */
        if (!go_on || (p->rx_state == RX_IDLE && p->rxm.unexpected))
            return;
    }
}

/* Read what p wrote; if that gave it room it may be sleeping for, wake it. */
void shm_rx_poll(xdev_tp_t *tp, shm_peer_t *p)
{
    uint64_t head = p->rx.head;
    read_ring(tp, p);
    if (p->rx.head != head && !p->gone)
        shm_bell_after(tp, p);
}

void shm_resume(xdev_tp_t *tp, void *token, const xdev_rx_t *to)
{
    (void)tp;
    shm_peer_t *p = token;
    if (p->failed || p->rx_state != RX_DEFERRED)
        return;
    xdev_rx_set_dst(&p->rxm, to);
    p->rx_state = RX_RESUMED;
}
