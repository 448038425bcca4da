/*
 * shm_ring.h - the single-producer/single-consumer byte ring that carries
 * one direction between two ranks, as laid out in shared memory, and the
 * few inline steps that make up its fast path.
 *
 * A ring lives in the receiver's segment: a control block (ctl) and a
 * power-of-two data area. The data area holds records, each starting on a
 * 64-byte line with an 8-byte control word:
 *
 *   ctrl == 0            nothing here yet
 *   ctrl & SHM_REC_START the first record of a message:
 *                        [ctrl][u64 payload length][xdev head][payload...]
 *   ctrl & SHM_REC_PAD   filler up to the end of the data area, where the
 *                        head of a start record would not fit
 *   otherwise            a fragment: [ctrl][payload...]
 *   ctrl & SHM_REC_BYTES bytes after the control word
 *
 * A record never wraps: it ends at the end of the data area at the latest
 * (a long message simply becomes more fragments). The producer writes the
 * record body, then publishes it with a release store of its control word,
 * and the consumer acquires a control word before it reads the body.
 *
 * Where the consumer looks next, right after a record, it must find 0 or a
 * fresh record, never stale bytes of an earlier lap (payload bytes from an
 * earlier lap can look like anything, a control word included). So before
 * a record is published, the control word of the line that follows it is
 * 0: the producer clears the first word of every line ahead of its
 * position in batches (`zeroed`), after publishing rather than before, so
 * the clearing stores do not hold up the store that publishes; only when a
 * record reaches past the cleared lines does it clear the one line after
 * it first. Both need the line after a record to be free, which is why the
 * producer keeps one line spare. No batch follows a whole message over
 * SHM_HOT_MSG_MAX: the next one of its size writes those lines anyway,
 * and taking them, a lap cold, ahead of it cost more than it saved
 * (2 KiB ping-pong 0.82-0.86 us without, 0.98-0.99 with; bw 4-16 KiB
 * 6-17% higher without).
 *
 * The consumer publishes how far it has read in ctl->head (release, after
 * copying records out); the producer reads it (acquire) only when its
 * cached copy says the ring is full, and past SHM_HOT_BYTES once every
 * SHM_HEAD_CHECK_EVERY bytes (below). Nothing else is shared on the fast
 * path: one copy in, one release store; one acquire load, one copy out,
 * one release store (for unexpected messages, one now and then: below).
 * The ctl block has three parts, each written by one process only: the
 * consumer's head, its word now and then to the producer (which the
 * producer loads for every message of 8-128 KiB, so it must not share
 * head's line), and the producer's own; they are 128 bytes apart because
 * adjacent-line prefetchers move lines in pairs.
 *
 * The consumer publishes at once after a message that a posted receive
 * took: its reader keeps up, and a producer that looks whether the ring
 * is empty (below) must see it so without delay. An unexpected message
 * means the sender is ahead, likely keeping the ring full and reading the
 * head whenever it finds no room, and publishing after each of those made
 * the head's line cross between the cores for every message. Their room
 * is published when the consumer finds the ring empty, when it stops
 * reading for any reason but another record waiting, before it sleeps,
 * and otherwise once `publish_every` bytes have been released: 8-byte
 * bcast and scatter at 2 ranks, back to back (the root only sends), took
 * 0.17-0.21 us a call against 0.26-0.33. A producer sees room later by at
 * most that much, in a ring still holding records for the consumer to
 * read.
 *
 * A producer past the first SHM_HOT_BYTES of the data area that finds the
 * ring empty fills the rest of the area with a filler record, so the next
 * message starts over at the front: a ping-pong of small messages then
 * cycles through a few lines that stay in both cores' caches instead of
 * walking through the whole ring, where every line is a cache miss.
 * Not after a long message (over SHM_HOT_MSG_MAX) within the last lap:
 * rewriting kilobytes the consumer has just read means taking each line
 * back from its cache, and the producer's copy then runs 5-10 times
 * slower than into lines neither holds (64 KiB ping-pong 9-11 us starting
 * over, 2.8-3.1 us walking the ring; 8 bytes 0.11 us either way).
 *
 * Where the host's ranks fit its CPUs (start_over_behind), it also starts
 * over while the consumer is at most half its offset behind: a reader
 * that keeps a steady few messages behind (the member of a bcast back to
 * back) otherwise walks the whole ring, and a page touched for the first
 * time costs 7-20 us on these VMs (2-rank 8-byte bcast, back to back,
 * 10000 calls: 0.11-0.12 us a call against 0.18-0.19). Its front is read
 * by then, and what is left to write before the reader is half the
 * offset or more. Not where ranks outnumber CPUs: there the reader is
 * often not running, and a producer that started over behind it can
 * write only as far as the reader, not a whole ring, before it waits
 * (4 ranks, 8-byte gather back to back, 1.7-2.0 times as long). Nor
 * within a lap of a message over SHM_BEHIND_MSG_MAX: a stream of those
 * ran 2.2-2.8 times slower started over behind its reader than walking
 * the ring (2 ranks, 512 B-1 KiB, windows of 64: xdev-bench bw and
 * rate), where one of 32-256 bytes ran 1.3-1.6 times faster.
 */
