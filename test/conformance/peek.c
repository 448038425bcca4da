/*
 * peek.c - case "peek": every completion is handed out exactly once.
 *
 * xdev_peek hands out each completed request of the device once, all of
 * them eventually, and the request then reaps at once with xdev_test or
 * xdev_wait. A request reaped before it was peeked is never handed out.
 * Several threads peeking on one device together get every completion
 * exactly once. The requests that blocking calls make for themselves are
 * never handed out.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

enum { CTX_PEEK = 70 };

/* A set of n/2 receives from prev and n/2 sends to next, tag = index. */
struct set {
    int n;
    uint64_t seed;
    xdev_request_t *req;
    unsigned char **buf;
    xdev_status_t *st;
};

static size_t len_of(int i)
{
    size_t rndz = h_eager + 4096 > 256 * KiB ? h_eager + 4096 : 256 * KiB;
    return i % 8 == 7 ? rndz : (size_t)i * 10;
}

static int is_recv(const struct set *s, int i) { return i < s->n / 2; }
static int tag_of(const struct set *s, int i) { return is_recv(s, i) ? i : i - s->n / 2; }
static void *cookie(const struct set *s, int i) { return (char *)s->buf + i; }

static void set_alloc(struct set *s, int n, uint64_t seed)
{
    s->n = n;
    s->seed = seed;
    s->req = h_malloc(sizeof *s->req * (size_t)n);
    s->buf = h_malloc(sizeof *s->buf * (size_t)n);
    s->st = h_malloc(sizeof *s->st * (size_t)n);
    for (int i = 0; i < n; i++) {
        s->buf[i] = h_malloc(len_of(tag_of(s, i)));
        if (!is_recv(s, i))
            h_fill(s->buf[i], len_of(tag_of(s, i)), seed + (uint64_t)tag_of(s, i), h_rank);
        else /* shows in a failure if a receive completes unwritten */
            memset(s->buf[i], 0xDB, len_of(tag_of(s, i)));
    }
}

static void set_post(struct set *s, int from, int to)
{
    for (int i = from; i < to; i++) {
        int t = tag_of(s, i);
        s->req[i].user = cookie(s, i);
        if (is_recv(s, i))
            CHECK_RC(xdev_irecv(h_dev, s->buf[i], len_of(t), h_prev(), t, CTX_PEEK, &s->req[i]));
        else
            CHECK_RC(xdev_isend(h_dev, s->buf[i], len_of(t), h_next(), t, CTX_PEEK, &s->req[i]));
    }
}

/* Index of r in s, or -1. */
static int index_of(const struct set *s, const xdev_request_t *r)
{
    uintptr_t a = (uintptr_t)r, b = (uintptr_t)s->req;
    if (a < b || a >= b + sizeof *s->req * (size_t)s->n || (a - b) % sizeof *s->req)
        return -1;
    return (int)((a - b) / sizeof *s->req);
}

/* Check a reaped request's status and data. */
static void set_check(const struct set *s, int i)
{
    int t = tag_of(s, i);
    char what[64];
    snprintf(what, sizeof what, "%s #%d (tag %d)", is_recv(s, i) ? "receive" : "send", i, t);
    if (is_recv(s, i)) {
        CHECK_STATUS(&s->st[i], h_prev(), t, CTX_PEEK, XDEV_OK, len_of(t), what);
        CHECK_DATA(s->buf[i], len_of(t), s->seed + (uint64_t)t, h_prev(), what);
    } else {
        CHECK_SEND_STATUS(&s->st[i], len_of(t), what);
        memset(s->buf[i], 0xEE, len_of(t)); /* reaped: the buffer is ours again */
    }
    CHECK(s->req[i].user == cookie(s, i), "%s: request's user field changed", what);
}

static void set_free(struct set *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->buf[i]);
    free(s->req), free(s->buf), free(s->st);
}

/* Peek `count` times; every request handed out must be in s, not yet handed
 * out, and (if only_even) even-indexed. Marks them in `handed`. */
static void peek_n(struct set *s, int count, char *handed, int only_even)
{
    for (int k = 0; k < count; k++) {
        xdev_request_t *r = NULL;
        h_phase("peek: peek %d of %d", k + 1, count);
        CHECK_RC(xdev_peek(h_dev, &r));
        int i = index_of(s, r);
        CHECK(i >= 0, "xdev_peek handed out %p, which is none of the %d requests posted now "
              "(an older, already reaped request?)", (void *)r, s->n);
        CHECK(!handed[i], "xdev_peek handed out request #%d twice", i);
        CHECK(!only_even || i % 2 == 0, "xdev_peek handed out request #%d, already reaped by "
              "xdev_wait", i);
        CHECK(r->user == cookie(s, i), "request #%d: user field changed", i);
        handed[i] = 1;
    }
}

