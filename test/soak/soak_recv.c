/* soak_recv.c - the named and wildcard receiver; see soak_recv.h. */
#include "soak_recv.h"

#include <stdlib.h>

#include "soak.h"
#include "soak_check.h"
#include "soak_msg.h"

#define NAMED_AHEAD 2
#define WILD_AHEAD 3
#define QMAX 3

enum cancel_plan { KEEP, CANCEL_NOW, CANCEL_NEXT_ROUND };

struct rslot {
    xdev_request_t req;
    unsigned char *buf;
    size_t cap;
    int k;                 /* K_NAMED: the message it is to get */
    enum cancel_plan plan;
    bool done, cancelled;
    double posted; /* fault_now() */
    xdev_status_t st;
};

/* The receives of one context (and, named, one source), oldest first. */
struct rqueue {
    struct rslot slot[QMAX];
    int head, n;
    int kind, t, src;      /* src XDEV_ANY_SOURCE for K_WILD */
    int next_k;            /* K_NAMED: the message the next receive gets */
};

static struct rqueue named[SOAK_MAX_THREADS][SOAK_MAX_RANKS], wild[SOAK_MAX_THREADS];
static uint64_t rng;

static struct rslot *tail(struct rqueue *q) { return &q->slot[(q->head + q->n - 1) % QMAX]; }

static bool named_wanted(const struct rqueue *q)
{
    return !atomic_load(&soak_cut[K_NAMED][q->src][q->t]) && q->next_k < soak.nmsgs[K_NAMED];
}

static bool wild_open(int t)
{
    for (int src = 0; src < soak.size; src++)
        if (!atomic_load(&soak_cut[K_WILD][src][t]) &&
            atomic_load(&soak_got[K_WILD][src][t]) < soak.nmsgs[K_WILD] &&
            !soak_gone(src, soak_ctx(K_WILD, t)))
            return true;
    return false;
}

/* Short buffers (truncation) one in eight; named ones otherwise fit their
 * message, now and then with room to spare. */
static size_t pick_cap(const struct rqueue *q, int k)
{
    uint64_t r = soak_rand(&rng);
    size_t len = q->kind == K_NAMED ? soak_len(K_NAMED, soak_key(q->src, soak.rank, K_NAMED, q->t, k))
                                    : SOAK_WILD_MAX_LEN;
    if (r % 8 == 0)
        return len ? (size_t)(r >> 8) % len : 0;
    if (q->kind == K_NAMED && r % 8 == 1)
        return len + (size_t)(r >> 8) % 4096;
    return len;
}

static void post(struct rqueue *q)
{
    struct rslot *sl = &q->slot[(q->head + q->n) % QMAX];
    int k = q->kind == K_NAMED ? q->next_k : -1;
    sl->cap = pick_cap(q, k);
    sl->buf = soak_rbuf(sl->cap);
    sl->k = k;
    sl->done = sl->cancelled = false;
    sl->posted = fault_now();
    uint64_t r = soak_rand(&rng) % 24;
    sl->plan = r == 0 ? CANCEL_NOW : r == 1 ? CANCEL_NEXT_ROUND : KEEP;
    int rc = xdev_irecv(soak.dev, sl->buf, sl->cap, q->src, XDEV_ANY_TAG, soak_ctx(q->kind, q->t),
                        &sl->req);
    if (rc != XDEV_OK) {
        if (!soak_peer_failed(q->src, rc, "posting a named receive", sl->posted))
            fault_abort();
        atomic_store(&soak_cut[q->kind][q->src][q->t], true);
        free(sl->buf);
        return;
    }
    q->n++;
    if (q->kind == K_NAMED)
        q->next_k++;
}

static void cancel_tail(struct rqueue *q)
{
    struct rslot *sl = tail(q);
    sl->plan = KEEP;
    if (sl->done)
        return;
    int rc = xdev_cancel(&sl->req);
    if (rc == XDEV_OK) {
        sl->cancelled = true;
        if (q->kind == K_NAMED)
            q->next_k--; /* its message goes to the next receive */
    } else if (rc == XDEV_ERR_TOO_LATE) {
        atomic_fetch_add(&soak_count.cancel_late, 1);
    } else {
        SOAK_FAIL("seed %llu: xdev_cancel of a posted receive returned %d (%s)",
                  (unsigned long long)soak.seed, rc, xdev_strerror(rc));
    }
}