#ifndef XDEV_SHM_RING_H
#define XDEV_SHM_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHM_LINE 64
#define SHM_SPLIT 128 /* distance between data written by different processes */

#define SHM_REC_BYTES 0xffffffffull
#define SHM_REC_START (1ull << 32)
#define SHM_REC_PAD (1ull << 33)
#define SHM_REC_KNOWN (SHM_REC_BYTES | SHM_REC_START | SHM_REC_PAD)
#define SHM_START_FRAMING 16 /* control word + payload length */
#define SHM_ZERO_LOW 1024    /* clear lines ahead when fewer are clear ... */
#define SHM_ZERO_HIGH 2048   /* ... up to this far ahead (small batches: a
                              * burst of clearing stores must not fill the
                              * store buffer) */
/* Where a ring may start over (above), and how often a producer past
 * that point reads the consumer's head to see whether it may: the
 * head's line is written by the consumer for every record, so reading it
 * is a miss. 8-byte ping-pong here: 0.36-0.40 us with 16 or 64 KiB, 0.55-
 * 0.67 us walking a 1 MiB ring; 128 KiB is already slower. */
#define SHM_HOT_BYTES (64 * 1024)
#define SHM_HEAD_CHECK_EVERY (4 * 1024)
#define SHM_HOT_MSG_MAX 1024
#define SHM_BEHIND_MSG_MAX 256
#define SHM_PUBLISH_MAX (16 * 1024) /* publish_every: an eighth of the ring, at most this */

/* The shared control block of one ring. */
typedef struct shm_ring_ctl {
    /* written by the consumer */
    _Alignas(SHM_SPLIT) _Atomic uint64_t head; /* bytes of the ring read and released */
    _Atomic uint32_t seen;   /* the consumer has begun reading this ring */
    _Atomic uint32_t closed; /* the consumer stopped reading: it left or gave up on us */
    /* ... now and then, and read by the producer for every message of some
     * sizes: apart from head, whose line the consumer writes all the time
     * (measured: test/bench/RESULTS.md, "shm middle sizes, part 8") */
    _Alignas(SHM_SPLIT) _Atomic uint32_t slow_streams; /* long messages stream
                                    * slowly through this ring: copy them
                                    * once instead (shm.c) */
    _Atomic uint64_t single_from;  /* from this size up (0: none) messages under
                                    * SHM_ADAPT_MIN are read once (shm_middle.c) */
    _Atomic uint64_t try_from;     /* ... or from this, for the producer's next
                                    * few, each time tries grows (a try) */
    _Atomic uint32_t tries;
    /* written by the producer */
    _Alignas(SHM_SPLIT) _Atomic uint32_t eof; /* the producer left after its last record */
    _Atomic int32_t producer; /* its pid, stored once it has mapped this ring
                               * (after eager_limit) */
    uint64_t eager_limit;     /* the largest eager message it sends */
    _Atomic uint32_t copying; /* it is inside a single copy with the
                               * consumer's memory (shm_seg_copy) */
} shm_ring_ctl_t;

_Static_assert(sizeof(shm_ring_ctl_t) == 3 * SHM_SPLIT, "three parts, each written by one process");

/* The producer's private view of a ring in the peer's segment. */
typedef struct shm_txring {
    uint8_t *data;
    shm_ring_ctl_t *ctl;
    uint64_t size, mask;
    uint64_t tail;      /* bytes written (absolute) */
    uint64_t head_seen; /* the consumer's head when last read */
    uint64_t zeroed;    /* each line in [tail, zeroed) starts with a 0 word */
    uint64_t head_check_at; /* tail at which to read the head again: is the
                             * ring empty, or read far enough to start over? */
    uint64_t walk_until; /* tail below which it does not start over: a lap
                          * past the end of the last long message */
    uint64_t walk_behind_until; /* nor behind the consumer below this: a
                                 * lap past the last message over
                                 * SHM_BEHIND_MSG_MAX */
    bool start_over_behind; /* and not only when the ring is empty (above) */
    size_t frag_max;    /* largest whole message, and the fragments at
                         * either end of a longer one */
    size_t frag_long;   /* largest fragment, in the middle of a long message */
} shm_txring_t;