/* Reap every handed-out request with xdev_test (even) or xdev_wait (odd):
 * both must find it complete at once. */
static void reap_handed(struct set *s, const char *handed)
{
    for (int i = 0; i < s->n; i++) {
        if (!handed[i])
            continue;
        if (i % 2 == 0) {
            int done = 0;
            CHECK_RC(xdev_test(&s->req[i], &done, &s->st[i]));
            CHECK(done == 1, "request #%d was handed out by xdev_peek but xdev_test says not done",
                  i);
        } else {
            double t0 = h_now();
            CHECK_RC(xdev_wait(&s->req[i], &s->st[i]));
            CHECK(h_now() - t0 < 5, "xdev_wait on peeked request #%d took %.1f s", i, h_now() - t0);
        }
        set_check(s, i);
    }
}

static void single_thread(void)
{
    h_phase("peek: single thread");
    struct set s;
    set_alloc(&s, 128, 100);
    char *handed = calloc((size_t)s.n, 1);
    CHECK(handed != NULL, "calloc");
    h_barrier();
    set_post(&s, 0, s.n);
    peek_n(&s, s.n, handed, 0);
    reap_handed(&s, handed);
    free(handed);
    set_free(&s);
    h_barrier();
}

/* A set reaped entirely by wait, then a fresh set: peek must hand out only
 * the fresh set's requests. Then half of a set reaped by wait: peek hands
 * out only the other half. */
static void reaped_first(void)
{
    h_phase("peek: reaped before peeked (whole set)");
    struct set a, b;
    set_alloc(&a, 32, 200);
    set_alloc(&b, 32, 300);
    char *handed = calloc(32, 1);
    CHECK(handed != NULL, "calloc");
    h_barrier();
    set_post(&a, 0, a.n);
    for (int i = 0; i < a.n; i++) {
        CHECK_RC(xdev_wait(&a.req[i], &a.st[i]));
        set_check(&a, i);
    }
    h_barrier(); /* its own requests are reaped by wait as well */
    set_post(&b, 0, b.n);
    peek_n(&b, b.n, handed, 0);
    reap_handed(&b, handed);
    set_free(&a);
    set_free(&b);

    h_phase("peek: reaped before peeked (odd half)");
    struct set c;
    set_alloc(&c, 64, 400);
    char *handed_c = calloc(64, 1);
    CHECK(handed_c != NULL, "calloc");
    h_barrier();
    set_post(&c, 0, c.n);
    for (int i = 1; i < c.n; i += 2) {
        CHECK_RC(xdev_wait(&c.req[i], &c.st[i]));
        set_check(&c, i);
    }
    peek_n(&c, c.n / 2, handed_c, 1);
    reap_handed(&c, handed_c);
    free(handed), free(handed_c);
    set_free(&c);
    h_barrier();
}

/* Threads peeking (and reaping what they got) on one device at once. */
enum { NTHREADS = 4 };
static struct set tset;
static atomic_int claimed;
static atomic_char *tseen;
static int per_thread[NTHREADS];

static void *peeker(void *arg)
{
    int id = (int)(intptr_t)arg;
    while (atomic_fetch_add(&claimed, 1) < tset.n) {
        xdev_request_t *r = NULL;
        CHECK_RC(xdev_peek(h_dev, &r));
        int i = index_of(&tset, r);
        CHECK(i >= 0, "thread %d: xdev_peek handed out %p, not one of ours", id, (void *)r);
        CHECK(atomic_exchange(&tseen[i], 1) == 0,
              "thread %d: request #%d was handed out twice (to two threads or twice to one)", id, i);
        CHECK_RC(xdev_wait(r, &tset.st[i]));
        per_thread[id]++;
    }
    return NULL;
}

