/*
 * soak.h - what the parts of the soak program share: the run (drawn from
 * the seed, the same on every rank), the device, the counters of the
 * summary line, and the rule for which failures are allowed.
 *
 * A stream is every message one sender thread sends one rank on one kind
 * of context, numbered k = 0, 1, ...; each kind is received differently
 * (soak_recv.c, soak_probe.c, soak_mprobe.c).
 */
#ifndef SOAK_H
#define SOAK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fault_util.h"
#include "xdev.h"

#define SOAK_MAX_RANKS 16
#define SOAK_MAX_THREADS 3 /* sender threads per rank */

enum soak_kind {
    K_NAMED,  /* receives naming the source, posted ahead, some cancelled */
    K_WILD,   /* XDEV_ANY_SOURCE receives, posted ahead, some cancelled */
    K_PROBE,  /* xdev_probe/xdev_iprobe, then a receive of what was found */
    K_MPROBE, /* xdev_mprobe/xdev_improbe by two racing threads, then mrecv */
    K_COUNT
};

struct soak_run {
    uint64_t seed;
    bool faulty;
    int rank, size, nthreads;
    int nmsgs[K_COUNT];       /* messages in each stream of a kind */
    uint32_t victims;         /* ranks killed in this run (bit per rank) */
    double peer_timeout_s;
    double slack_s;        /* how late after the peer timeout a failure may be
                            * seen (XDEV_SOAK_SLACK_MS, default 2000) */
    xdev_t *dev;
};
extern struct soak_run soak;

/* Summed into the run's summary line (soak_print_summary). */
struct soak_counters {
    atomic_ullong sent_msgs, sent_bytes, recv_msgs, recv_bytes;
    atomic_ullong truncated, cancelled, cancel_late, probes, mprobes;
    atomic_ullong woken, peer_errors;
};
extern struct soak_counters soak_count;

/* What has arrived of each stream [kind][source][sender thread]: messages
 * received (whole or truncated), and whether the source's death cut it. */
extern atomic_int soak_got[K_COUNT][SOAK_MAX_RANKS][SOAK_MAX_THREADS];
extern atomic_bool soak_cut[K_COUNT][SOAK_MAX_RANKS][SOAK_MAX_THREADS];

#define SOAK_FAIL(...) fault_fail(__FILE__, __LINE__, __VA_ARGS__)

static inline bool soak_is_victim(int r)
{
    return soak.faulty && r >= 0 && r < soak.size && (soak.victims >> r & 1);
}

/* A request involving peer failed with err: allowed only as XDEV_ERR_PEER
 * from a rank this run kills. Counts and times it; reports (as `what`) and
 * returns false otherwise. since: when the request was posted or the call
 * began (fault_now), so that one posted late, after the death, is not
 * taken for one that took long to fail. */
bool soak_peer_failed(int peer, int err, const char *what, double since);

/* Is peer a killed rank that the device knows dead, with nothing matching
 * (any tag, ctx) left queued from it? Then what is missing of its streams
 * on ctx will never come, and a receiver may stop waiting for it. */
bool soak_gone(int peer, int ctx);
/* Has every stream of this kind to us on ctx either come whole, been cut,
 * or lost its sender (soak_gone)? Then its receivers may stop. */
bool soak_streams_closed(int kind, int ctx);

/* Keep waiting after xdev_wakeup (the shepherd wakes every blocked call
 * now and then); count it. */
static inline bool soak_woken(int rc)
{
    if (rc != XDEV_ERR_WOKEN)
        return false;
    atomic_fetch_add(&soak_count.woken, 1);
    return true;
}

/* A thread's own generator for choices that need not match the sender's
 * (buffer sizes, cancels, blocking or not), seeded from the run's seed. */
uint64_t soak_rand(uint64_t *state);

#endif
