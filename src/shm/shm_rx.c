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

/* Bytes per us, at least 1: an average of 0 means nothing timed yet. */
static uint32_t rate_of(uint64_t bytes, uint64_t ns)
{
    uint64_t rate = bytes * 1000 / (ns ? ns : 1);
    return rate < 1 ? 1 : rate > UINT32_MAX ? UINT32_MAX : (uint32_t)rate;
}

/* Half the old average, half the new rate: a change shows in two. */
static uint32_t average(uint32_t avg, uint32_t rate)
{
    return avg ? (uint32_t)(((uint64_t)avg + rate) / 2) : rate;
}

static uint32_t single_rate(const shm_peer_t *p)
{
    return p->single_rate ? p->single_rate : SHM_SINGLE_GUESS;
}

/* Tell p whether its long messages are worth streaming to us, through our
 * ring's control block. Streams run 3-10 times slower than usual when the
 * two cores share no cache (another CCD or socket; in this VM, whenever
 * the host puts the two vCPUs so) or the sender is slow to refill the
 * ring, and a single copy then moves 3-8 times more (12-13 GB/s either way
 * here, against 2.5-6 streamed, 25-35 at best). Until a stream has been
 * timed they are worth it. */
static void verdict(shm_peer_t *p)
{
    uint32_t slow = p->ring_rate && p->ring_rate < single_rate(p);
    if (atomic_load_explicit(&p->rx.ctl->slow_streams, memory_order_relaxed) != slow)
        atomic_store_explicit(&p->rx.ctl->slow_streams, slow, memory_order_relaxed);
}

/* A stream counts only once the ring is warm: a ring's worth of bytes
 * has streamed in from p since our last single copy with it. Before that
 * its lines are in neither cache, and the stream misleads either way.
 * Alone in a ping-pong it runs at 7-13 GB/s where warm ones run at 25-35,
 * under the single copy (12): taken as it came, the verdict stayed slow
 * for good. Between single copies both ways at once it has the ring to
 * itself and runs at 7-11 where the streams of such a window run at
 * 2.5-4: counted double it turned the verdict fast, and p then streamed
 * the whole window it was posting. A try of the ring
 * (shm_copy_once_next) therefore streams a lap and one message more. */
void shm_rate_stream(shm_peer_t *p, uint64_t bytes, uint64_t ns)
{
    bool warm = p->warm_bytes >= p->rx.size;
    p->warm_bytes += bytes;
    if (!warm)
        return;
    p->ring_rate = average(p->ring_rate, rate_of(bytes, ns));
    verdict(p);
}

void shm_copied_once(shm_peer_t *p)
{
    p->warm_bytes = 0;
}

/* Count a streamed message of len bytes against a try of the ring. */
static void lap_taken(shm_peer_t *p, size_t len)
{
    size_t n = len < p->try_lap ? len : p->try_lap;
    p->try_last = p->try_lap && n == p->try_lap;
    p->try_lap -= n;
}

/* Whether the next long rendezvous to p, of len bytes, is copied once
 * rather than streamed: as p's verdict says, but for a try against it
 * once in adapt_every, so that both rates it compares stay current. The
 * one not chosen is otherwise never timed again, and a rate timed while
 * the host had the two cores far apart (or while both ranks copied at
 * once) would decide for good. A try of the ring streams messages until
 * a lap and one more have gone (p times only the last, above); a try of
 * the single copy is worth making only where the copy is timed, so where
 * none is (write mode, or nothing over 1 MiB) the single copy's rate
 * stays what it was. Tries come twice as far apart each time the verdict
 * holds, up to SHM_ADAPT_RETRY_MAX, since each costs what the way not
 * taken costs: a stream between the single copies of a window both ways
 * holds up the ring's other messages (their handshakes) for as long as
 * it takes at 2.5-4 GB/s, and a single copy in a ping-pong takes 2-3
 * times a warm stream. A try of the ring starts only with a message that
 * follows a progress call (polls, the transport's count of them, has
 * moved), not inside a burst posted at once: the receiver makes the
 * burst's single copies between the try's handshakes and its data, so a
 * try begun at the end of one window (the 64th message of OSU's) and
 * ending in the next found the ring cold every time. */
bool shm_copy_once_next(shm_peer_t *p, size_t len, bool timed, unsigned polls)
{
    bool burst = polls == p->picked_at; /* no progress call since the last */
    p->picked_at = polls;
    bool slow = atomic_load_explicit(&p->tx.ctl->slow_streams, memory_order_relaxed);
    if (slow != p->adapt_slow || !p->adapt_every) { /* it turned: watch closely again */
        p->adapt_slow = slow;
        p->adapt_every = SHM_ADAPT_RETRY;
        p->adapt_picks = 0;
        p->try_lap = 0;
        p->try_last = false;
    }
    if (p->try_lap || p->try_last) {
        lap_taken(p, len);
        return false;
    }
    if (p->adapt_picks < p->adapt_every)
        p->adapt_picks++;
    if (p->adapt_picks < p->adapt_every || (!slow && !timed) || (slow && burst))
        return slow;
    p->adapt_picks = 0;
    if (p->adapt_every < SHM_ADAPT_RETRY_MAX)
        p->adapt_every *= 2;
    if (!slow)
        return true;
    p->try_lap = p->tx.size;
    lap_taken(p, len);
    return false;
}

void shm_rate_single(shm_peer_t *p, uint64_t bytes, uint64_t ns)
{
    p->single_rate = average(p->single_rate, rate_of(bytes, ns));
    verdict(p);
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
    shm_rx_release(&p->rx, ctrl);
    if (p->stream_t0 && p->in.got == p->in.rx.len) { /* before the core answers */
        shm_rate_stream(p, p->in.got, xdev_now_ns() - p->stream_t0);
        p->stream_t0 = 0;
    }
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
    int rc = xdev_rxmsg_begin(tp->dev, p->rank, p, &p->in);
    if (rc < 0) {
        shm_peer_fail(tp, p);
        return false;
    }
    if (rc == XDEV_RX_DEFER)
        return false;
    if (rc == XDEV_RX_DONE) {
        shm_rx_release(&p->rx, ctrl);
        return true;
    }
    if (rx->len >= SHM_ADAPT_MIN) /* (a deferred one is not timed) */
        p->stream_t0 = xdev_now_ns();
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

static void read_ring(xdev_tp_t *tp, shm_peer_t *p)
{
    /* Bounded, so one busy peer cannot starve the others. */
    for (int n = 0; n < SHM_RX_BUDGET && !p->failed; n++) {
        if (p->in.state == XDEV_RXMSG_DEFERRED)
            return;
        if (p->in.state == XDEV_RXMSG_RESUMED) {
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
            if (p->in.state != XDEV_RXMSG_IDLE || (ctrl & SHM_REC_START) ||
                (p->rx.head & p->rx.mask) + shm_rec_size(ctrl & SHM_REC_BYTES) != p->rx.size) {
                shm_peer_fail(tp, p);
                return;
            }
            shm_rx_release(&p->rx, ctrl);
            continue;
        }
        bool go_on = p->in.state == XDEV_RXMSG_IDLE ? start_message(tp, p, ctrl) : fragment(tp, p, ctrl);
        /* One unexpected message per call: the rest waits in the ring,
         * where it costs nothing and fills it so that the sender waits,
         * rather than in buffers that a lagging receiver would have to
         * allocate (first touches of fresh pages cost 13 us each here). */
        if (!go_on || (p->in.state == XDEV_RXMSG_IDLE && p->in.rx.unexpected))
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
    if (!p->failed)
        xdev_rxmsg_resume(&p->in, to);
}