static void threads_peek(void)
{
    h_phase("peek: %d threads peeking at once", NTHREADS);
    CHECK(!(h_flags & XDEV_FLAG_SINGLE_THREAD), "this case needs a multi-threaded device, but "
          "the environment asks for XDEV_FLAG_SINGLE_THREAD");
    set_alloc(&tset, 400, 500);
    tseen = calloc((size_t)tset.n, sizeof *tseen);
    CHECK(tseen != NULL, "calloc");
    atomic_store(&claimed, 0);
    h_barrier();
    /* half posted before the threads start, half while they peek */
    set_post(&tset, 0, tset.n / 4);
    set_post(&tset, tset.n / 2, tset.n / 2 + tset.n / 4);
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++)
        CHECK(pthread_create(&th[t], NULL, peeker, (void *)(intptr_t)t) == 0, "pthread_create");
    set_post(&tset, tset.n / 4, tset.n / 2);
    set_post(&tset, tset.n / 2 + tset.n / 4, tset.n);
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
    int total = 0;
    for (int t = 0; t < NTHREADS; t++)
        total += per_thread[t];
    CHECK(total == tset.n, "threads reaped %d requests, want %d", total, tset.n);
    for (int i = 0; i < tset.n; i++) {
        CHECK(atomic_load(&tseen[i]) == 1, "request #%d was never handed out", i);
        set_check(&tset, i);
    }
    free(tseen);
    set_free(&tset);
    h_barrier();
}

/* A thread peeks while the main thread makes blocking calls whose own
 * requests complete (rendezvous sends, synchronous sends, receives, and
 * receives of claimed messages): the
 * first request it is handed must be the one nonblocking receive posted
 * afterwards, not one living in another thread's stack frame. */
static xdev_request_t *first_peeked;

static void *peek_once(void *arg)
{
    (void)arg;
    CHECK_RC(xdev_peek(h_dev, &first_peeked));
    return NULL;
}

/* xdev_mrecv of what xdev_mprobe claimed: a blocking call too. */
static void claimed_recv(unsigned char *buf, size_t len)
{
    xdev_message_t m;
    xdev_status_t st;
    CHECK_RC(xdev_mprobe(h_dev, h_prev(), 4, CTX_PEEK + 1, &m, &st));
    CHECK_RC(xdev_mrecv(h_dev, buf, len, &m, NULL));
}

static void blocking_unseen(void)
{
    h_phase("peek: the requests of blocking calls are never handed out");
    CHECK(!(h_flags & XDEV_FLAG_SINGLE_THREAD), "this case needs a multi-threaded device, but "
          "the environment asks for XDEV_FLAG_SINGLE_THREAD");
    enum { ROUNDS = 200 };
    size_t big = h_eager + 1;
    unsigned char *sb = h_malloc(big), *rb = h_malloc(big), one = 1, got = 0;
    h_fill(sb, big, 900, h_rank);
    h_barrier();
    first_peeked = NULL;
    pthread_t th;
    CHECK(pthread_create(&th, NULL, peek_once, NULL) == 0, "pthread_create");
    for (int i = 0; i < ROUNDS; i++) {
        if (h_rank % 2 == 0) {
            CHECK_RC(xdev_send(h_dev, sb, big, h_next(), 1, CTX_PEEK + 1));
            CHECK_RC(xdev_ssend(h_dev, sb, 8, h_next(), 2, CTX_PEEK + 1));
            CHECK_RC(xdev_send(h_dev, sb, big, h_next(), 4, CTX_PEEK + 1));
            CHECK_RC(xdev_recv(h_dev, rb, big, h_prev(), 1, CTX_PEEK + 1, NULL));
            CHECK_RC(xdev_recv(h_dev, rb, 8, h_prev(), 2, CTX_PEEK + 1, NULL));
            claimed_recv(rb, big);
        } else {
            CHECK_RC(xdev_recv(h_dev, rb, big, h_prev(), 1, CTX_PEEK + 1, NULL));
            CHECK_RC(xdev_recv(h_dev, rb, 8, h_prev(), 2, CTX_PEEK + 1, NULL));
            claimed_recv(rb, big);
            CHECK_RC(xdev_send(h_dev, sb, big, h_next(), 1, CTX_PEEK + 1));
            CHECK_RC(xdev_ssend(h_dev, sb, 8, h_next(), 2, CTX_PEEK + 1));
            CHECK_RC(xdev_send(h_dev, sb, big, h_next(), 4, CTX_PEEK + 1));
        }
    }
    xdev_request_t last;
    CHECK_RC(xdev_irecv(h_dev, &got, 1, h_prev(), 3, CTX_PEEK + 1, &last));
    CHECK_RC(xdev_send(h_dev, &one, 1, h_next(), 3, CTX_PEEK + 1));
    pthread_join(th, NULL);
    CHECK(first_peeked == &last, "xdev_peek handed out %p, want the posted receive %p",
          (void *)first_peeked, (void *)&last);
    CHECK_RC(xdev_wait(&last, NULL));
    CHECK(got == 1, "the posted receive got %d, want 1", got);
    free(sb), free(rb);
    h_barrier();
}

void case_peek(void)
{
    single_thread();
    reaped_first();
    threads_peek();
    blocking_unseen();
}
