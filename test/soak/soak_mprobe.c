/* soak_mprobe.c - the racing matched-probe receivers; see soak_mprobe.h. */
#include "soak_mprobe.h"

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#include "soak.h"
#include "soak_check.h"
#include "soak_msg.h"

static atomic_uchar *seen;                                /* [src][t][k]: times received */
static atomic_int cut_at[SOAK_MAX_RANKS][SOAK_MAX_THREADS]; /* -1, or the message that failed */

static atomic_uchar *seen_of(int src, int t, int k)
{
    return &seen[((size_t)src * soak.nthreads + (size_t)t) * (size_t)soak.nmsgs[K_MPROBE] + (size_t)k];
}

void soak_mprobe_init(void)
{
    seen = calloc((size_t)soak.size * soak.nthreads * soak.nmsgs[K_MPROBE], 1);
    for (int src = 0; src < SOAK_MAX_RANKS; src++)
        for (int t = 0; t < SOAK_MAX_THREADS; t++)
            atomic_init(&cut_at[src][t], -1);
}

/* src's message k of thread t failed (its marker, or a claimed message
 * whose data never all came): nothing more of src on this context. The
 * racing threads may see later messages that had arrived in part fail
 * first; the stream was cut at the earliest. */
static void cut(int src, int t, int k)
{
    int at = atomic_load(&cut_at[src][t]);
    while ((at < 0 || k < at) && !atomic_compare_exchange_weak(&cut_at[src][t], &at, k))
        ;
    for (int u = 0; u < soak.nthreads; u++)
        atomic_store(&soak_cut[K_MPROBE][src][u], true);
}

/* Receive the claimed message (src, t, k) by handle. */
static void receive(xdev_message_t *msg, const xdev_status_t *found, int src, int t, int k,
                    uint64_t *rng)
{
    uint64_t r = soak_rand(rng);
    size_t cap = r % 8 == 0 && found->count ? (size_t)(r >> 8) % found->count : found->count;
    unsigned char *buf = soak_rbuf(cap);
    xdev_status_t st;
    int rc;
    double since = fault_now();
    if (r & 16) {
        rc = xdev_mrecv(soak.dev, buf, cap, msg, &st); /* matched: never woken */
    } else {
        xdev_request_t req;
        if ((rc = xdev_imrecv(soak.dev, buf, cap, msg, &req)) == XDEV_OK) {
            while (soak_woken(rc = xdev_wait(&req, &st)))
                ;
            if (rc == XDEV_OK)
                rc = st.error;
        }
    }
    if (rc != XDEV_OK && rc != XDEV_ERR_TRUNCATE) {
        if (soak_peer_failed(src, rc, "the receive of a claimed message", since))
            cut(src, t, k);
    } else if (rc != st.error) {
        SOAK_FAIL("seed %llu: receiving a claimed message returned %d but status.error %d",
                  (unsigned long long)soak.seed, rc, st.error);
    } else {
        soak_check_recv("claimed receive", src, K_MPROBE, t, k, &st, buf, cap);
        if (atomic_fetch_add(seen_of(src, t, k), 1) != 0)
            SOAK_FAIL("seed %llu: message #%d of (src %d, thread %d) was claimed and received "
                      "twice", (unsigned long long)soak.seed, k, src, t);
        atomic_fetch_add(&soak_got[K_MPROBE][src][t], 1);
    }
    free(buf);
}

/* What this thread claimed last of each stream: claims come in order. */
struct claimer {
    int last[SOAK_MAX_RANKS][SOAK_MAX_THREADS];
    uint64_t rng;
};

static void claimed(struct claimer *c, xdev_message_t *msg, const xdev_status_t *st, int ctx)
{
    int src = st->source, t = soak_tag_thread(st->tag), k = soak_tag_seq(st->tag);
    if (src < 0 || src >= soak.size || t < 0 || t >= soak.nthreads || k >= soak.nmsgs[K_MPROBE] ||
        k <= c->last[src][t] || st->ctx != ctx ||
        st->count != soak_len(K_MPROBE, soak_key(src, soak.rank, K_MPROBE, t, k))) {
        SOAK_FAIL("seed %llu: claimed source %d tag %#x ctx %d, %zu bytes; this thread's last "
                  "claim of that stream was #%d", (unsigned long long)soak.seed, src, st->tag,
                  st->ctx, st->count,
                  src >= 0 && src < soak.size && t >= 0 && t < soak.nthreads ? c->last[src][t] : -1);
        fault_abort();
    }
    c->last[src][t] = k;
    receive(msg, st, src, t, k, &c->rng);
}

void *soak_mprober(void *arg)
{
    struct claimer c;
    c.rng = soak.seed ^ 0x3b0beu ^ ((uint64_t)soak.rank << 40) ^ (uint64_t)(intptr_t)arg;
    for (int src = 0; src < SOAK_MAX_RANKS; src++)
        for (int t = 0; t < SOAK_MAX_THREADS; t++)
            c.last[src][t] = -1;
    int ctx = soak_ctx(K_MPROBE, 0);
    double since = fault_now(); /* looking for the next message since */
    while (!soak_streams_closed(K_MPROBE, ctx)) {
        xdev_message_t msg;
        xdev_status_t st = { .source = -1, .error = 1 }; /* unlike any status a probe fills */
        int rc, found = 1;
        if (soak_rand(&c.rng) % 2) {
            if (soak_woken(rc = xdev_mprobe(soak.dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, ctx, &msg, &st)))
                continue;
        } else {
            rc = xdev_improbe(soak.dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, ctx, &found, &msg, &st);
        }
        if (rc == XDEV_OK && !found) {
            sched_yield();
            continue;
        }
        atomic_fetch_add(&soak_count.mprobes, 1);
        double looked = since;
        since = fault_now();
        if (rc == XDEV_OK) {
            claimed(&c, &msg, &st, ctx);
        } else if (rc == XDEV_ERR_PEER && st.error == XDEV_ERR_PEER && st.count == 0 &&
                   st.source >= 0 && st.source < soak.size) {
            /* a cut marker, consumed */
            int t = soak_tag_thread(st.tag);
            if (soak_peer_failed(st.source, rc, "a matched probe", looked) && t >= 0 &&
                t < soak.nthreads)
                cut(st.source, t, soak_tag_seq(st.tag));
        } else {
            SOAK_FAIL("seed %llu: a matched probe returned %d (%s), status error %d source %d",
                      (unsigned long long)soak.seed, rc, xdev_strerror(rc), st.error, st.source);
            fault_abort();
        }
    }
    return NULL;
}

void soak_mprobe_check(void)
{
    for (int src = 0; src < soak.size; src++)
        for (int t = 0; t < soak.nthreads; t++) {
            int got = atomic_load(&soak_got[K_MPROBE][src][t]), at = atomic_load(&cut_at[src][t]);
            for (int k = 0; k < soak.nmsgs[K_MPROBE]; k++)
                if (atomic_load(seen_of(src, t, k)) != (k < got))
                    SOAK_FAIL("seed %llu: of (src %d, thread %d) %d messages were received by "
                              "claim, but #%d %s", (unsigned long long)soak.seed, src, t, got, k,
                              k < got ? "was not: not a prefix" : "was");
            if (at >= 0 && at != got)
                SOAK_FAIL("seed %llu: the stream (src %d, thread %d) was cut at #%d, after %d "
                          "had come", (unsigned long long)soak.seed, src, t, at, got);
        }
    free(seen);
}
