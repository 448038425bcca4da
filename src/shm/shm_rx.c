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

/* Give the record at the head back to the producer. A message taken by
 * a posted receive gives its room back at once: its receiver keeps up,
 * and a producer that looks whether the ring is empty (shm_ring.h) must
 * see it so. Unexpected ones mean the sender is ahead, and likely to be
 * polling the head of a full ring: their room is published in batches. */
static void give_back(shm_peer_t *p, uint64_t ctrl)
{
    shm_rx_release(&p->rx, ctrl);
    if (!p->in.rx.unexpected)
        shm_rx_publish(&p->rx);
}

/* Place the payload in the record at the head from byte `skip` on,
 * release the record, and end the message once it is complete. False
 * (the peer failed) if it holds more than the message announced. */
static bool take(xdev_tp_t *tp, shm_peer_t *p, uint64_t ctrl, size_t skip)
{
    size_t body = (size_t)(ctrl & SHM_REC_BYTES);
    if (body < skip || !xdev_rxmsg_place(&p->in, shm_rx_body(&p->rx) + skip, body - skip)) {
        shm_peer_fail(tp, p);
        return false;
    }
    give_back(p, ctrl);
    if (p->stream_t0 && p->in.got == p->in.rx.len) /* before the core answers */
        shm_stream_end(tp, p);
    if (p->mid_t0)
        shm_mid_ring_part(p, p->in.rx.len, p->in.got == p->in.rx.len);
    xdev_rxmsg_placed(tp->dev, &p->in);
    return true;
}

/* Parse a start record and ask the core where its payload goes. Returns
 * false when the ring is not to be read further now. */
static bool start_message(xdev_tp_t *tp, shm_peer_t *p, uint64_t ctrl)
{
    size_t body = (size_t)(ctrl & SHM_REC_BYTES);
    const uint8_t *b = shm_rx_body(&p->rx);
    xdev_rx_t *rx = &p->in.rx;
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
     * the core sees what may be the answer to it. The sender wrote the
     * largest eager message it sends beside the ring before its first
     * record; the core bounds what it accepts from it by that. */
    if (!p->rx_seen) {
        p->rx_seen = true;
        atomic_store_explicit(&p->rx.ctl->seen, 1, memory_order_release);
        xdev_core_peer_eager_limit(tp->dev, p->rank, (size_t)p->rx.ctl->eager_limit);
    }
    if (p->txq.head && !p->proven && !p->gone)
        shm_flush(tp, p);
    rx->len = (size_t)len;
    p->rx_skip = 8 + head_len;
    rx->payload = body - p->rx_skip == len ? b + p->rx_skip : NULL;
    uint64_t t0 = shm_mid_size(rx->len) ? shm_mid_arrives(tp, p, rx->len) : 0;
    int rc = xdev_rxmsg_begin(tp->dev, p->rank, p, &p->in);
    if (rc < 0) {
        shm_peer_fail(tp, p);
        return false;
    }
    if (rc == XDEV_RX_DEFER)
        return false;
    if (rc == XDEV_RX_DONE) {
        give_back(p, ctrl);
        if (t0) {
            p->mid_t0 = t0;
            shm_mid_ring_part(p, rx->len, true);
        }
        return true;
    }
    if (rx->len >= SHM_ADAPT_MIN) /* (a deferred one is not timed) */
        shm_stream_begin(tp, p, body - p->rx_skip);
    if (!rx->unexpected) /* (nor a buffered one) */
        p->mid_t0 = t0;
    return take(tp, p, ctrl, p->rx_skip);
}

/* The core gave a deferred message a place: the start record is still
 * at the head of the ring, unless the peer rewrote it. */
static void resume_message(xdev_tp_t *tp, shm_peer_t *p)
{
    uint64_t ctrl = shm_rx_peek(&p->rx);
    if (!(ctrl & SHM_REC_START) || !shm_rx_valid(&p->rx, ctrl)) {
        shm_peer_fail(tp, p);
        return;
    }
    take(tp, p, ctrl, p->rx_skip);
}

