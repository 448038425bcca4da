/*
 * shm_middle.c - whether a peer's messages of 8-128 KiB come through the
 * ring or are read once, by which of the two their receiver has timed
 * faster at their size.
 *
 * Through the ring a message is copied twice, in by its sender and out
 * by us, one after the other for a lone message; read once it costs us a
 * system call and a single copy. Which is faster turns on where the two
 * processes run: with two cores that share a cache the ring carried
 * 16 KiB in 1.31 us (Open MPI's single copy 2.98), with the host's two
 * vCPUs far apart it took 2.5 us and a read from 8 KiB up 1.3 (README,
 * shm; test/bench/RESULTS.md, "shm middle sizes"). So we time both, per
 * power of two of size, and tell the sender through the ring's control
 * block from what size to send us offers to read (single_from); it has
 * the core send them so (xdev_core_peer_rndz_from, which also reads an
 * offer in as it arrives, as the eager message would have been).
 *
 * Alone, a message through the ring costs, as we see it, its first
 * record's copy twice (its sender made the same copy before we saw it)
 * and the rest of it as long as it takes us; a read costs what the call
 * takes. In a window of sends what counts is how soon one message
 * follows another: there the ring's two copies run at once, and a read
 * has the offer and its answer around it (8 KiB: reads of 0.51 us, one
 * every 0.66; counted as alone, 8 KiB windows read once moved 0.65 of
 * what they moved through the ring). So messages are timed in pairs,
 * the first to say when the second began, and a second that followed
 * sooner than it would have alone costs the time between the two.
 * We time a pair in every SHM_MID_SAMPLE messages (the clock costs: at
 * one in four, 8 KiB windows moved a few hundredths less), and every
 * message during a try: the way not chosen is never taken otherwise, so
 * every so often (SHM_MID_TRY_FIRST messages, then twice as far apart
 * each time the choice holds, up to SHM_MID_TRY_MAX) we ask the sender
 * to send its next SHM_MID_TRY_SENDS the other way. It counts them
 * itself: a sender a window ahead would otherwise send a whole window
 * the slower way before it saw the try end (8 KiB windows moved 0.82 of
 * what they moved before the choice, with tries ended by us).
 */
#include "shm.h"

enum { RING = 0, SINGLE = 1 };
enum { TRY_NONE = 0, TRY_RING = 1, TRY_SINGLE = 2 };

static unsigned bucket(size_t len)
{
    unsigned b = 0;
    while (b + 1 < SHM_MID_BUCKETS && len >= SHM_MID_MIN << (b + 1))
        b++;
    return b;
}

/* A way's rate at a size is the median of its last three: a message
 * the scheduler or an interrupt held up is slower by far, never faster,
 * and one such must not turn the sender. */
static uint32_t rate(const shm_peer_t *p, int way, unsigned b)
{
    const uint32_t *r = p->mid_rate[way][b];
    uint32_t lo = r[0] < r[1] ? r[0] : r[1], hi = r[0] < r[1] ? r[1] : r[0];
    return r[2] < lo ? lo : r[2] > hi ? hi : r[2];
}

static void rate_add(uint32_t *r, uint32_t now)
{
    r[0] = r[1] ? r[1] : now;
    r[1] = r[2] ? r[2] : now;
    r[2] = now;
}

/* Whether a read beats the ring in bucket b; the way chosen now keeps
 * its place until the other is an eighth faster, so that two rates about
 * equal do not make the sender switch back and forth. */
static bool single_wins(const shm_peer_t *p, unsigned b)
{
    uint64_t ring = rate(p, RING, b), single = rate(p, SINGLE, b);
    bool now = p->mid_from && (SHM_MID_MIN << b) >= p->mid_from;
    return now ? single * 8 >= ring * 7 : single * 8 > ring * 9;
}

/* From the largest size down: the smallest of an unbroken run of sizes
 * where reads win. A size not timed both ways goes as the next larger. */
static uint64_t verdict(const shm_peer_t *p)
{
    uint64_t from = 0;
    for (unsigned b = SHM_MID_BUCKETS; b-- > 0;) {
        if (!rate(p, RING, b) || !rate(p, SINGLE, b))
            continue;
        if (!single_wins(p, b))
            break;
        from = SHM_MID_MIN << b;
    }
    return from;
}

static void publish(shm_peer_t *p, uint64_t from)
{
    if (atomic_load_explicit(&p->rx.ctl->single_from, memory_order_relaxed) != from)
        atomic_store_explicit(&p->rx.ctl->single_from, from, memory_order_relaxed);
}

/* The sender takes the way asked for its next SHM_MID_TRY_SENDS
 * messages, counted as it sends them: sent in a window, they may all be
 * out before it would have seen the try end. */
static void try_begin(shm_peer_t *p)
{
    p->mid_seen = 0;
    if (p->mid_every < SHM_MID_TRY_MAX)
        p->mid_every *= 2;
    /* Try whichever way some sizes do not go now; both in turn if so. */
    bool all_single = p->mid_from == SHM_MID_MIN;
    p->mid_try = !p->mid_from ? TRY_SINGLE : all_single ? TRY_RING
                 : p->mid_last_try == TRY_RING ? TRY_SINGLE : TRY_RING;
    p->mid_last_try = p->mid_try;
    p->mid_try_left = SHM_MID_TRY_COLD + SHM_MID_TRY_SPAN;
    shm_ring_ctl_t *ctl = p->rx.ctl;
    atomic_store_explicit(&ctl->try_from, p->mid_try == TRY_SINGLE ? SHM_MID_MIN : 0,
                          memory_order_relaxed);
    atomic_fetch_add_explicit(&ctl->tries, 1, memory_order_release);
}