static void named_done(struct rqueue *q, struct rslot *sl)
{
    atomic_bool *cut = &soak_cut[K_NAMED][q->src][q->t];
    if (sl->st.error == XDEV_ERR_PEER || (sl->st.error != XDEV_OK && sl->st.error != XDEV_ERR_TRUNCATE)) {
        soak_peer_failed(q->src, sl->st.error, "a named receive", sl->posted);
        atomic_store(cut, true);
    } else if (atomic_load(cut)) {
        SOAK_FAIL("seed %llu: a named receive from %d (thread %d) got tag %#x after one failed: "
                  "not a prefix", (unsigned long long)soak.seed, q->src, q->t, sl->st.tag);
    } else {
        soak_check_recv("named receive", q->src, K_NAMED, q->t, sl->k, &sl->st, sl->buf, sl->cap);
        atomic_fetch_add(&soak_got[K_NAMED][q->src][q->t], 1);
    }
}

static void wild_done(struct rqueue *q, struct rslot *sl)
{
    int src = sl->st.source, t = q->t;
    if (src < 0 || src >= soak.size) {
        SOAK_FAIL("seed %llu: a wildcard receive completed with error %d from source %d",
                  (unsigned long long)soak.seed, sl->st.error, src);
        return;
    }
    int due = atomic_load(&soak_got[K_WILD][src][t]);
    if (sl->st.error != XDEV_OK && sl->st.error != XDEV_ERR_TRUNCATE) {
        /* The first to fail took the message at which src's stream was
         * cut, the one due; others may have matched later ones before
         * src died. */
        bool first = !atomic_load(&soak_cut[K_WILD][src][t]);
        int k = soak_tag_seq(sl->st.tag);
        if (soak_peer_failed(src, sl->st.error, "a wildcard receive", sl->posted) &&
            (soak_tag_thread(sl->st.tag) != t || sl->st.count != 0 || (first ? k != due : k <= due)))
            SOAK_FAIL("seed %llu: a wildcard receive failed naming tag %#x count %zu of %d; "
                      "message #%d was due, %s", (unsigned long long)soak.seed, sl->st.tag,
                      sl->st.count, src, due, first ? "and the first failure must name it"
                                                    : "and failures after it must name later ones");
        atomic_store(&soak_cut[K_WILD][src][t], true);
    } else if (atomic_load(&soak_cut[K_WILD][src][t])) {
        SOAK_FAIL("seed %llu: a wildcard receive got tag %#x from %d after its stream was cut",
                  (unsigned long long)soak.seed, sl->st.tag, src);
    } else if (due >= soak.nmsgs[K_WILD]) {
        SOAK_FAIL("seed %llu: a wildcard receive got tag %#x from %d, which sent only %d "
                  "(a duplicate)", (unsigned long long)soak.seed, sl->st.tag, src, due);
    } else {
        soak_check_recv("wildcard receive", src, K_WILD, t, due, &sl->st, sl->buf, sl->cap);
        atomic_fetch_add(&soak_got[K_WILD][src][t], 1);
    }
}

/* Hand each queue's completed receives, oldest first, to their checks. */
static void drain(struct rqueue *q)
{
    while (q->n && q->slot[q->head].done) {
        struct rslot *sl = &q->slot[q->head];
        if (sl->cancelled)
            soak_check_cancelled(q->kind == K_NAMED ? "named receive" : "wildcard receive",
                                 &sl->st, sl->buf, sl->cap);
        else if (sl->st.error == XDEV_ERR_CANCELED)
            SOAK_FAIL("seed %llu: a receive that xdev_cancel did not cancel completed cancelled",
                      (unsigned long long)soak.seed);
        else if (q->kind == K_NAMED)
            named_done(q, sl);
        else
            wild_done(q, sl);
        free(sl->buf);
        q->head = (q->head + 1) % QMAX;
        q->n--;
    }
}