static bool fragment(xdev_tp_t *tp, shm_peer_t *p, uint64_t ctrl)
{
    if (ctrl & SHM_REC_START) {
        shm_peer_fail(tp, p);
        return false;
    }
    return take(tp, p, ctrl, 0);
}

/* Returns true when it stopped with another record waiting (the next
 * progress call reads on), false when the ring is empty or is not to be
 * read until the core says so. */
static bool read_ring(xdev_tp_t *tp, shm_peer_t *p)
{
    /* Bounded, so one busy peer cannot starve the others. */
    for (int n = 0; n < SHM_RX_BUDGET; n++) {
        if (p->failed || p->in.state == XDEV_RXMSG_DEFERRED)
            return false;
        if (p->in.state == XDEV_RXMSG_RESUMED) {
            resume_message(tp, p);
            continue;
        }
        uint64_t ctrl = shm_rx_peek(&p->rx);
        if (!ctrl)
            return false;
        if (!shm_rx_valid(&p->rx, ctrl)) {
            shm_peer_fail(tp, p);
            return false;
        }
        if (ctrl & SHM_REC_PAD) {
            if (p->in.state != XDEV_RXMSG_IDLE || (ctrl & SHM_REC_START) ||
                (p->rx.head & p->rx.mask) + shm_rec_size(ctrl & SHM_REC_BYTES) != p->rx.size) {
                shm_peer_fail(tp, p);
                return false;
            }
            shm_rx_release(&p->rx, ctrl);
            continue;
        }
        bool go_on = p->in.state == XDEV_RXMSG_IDLE ? start_message(tp, p, ctrl) : fragment(tp, p, ctrl);
        if (!go_on)
            return false;
        /* One unexpected message per call: the rest waits in the ring,
         * where it costs nothing and fills it so that the sender waits,
         * rather than in buffers that a lagging receiver would have to
         * allocate (first touches of fresh pages cost 13 us each here).
         * After a short message a posted receive took, stop too unless
         * another receive names this peer (a window): the caller sees
         * that receive done and posts its next before the next message is
         * read, which then takes the expected path instead of the
         * unexpected one (with libxdev_coll's matching change, 2-rank
         * 8-byte allreduce 0.45 us against 0.54). Reading on wherever two
         * records or more waited made every other message of a root
         * running ahead unexpected (2-rank 8-byte bcast back to back 0.099
         * us a call against 0.066). After a longer one, read on: stopping
         * after each, a stream of 16 KiB messages lost 7-10% of its
         * bandwidth. */
        if (p->in.state == XDEV_RXMSG_IDLE &&
            (p->in.rx.unexpected ||
             (p->in.rx.len <= SHM_RX_STOP_MAX && !xdev_core_posted_from(tp->dev, p->rank))))
            break;
    }
    return shm_rx_peek(&p->rx) != 0;
}

/* If publishing gave p room it may be sleeping for, wake it. */
static void wake_if_room(xdev_tp_t *tp, shm_peer_t *p, uint64_t published_before)
{
    if (p->rx.published != published_before && !p->gone)
        shm_bell_after(tp, p);
}

/* Read what p wrote, and publish what was read unless more follows at
 * once (shm_ring.h). */
void shm_rx_poll(xdev_tp_t *tp, shm_peer_t *p)
{
    uint64_t published = p->rx.published;
    if (!read_ring(tp, p))
        shm_rx_publish(&p->rx);
    wake_if_room(tp, p, published);
}

/* Before we sleep: a peer waiting for room must not wait for us. */
void shm_rx_publish_all(xdev_tp_t *tp)
{
    for (int i = 0; i < tp->npeers; i++) {
        shm_peer_t *p = &tp->peers[i];
        uint64_t published = p->rx.published;
        shm_rx_publish(&p->rx);
        wake_if_room(tp, p, published);
    }
}

void shm_resume(xdev_tp_t *tp, void *token, const xdev_rx_t *to)
{
    (void)tp;
    shm_peer_t *p = token;
    if (!p->failed)
        xdev_rxmsg_resume(&p->in, to);
}