/* Does a message taking len bytes of p's ring from our place in it reach
 * further than any before it? Its pages are then new to us, and the
 * first touch of a page costs 5-6 us on the development VM even once the
 * kernel has mapped it: 8 KiB messages of the ring's first lap took 11 us
 * each to copy out there, those of later laps 0.3-1.0, and read once
 * 2.7-3.5. Timed, the first lap turned 8 KiB ping-pongs to reads; tries
 * of the ring then walked on into new pages a few messages at a time,
 * and the ring never won back (3.1 us a message against 1.4). */
static bool fresh(shm_peer_t *p, size_t len)
{
    uint64_t end = (p->rx.head & p->rx.mask) + SHM_START_FRAMING + len;
    if (end <= p->mid_walked)
        return false;
    p->mid_walked = end < p->rx.size ? end : p->rx.size;
    return true;
}

uint64_t shm_mid_arrives(const xdev_tp_t *tp, shm_peer_t *p, size_t ring_len)
{
    if (!tp->mid_adapts)
        return 0;
    if (!p->mid_every)
        p->mid_every = SHM_MID_TRY_FIRST;
    if (p->mid_try) {
        if (++p->mid_seen > SHM_MID_TRY_GIVEUP) /* the sender does not follow */
            p->mid_try = TRY_NONE;
    } else if (++p->mid_seen >= p->mid_every) {
        try_begin(p);
    }
    if (ring_len && fresh(p, ring_len)) { /* not timed, nor paired across */
        p->mid_prev_end = 0;
        return 0;
    }
    if (!p->mid_try && !p->mid_prev_end && ++p->mid_sample % SHM_MID_SAMPLE)
        return 0;
    return xdev_now_ns();
}

static void timed(shm_peer_t *p, int way, size_t len, uint64_t ns)
{
    bool tried = p->mid_try && (p->mid_try == TRY_SINGLE) == (way == SINGLE);
    /* A switch leaves the caches cold to the way taken (a ring not
     * written for a while goes twice as slow as warm): during a try the
     * way not tried does not count, nor the first SHM_MID_TRY_COLD of
     * the way tried. */
    if (p->mid_try && (!tried || p->mid_try_left-- > SHM_MID_TRY_SPAN))
        return;
    unsigned b = bucket(len);
    if (!rate(p, RING, b) && !rate(p, SINGLE, b) && p->mid_every > SHM_MID_TRY_FIRST)
        p->mid_every = SHM_MID_TRY_FIRST; /* a size new to us: try it soon */
    rate_add(p->mid_rate[way][b], shm_rate_of(len, ns));
    uint64_t from = verdict(p);
    if (from != p->mid_from) {
        p->mid_from = from;
        p->mid_every = SHM_MID_TRY_FIRST; /* it turned: look again soon */
    }
    if (tried && !p->mid_try_left)
        p->mid_try = TRY_NONE;
    publish(p, p->mid_from);
}

/* A timed message of len bytes was in at `now`. The first of a pair only
 * says when; the second costs the time since, if under window_max (the
 * two followed each other, as in a window), else `alone`. */
static void paired(shm_peer_t *p, int way, size_t len, uint64_t now, uint64_t alone,
                   uint64_t window_max)
{
    uint64_t prev = p->mid_prev_end;
    p->mid_prev_end = prev ? 0 : now;
    if (prev)
        timed(p, way, len, now - prev < window_max ? now - prev : alone);
}

void shm_mid_ring_part(shm_peer_t *p, size_t len, bool last)
{
    if (!last && p->mid_first) /* (the clock is not free) */
        return;
    uint64_t now = xdev_now_ns(), spent = now - p->mid_t0;
    if (!p->mid_first)
        p->mid_first = spent ? spent : 1;
    if (!last)
        return;
    uint64_t alone = spent + p->mid_first;
    p->mid_t0 = 0;
    p->mid_first = 0;
    paired(p, RING, len, now, alone, alone);
}

void shm_mid_read(shm_peer_t *p, size_t len, uint64_t t0)
{
    uint64_t now = xdev_now_ns();
    paired(p, SINGLE, len, now, now - t0, 2 * (now - t0));
}

void shm_mid_follow(xdev_tp_t *tp, shm_peer_t *p, size_t len)
{
    if (!tp->mid_adapts)
        return;
    shm_ring_ctl_t *ctl = p->tx.ctl;
    uint32_t tries = atomic_load_explicit(&ctl->tries, memory_order_acquire);
    if (tries != p->mid_tries_seen) {
        p->mid_tries_seen = tries;
        p->mid_try_sends = SHM_MID_TRY_SENDS;
    }
    bool trying = p->mid_try_sends && shm_mid_size(len);
    uint64_t from = atomic_load_explicit(trying ? &ctl->try_from : &ctl->single_from,
                                         memory_order_relaxed);
    p->mid_try_sends -= trying;
    if (from == p->mid_follows || !shm_seg_cma_works(tp, p))
        return;
    p->mid_follows = from;
    xdev_core_peer_rndz_from(tp->dev, p->rank, (size_t)from);
}