static void for_each_queue(void (*fn)(struct rqueue *))
{
    for (int t = 0; t < soak.nthreads; t++) {
        for (int src = 0; src < soak.size; src++)
            fn(&named[t][src]);
        fn(&wild[t]);
    }
}

static void cancel_planned(struct rqueue *q)
{
    if (q->n && tail(q)->plan == CANCEL_NEXT_ROUND)
        cancel_tail(q);
}

static bool finishing; /* every stream closed: the wildcard receives left are cancelled */

static void post_wanted(struct rqueue *q)
{
    if (finishing)
        return;
    if (q->kind == K_NAMED) {
        while (q->n < NAMED_AHEAD && named_wanted(q)) {
            post(q);
            if (q->n && tail(q)->plan == CANCEL_NOW)
                cancel_tail(q);
        }
    } else if (wild_open(q->t)) {
        while (q->n < WILD_AHEAD) {
            post(q);
            if (tail(q)->plan == CANCEL_NOW)
                cancel_tail(q);
        }
    }
}

static bool all_closed(void)
{
    for (int t = 0; t < soak.nthreads; t++) {
        for (int src = 0; src < soak.size; src++)
            if (named[t][src].n || named_wanted(&named[t][src]))
                return false;
        if (wild_open(t))
            return false;
    }
    return true;
}

static void cancel_left(struct rqueue *q)
{
    for (int i = 0; i < q->n; i++) {
        struct rslot *sl = &q->slot[(q->head + i) % QMAX];
        if (sl->done || sl->cancelled)
            continue;
        int rc = xdev_cancel(&sl->req);
        if (rc == XDEV_OK)
            sl->cancelled = true;
        else if (rc != XDEV_ERR_TOO_LATE)
            SOAK_FAIL("seed %llu: xdev_cancel of a receive left at the end returned %d",
                      (unsigned long long)soak.seed, rc);
    }
}

/* Wait for some posted receive to complete; false when none is posted. */
static bool wait_some(void)
{
    enum { MAXQ = SOAK_MAX_THREADS * (SOAK_MAX_RANKS + 1) * QMAX };
    xdev_request_t *reqs[MAXQ];
    struct rslot *slots[MAXQ];
    int n = 0;
    for (int t = 0; t < soak.nthreads; t++)
        for (int src = 0; src <= soak.size; src++) {
            struct rqueue *q = src < soak.size ? &named[t][src] : &wild[t];
            for (int i = 0; i < q->n; i++) {
                struct rslot *sl = &q->slot[(q->head + i) % QMAX];
                if (!sl->done) {
                    slots[n] = sl;
                    reqs[n++] = &sl->req;
                }
            }
        }
    if (n == 0)
        return false;
    int idx[MAXQ], out = 0;
    xdev_status_t st[MAXQ];
    int rc = xdev_waitsome(n, reqs, &out, idx, st);
    if (soak_woken(rc))
        return true;
    if (rc != XDEV_OK) {
        SOAK_FAIL("seed %llu: xdev_waitsome on receives returned %d (%s)",
                  (unsigned long long)soak.seed, rc, xdev_strerror(rc));
        fault_abort();
    }
    for (int j = 0; j < out; j++) {
        slots[idx[j]]->done = true;
        slots[idx[j]]->st = st[j];
    }
    return true;
}

void *soak_receiver(void *arg)
{
    (void)arg;
    rng = soak.seed ^ 0x5eceu ^ ((uint64_t)soak.rank << 40);
    for (int t = 0; t < soak.nthreads; t++) {
        for (int src = 0; src < soak.size; src++)
            named[t][src] = (struct rqueue){ .kind = K_NAMED, .t = t, .src = src };
        wild[t] = (struct rqueue){ .kind = K_WILD, .t = t, .src = XDEV_ANY_SOURCE };
    }
    for (;;) {
        for_each_queue(cancel_planned);
        for_each_queue(post_wanted);
        if (!finishing && all_closed()) {
            finishing = true;
            for_each_queue(cancel_left);
        }
        if (!wait_some())
            break;
        for_each_queue(drain);
    }
    return NULL;
}
