/*
 * shm_verdict.c - whether a long message to a peer streams through its ring
 * or is copied once, and how each side learns which is faster.
 *
 * The receiver times both ways (its streams in from a peer, its single
 * copies from it) and publishes a verdict in the ring's control block;
 * the sender follows it, but for tries against it that keep both rates
 * current. See shm.h (SHM_ADAPT_MIN) and the README's shm section.
 */
#include "shm.h"

/* Where the host's ranks fit its CPUs, a stream's two copies (in by the
 * sender, out by the receiver) run at once on two CPUs, and what counts is
 * how soon the message is in: wall time. Where they outnumber its CPUs,
 * the CPUs are what the ranks wait for, and a stream is two copies' work
 * against a single copy's one: the receiver times its own copies in CPU
 * time (a wall clock would count the time it waited for a CPU, or for a
 * sender waiting for one) and counts the sender's as taking as long. On a
 * 2-core Intel host, 1 MiB streams ran at 12 GB/s either way, single
 * copies at 15; 1 MiB collectives at 4 ranks took 0.53-0.87 of the time
 * they took streaming every message that fits in half the ring, as this
 * host's ranks did before (reduce per call 1.21). */
uint64_t shm_stream_clock(const xdev_tp_t *tp)
{
    return xdev_clock_ns(tp->cpus_enough ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID);
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
static void verdict(const xdev_tp_t *tp, shm_peer_t *p)
{
    uint64_t copies = tp->cpus_enough ? 1 : 2; /* (shm_stream_clock) */
    uint32_t slow = p->ring_rate && p->ring_rate < copies * single_rate(p);
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
void shm_rate_stream(const xdev_tp_t *tp, shm_peer_t *p, uint64_t bytes, uint64_t ns)
{
    bool warm = p->warm_bytes >= p->rx.size;
    p->warm_bytes += bytes;
    if (!warm)
        return;
    p->ring_rate = average(p->ring_rate, shm_rate_of(bytes, ns));
    verdict(tp, p);
}

/* In wall time the sender wrote the first record before the clock
 * started, so it is left out of the rate (counted, 128 KiB streams looked
 * a third faster than they ran); in CPU time the clock counts our own
 * copying, of that record too. */
void shm_stream_begin(const xdev_tp_t *tp, shm_peer_t *p, size_t first)
{
    p->stream_t0 = shm_stream_clock(tp);
    p->stream_head = tp->cpus_enough ? first : 0;
}

void shm_stream_end(const xdev_tp_t *tp, shm_peer_t *p)
{
    if (p->in.got > p->stream_head) /* (not all in its first record) */
        shm_rate_stream(tp, p, p->in.got - p->stream_head, shm_stream_clock(tp) - p->stream_t0);
    /* The first record warmed the ring like the rest. Left out, a try of
     * 128 KiB-1 MiB messages (a lap of them and one more) fell short of a
     * lap by their first records, and no try was ever timed: one slow
     * stream left 512 KiB-1 MiB messages copied once for good, at 0.6-0.8
     * of the ring's speed. */
    p->warm_bytes += p->stream_head;
    p->stream_t0 = 0;
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

void shm_rate_single(const xdev_tp_t *tp, shm_peer_t *p, uint64_t bytes, uint64_t ns)
{
    p->single_rate = average(p->single_rate, shm_rate_of(bytes, ns));
    verdict(tp, p);
}
