/* soak_probe.c - the probing receiver; see soak_probe.h. */
#include "soak_probe.h"

#include <sched.h>
#include <stdlib.h>

#include "soak.h"
#include "soak_check.h"
#include "soak_msg.h"

static void cut(int src)
{
    for (int t = 0; t < soak.nthreads; t++)
        atomic_store(&soak_cut[K_PROBE][src][t], true);
}

/* What a probe found, naming (src, t, k): is it the message due? */
static void check_found(const xdev_status_t *st, int src, int t, int k, int due, int ctx)
{
    size_t len = soak_len(K_PROBE, soak_key(src, soak.rank, K_PROBE, t, k));
    if (atomic_load(&soak_cut[K_PROBE][src][t]) || k != due || k >= soak.nmsgs[K_PROBE] ||
        st->ctx != ctx || st->count != len || st->msg_len != len) {
        SOAK_FAIL("seed %llu: a probe found message #%d of (src %d, thread %d), %zu bytes "
                  "(msg_len %zu) on ctx %d; due: #%d of %d, %zu bytes%s",
                  (unsigned long long)soak.seed, k, src, t, st->count, st->msg_len, st->ctx, due,
                  soak.nmsgs[K_PROBE], len,
                  atomic_load(&soak_cut[K_PROBE][src][t]) ? ", and nothing after the cut" : "");
        fault_abort(); /* the probe would find it again and again */
    }
}

/* found: what a probe found, having looked since `since` (fault_now). */
static void take(const xdev_status_t *found, uint64_t *rng, int ctx, double since)
{
    int src = found->source, t = soak_tag_thread(found->tag), k = soak_tag_seq(found->tag);
    if (src < 0 || src >= soak.size || t < 0 || t >= soak.nthreads) {
        SOAK_FAIL("seed %llu: a probe found source %d tag %#x", (unsigned long long)soak.seed,
                  src, found->tag);
        fault_abort();
    }
    int due = atomic_load(&soak_got[K_PROBE][src][t]);
    xdev_status_t st;
    int rc;
    if (found->error != XDEV_OK) {
        /* The first is the message at which src was cut, the one due on
         * its stream; others of src may have arrived in part before. */
        bool first = !atomic_load(&soak_cut[K_PROBE][src][t]);
        if (soak_peer_failed(src, found->error, "a probe", since) &&
            (found->count != 0 || (first ? k != due : k < due)))
            SOAK_FAIL("seed %llu: a probe found a failed message of %d, #%d of thread %d (count "
                      "%zu), where #%d was due%s", (unsigned long long)soak.seed, src, k, t,
                      found->count, due, first ? " (the first failure must be it)" : "");
        unsigned char none;
        while (soak_woken(rc = xdev_recv(soak.dev, &none, 0, src, found->tag, ctx, &st)))
            ;
        if (rc != XDEV_ERR_PEER || st.error != XDEV_ERR_PEER)
            SOAK_FAIL("seed %llu: the receive of the cut marker of %d returned %d, error %d",
                      (unsigned long long)soak.seed, src, rc, st.error);
        cut(src);
        return;
    }
    check_found(found, src, t, k, due, ctx);
    uint64_t r = soak_rand(rng);
    size_t cap = r % 8 == 0 && found->count ? (size_t)(r >> 8) % found->count : found->count;
    unsigned char *buf = soak_rbuf(cap);
    since = fault_now();
    while (soak_woken(rc = xdev_recv(soak.dev, buf, cap, src, found->tag, ctx, &st)))
        ;
    if (rc != st.error) {
        SOAK_FAIL("seed %llu: xdev_recv returned %d but status.error %d",
                  (unsigned long long)soak.seed, rc, st.error);
    } else if (rc != XDEV_OK && rc != XDEV_ERR_TRUNCATE) {
        soak_peer_failed(src, rc, "the receive of a probed message", since);
        cut(src);
    } else {
        soak_check_recv("probed receive", src, K_PROBE, t, k, &st, buf, cap);
        atomic_fetch_add(&soak_got[K_PROBE][src][t], 1);
    }
    free(buf);
}

void *soak_prober(void *arg)
{
    (void)arg;
    uint64_t rng = soak.seed ^ 0x9b0beu ^ ((uint64_t)soak.rank << 40);
    int ctx = soak_ctx(K_PROBE, 0);
    double since = fault_now(); /* looking for the next message since */
    while (!soak_streams_closed(K_PROBE, ctx)) {
        xdev_status_t st = { .source = -1, .error = 1 }; /* unlike any status xdev_probe fills */
        int rc, found = 1;
        if (soak_rand(&rng) % 2) {
            if (soak_woken(rc = xdev_probe(soak.dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, ctx, &st)))
                continue;
            if (rc != XDEV_OK && rc != st.error) {
                SOAK_FAIL("seed %llu: xdev_probe returned %d (%s)", (unsigned long long)soak.seed,
                          rc, xdev_strerror(rc));
                fault_abort();
            }
        } else if ((rc = xdev_iprobe(soak.dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, ctx, &found, &st)) !=
                   XDEV_OK) {
            SOAK_FAIL("seed %llu: xdev_iprobe returned %d", (unsigned long long)soak.seed, rc);
            fault_abort();
        }
        if (!found) {
            sched_yield();
            continue;
        }
        atomic_fetch_add(&soak_count.probes, 1);
        take(&st, &rng, ctx, since);
        since = fault_now();
    }
    return NULL;
}
