/*
 * shm_ring.c - a message as records in a ring (format in shm_ring.h).
 *
 * A message that fits is one start record: payload length, head and the
 * whole payload, written with two copies and published with one store. A
 * longer one (rendezvous data of many MiB, or anything that meets the end
 * of the data area) continues in fragments (frag_want), each
 * published as soon as it is written, so that the receiver copies one
 * fragment out while the next is copied in: the pipelined double copy.
 *
 * op->sent counts the head and payload bytes already in the ring.
 */
#include <string.h>
#include "shm.h"

/* Fragments this size keep both copies streaming from the L2 cache while
 * a few are in flight; larger ones only delay the receiver's first copy.
 * So a message begins and ends with them; in between, a long message's
 * fragments grow up to SHM_FRAG_LONG_BYTES, as large as what is already
 * sent and an eighth of what is left: fewer, longer copies and hand-overs
 * (4 MiB messages over a 2 MiB ring: 2-4% more bandwidth), while the
 * pipeline still fills and drains in short steps. */
#define SHM_FRAG_BYTES (32 * 1024)
#define SHM_FRAG_LONG_BYTES (128 * 1024)
/* With the ring nearly full, wait for room for a fragment this large
 * rather than dribble out small ones. */
#define SHM_FRAG_MIN 4096

static size_t quarter_or(size_t ring_bytes, size_t frag)
{
    return ring_bytes / 4 < frag ? ring_bytes / 4 : frag;
}

void shm_ring_set_frags(shm_txring_t *r)
{
    r->frag_max = quarter_or(r->size, SHM_FRAG_BYTES);
    r->frag_long = quarter_or(r->size, SHM_FRAG_LONG_BYTES);
}

/* The payload bytes to put in the next record of a message of which done
 * bytes are in the ring and left bytes are not. */
static size_t frag_want(const shm_txring_t *r, size_t done, size_t left)
{
    size_t f = done < left / 8 ? done : left / 8;
    if (f > r->frag_long)
        f = r->frag_long;
    if (f < r->frag_max)
        f = r->frag_max;
    return f < left ? f : left;
}

/* A start record's framing: the payload length and the head. Returns
 * where the payload goes. A head that fits in the record's first line
 * (every eager head does) goes as a fixed-size copy, a few moves instead
 * of a call; what it writes past the head is overwritten by the payload
 * or left unread, inside the record. */
static uint8_t *put_start(uint8_t *b, xdev_txop_t *op)
{
    enum { FAST_HEAD = SHM_LINE - SHM_START_FRAMING };
    _Static_assert(XDEV_HDR_BYTES + 8 <= FAST_HEAD, "eager heads take the fast copy");
    uint64_t len = op->payload_len;
    memcpy(b, &len, 8);
    if (op->head_len <= FAST_HEAD)
        memcpy(b + 8, xdev_txop_head(op), FAST_HEAD);
    else
        memcpy(b + 8, xdev_txop_head(op), op->head_len);
    return b + 8 + op->head_len;
}

/* Fill the data area from the producer's position to its end, so the next
 * record starts at the front. */
static void pad_to_end(shm_txring_t *r)
{
    shm_tx_publish(r, SHM_REC_PAD | (r->size - (r->tail & r->mask) - 8));
}

/* Called as a message of len payload bytes begins: only then can a
 * filler record go in. Unread records are at most half of `off` (the
 * filler's offset), which is at least SHM_HOT_BYTES, so the next lap's
 * first lines, cleared by the filler's publishing, have all been read. */
static void start_over_if_read(shm_txring_t *r, size_t len)
{
    if (len > SHM_BEHIND_MSG_MAX) { /* a lap past its end */
        r->walk_behind_until = r->tail + len + r->size;
        if (len > SHM_HOT_MSG_MAX)
            r->walk_until = r->walk_behind_until;
    }
    uint64_t off = r->tail & r->mask;
    if (off < SHM_HOT_BYTES || r->tail < r->head_check_at || r->tail < r->walk_until)
        return;
    r->head_check_at = r->tail + SHM_HEAD_CHECK_EVERY;
    r->head_seen = atomic_load_explicit(&r->ctl->head, memory_order_acquire);
    uint64_t unread = r->tail - r->head_seen;
    if (unread == 0 ||
        (r->start_over_behind && r->tail >= r->walk_behind_until && unread <= off / 2))
        pad_to_end(r);
}

/* The usual message: whole, in one start record, where there is room for
 * it now. Every message begins here. */
bool shm_ring_push_whole(shm_txring_t *r, xdev_txop_t *op)
{
    start_over_if_read(r, op->payload_len);
    size_t body = 8 + (size_t)op->head_len + op->payload_len;
    uint64_t need = shm_rec_size(body);
    if (op->payload_len > r->frag_max || shm_tx_room(r, need) < need)
        return false;
    xdev_txop_copy(put_start(shm_tx_body(r), op), op, 0, op->payload_len);
    op->sent = op->head_len + op->payload_len;
    shm_tx_publish(r, SHM_REC_START | body);
    if (op->payload_len <= SHM_HOT_MSG_MAX) /* (shm_ring.h) */
        shm_tx_zero_ahead(r);
    return true;
}

bool shm_ring_push(shm_txring_t *r, xdev_txop_t *op)
{
    if (op->sent == 0 && shm_ring_push_whole(r, op))
        return true;
    const size_t total = (size_t)op->head_len + op->payload_len;
    while (op->sent < total) {
        bool start = op->sent == 0;
        size_t framing = start ? SHM_START_FRAMING + op->head_len : 8;
        size_t done = start ? 0 : op->sent - op->head_len;
        size_t left = op->payload_len - done;
        size_t want = frag_want(r, done, left);
        uint64_t room = shm_tx_room(r, shm_rec_size(framing - 8 + want));
        bool at_end = (r->tail & r->mask) + room == r->size;
        if (room < framing) { /* (room is 0 or at least a line: a fragment fits) */
            if (!room || !at_end)
                return false;
            pad_to_end(r); /* room reaches the end: the head goes at the start */
            continue;
        }
        size_t chunk = room - framing < want ? (size_t)(room - framing) : want;
        /* A short piece is worth writing only where the data area ends
         * (the rest follows at its start); otherwise wait for room. */
        if (chunk < want && chunk < SHM_FRAG_MIN && !at_end)
            return false;
        uint8_t *b = shm_tx_body(r);
        uint64_t ctrl;
        if (start) {
            b = put_start(b, op);
            ctrl = SHM_REC_START | (8 + op->head_len + chunk);
            op->sent = op->head_len;
        } else {
            ctrl = chunk;
        }
        xdev_txop_copy(b, op, done, chunk);
        op->sent += chunk;
        shm_tx_publish(r, ctrl);
    }
    shm_tx_zero_ahead(r);
    return true;
}