/* The consumer's private view of a ring in our own segment. */
typedef struct shm_rxring {
    uint8_t *data;
    shm_ring_ctl_t *ctl;
    uint64_t size, mask;
    uint64_t head;      /* bytes read (absolute) */
    uint64_t published; /* the head last stored in ctl->head */
    uint64_t publish_every;
} shm_rxring_t;

static inline uint64_t shm_rx_publish_every(uint64_t ring_bytes)
{
    return ring_bytes / 8 < SHM_PUBLISH_MAX ? ring_bytes / 8 : SHM_PUBLISH_MAX;
}

static inline _Atomic uint64_t *shm_ctrl_at(uint8_t *data, uint64_t off)
{
    return (_Atomic uint64_t *)(void *)(data + off);
}

static inline uint64_t shm_rec_size(uint64_t body)
{
    return (8 + body + SHM_LINE - 1) & ~(uint64_t)(SHM_LINE - 1);
}

/* Bytes a record may take at the producer's position: up to the end of
 * the data area, and short of the consumer's head by one spare line.
 * A multiple of SHM_LINE; 0 when the ring is full. The consumer's head is
 * read only when the head we saw last leaves less than `want` bytes, so a
 * producer that keeps ahead of a slow reader does not pull the head's line
 * over for every message. */
static inline uint64_t shm_tx_room(shm_txring_t *r, uint64_t want)
{
    uint64_t off = r->tail & r->mask;
    uint64_t to_end = r->size - off;
    uint64_t free = r->size + r->head_seen - r->tail;
    if (want > to_end)
        want = to_end;
    if (free < want + SHM_LINE) {
        r->head_seen = atomic_load_explicit(&r->ctl->head, memory_order_acquire);
        free = r->size + r->head_seen - r->tail;
        if (free > r->size) /* a head that never was: a broken peer; write nothing */
            return 0;
    }
    if (free <= SHM_LINE)
        return 0;
    free -= SHM_LINE;
    return free < to_end ? free : to_end;
}

/* Where the body of a record at the producer's position goes. */
static inline uint8_t *shm_tx_body(shm_txring_t *r)
{
    return r->data + (r->tail & r->mask) + 8;
}

/* Publish the record whose body was just written at the producer's
 * position. ctrl carries the flags and the body length. */
static inline void shm_tx_publish(shm_txring_t *r, uint64_t ctrl)
{
    uint64_t off = r->tail & r->mask;
    uint64_t next = r->tail + shm_rec_size(ctrl & SHM_REC_BYTES);
    if (next >= r->zeroed) { /* past the cleared lines: clear the next one now */
        atomic_store_explicit(shm_ctrl_at(r->data, next & r->mask), 0, memory_order_relaxed);
        r->zeroed = next + SHM_LINE;
    }
    atomic_store_explicit(shm_ctrl_at(r->data, off), ctrl, memory_order_release);
    r->tail = next;
}

/* Clear lines ahead for the records to come (only lines the consumer has
 * released, as far as we know). Called after publishing. */
static inline void shm_tx_zero_ahead(shm_txring_t *r)
{
    if (r->zeroed - r->tail >= SHM_ZERO_LOW)
        return;
    uint64_t end = r->tail + SHM_ZERO_HIGH;
    if (end > r->head_seen + r->size)
        end = r->head_seen + r->size;
    for (uint64_t z = r->zeroed; z < end; z += SHM_LINE)
        atomic_store_explicit(shm_ctrl_at(r->data, z & r->mask), 0, memory_order_relaxed);
    if (end > r->zeroed)
        r->zeroed = end;
}

/* The control word of the next record, 0 if none has been published. */
static inline uint64_t shm_rx_peek(shm_rxring_t *r)
{
    return atomic_load_explicit(shm_ctrl_at(r->data, r->head & r->mask), memory_order_acquire);
}

/* Is ctrl a control word the producer could have written here? */
static inline bool shm_rx_valid(const shm_rxring_t *r, uint64_t ctrl)
{
    uint64_t body = ctrl & SHM_REC_BYTES;
    return !(ctrl & ~SHM_REC_KNOWN) && body && 8 + body <= r->size - (r->head & r->mask);
}

static inline const uint8_t *shm_rx_body(const shm_rxring_t *r)
{
    return r->data + (r->head & r->mask) + 8;
}

/* Tell the producer how far we have read. */
static inline void shm_rx_publish(shm_rxring_t *r)
{
    if (r->published == r->head)
        return;
    atomic_store_explicit(&r->ctl->head, r->head, memory_order_release);
    r->published = r->head;
}

/* Give the record just read back to the producer (published in batches). */
static inline void shm_rx_release(shm_rxring_t *r, uint64_t ctrl)
{
    r->head += shm_rec_size(ctrl & SHM_REC_BYTES);
    if (r->head - r->published >= r->publish_every)
        shm_rx_publish(r);
}

#endif
