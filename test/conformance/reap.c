/*
 * reap.c - part of case "threads": a request is reaped exactly once.
 *
 * Two threads wait on one receive at the same time, round after round:
 * exactly one of them gets it (XDEV_OK and the message), the other
 * XDEV_ERR_ARG. A byte copy of an active request, and a request already
 * reaped, are refused with XDEV_ERR_ARG and change nothing: the original
 * still completes with its message, and h_finalize (which wants XDEV_OK)
 * proves the device's count of active requests is right. A receive posted
 * into a copy of an active one is a receive of its own: both complete.
 *
 * A thread in xdev_wait or xdev_waitsome whose request another thread
 * reaps, and whose storage that thread then posts again, has lost the
 * race: it returns XDEV_ERR_ARG at once, and neither waits for nor reaps
 * the new request, which stays its poster's. (They waited for it, and
 * xdev_waitsome then reaped it.)
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

enum { CTX_REAP = 81, ROUNDS = 2000, TAG_COPY = 1, TAG_NEVER = 5000, TAG_NEVER_AGAIN = 5001 };

static xdev_request_t shared_req;
static uint64_t shared_buf;
static pthread_barrier_t start, end;
static int results[2];
static xdev_status_t statuses[2];

static void *waiter(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_barrier_wait(&start);
        results[me] = xdev_wait(&shared_req, &statuses[me]);
        pthread_barrier_wait(&end);
        pthread_barrier_wait(&end); /* the main thread has checked */
    }
    return NULL;
}

static void racing_waiters(void)
{
    h_phase("threads: two threads wait on one receive, %d rounds", ROUNDS);
    pthread_t th[2];
    CHECK(pthread_barrier_init(&start, NULL, 3) == 0 && pthread_barrier_init(&end, NULL, 3) == 0,
          "pthread_barrier_init");
    for (int t = 0; t < 2; t++)
        CHECK(pthread_create(&th[t], NULL, waiter, (void *)(intptr_t)t) == 0, "pthread_create");
    for (int i = 0; i < ROUNDS; i++) {
        CHECK_RC(xdev_irecv(h_dev, &shared_buf, sizeof shared_buf, h_prev(), i, CTX_REAP,
                            &shared_req));
        pthread_barrier_wait(&start);
        uint64_t v = (uint64_t)i * 7919u + (uint64_t)h_rank;
        CHECK_RC(xdev_send(h_dev, &v, sizeof v, h_next(), i, CTX_REAP));
        pthread_barrier_wait(&end);
        int ok = (results[0] == XDEV_OK) + (results[1] == XDEV_OK);
        int refused = (results[0] == XDEV_ERR_ARG) + (results[1] == XDEV_ERR_ARG);
        CHECK(ok == 1 && refused == 1, "round %d: the two waiters returned %d and %d, want one "
              "XDEV_OK and one XDEV_ERR_ARG", i, results[0], results[1]);
        const xdev_status_t *st = &statuses[results[0] == XDEV_OK ? 0 : 1];
        CHECK_STATUS(st, h_prev(), i, CTX_REAP, XDEV_OK, sizeof shared_buf, "raced receive");
        CHECK(shared_buf == (uint64_t)i * 7919u + (uint64_t)h_prev(), "round %d: wrong payload", i);
        pthread_barrier_wait(&end);
    }
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&end);
}

static void copies_and_second_reaps(void)
{
    h_phase("threads: a copied request, a moved one and a second reap are refused");
    uint64_t in = 0, out = 0x5eed0000u + (uint64_t)h_rank;
    xdev_request_t req, copy, moved;
    xdev_status_t st;
    int done = 0;
    CHECK_RC(xdev_irecv(h_dev, &in, sizeof in, h_prev(), TAG_COPY, CTX_REAP, &req));
    memcpy(&copy, &req, sizeof req);
    CHECK(xdev_test(&copy, &done, &st) == XDEV_ERR_ARG, "xdev_test of a copy was not refused");
    CHECK(xdev_wait(&copy, &st) == XDEV_ERR_ARG, "xdev_wait of a copy was not refused");
    memcpy(&moved, &req, sizeof req);
    CHECK(xdev_wait(&moved, &st) == XDEV_ERR_ARG, "xdev_wait of a moved request was not refused");
    CHECK_RC(xdev_send(h_dev, &out, sizeof out, h_next(), TAG_COPY, CTX_REAP));
    CHECK_RC(xdev_wait(&req, &st)); /* the original, untouched by the refusals */
    CHECK_STATUS(&st, h_prev(), TAG_COPY, CTX_REAP, XDEV_OK, sizeof in, "copied receive");
    CHECK(in == 0x5eed0000u + (uint64_t)h_prev(), "wrong payload after the refused copies");
    CHECK(xdev_wait(&req, &st) == XDEV_ERR_ARG, "a second xdev_wait was not refused");
    CHECK(xdev_test(&req, &done, &st) == XDEV_ERR_ARG, "xdev_test after the reap was not refused");
    /* a copy taken while active, waited on after the original was reaped */
    CHECK(xdev_wait(&copy, &st) == XDEV_ERR_ARG, "a stale copy was reaped");
    /* and one still holding an active request's bytes is fresh storage */
    CHECK_RC(xdev_irecv(h_dev, &in, sizeof in, h_prev(), TAG_COPY, CTX_REAP, &req));
    memcpy(&copy, &req, sizeof req);
    uint64_t in2 = 0;
    CHECK_RC(xdev_irecv(h_dev, &in2, sizeof in2, h_prev(), TAG_COPY, CTX_REAP, &copy));
    CHECK_RC(xdev_send(h_dev, &out, sizeof out, h_next(), TAG_COPY, CTX_REAP));
    CHECK_RC(xdev_send(h_dev, &out, sizeof out, h_next(), TAG_COPY, CTX_REAP));
    CHECK_RC(xdev_wait(&req, &st)); /* posted first, matched first */
    CHECK_RC(xdev_wait(&copy, &st));
    CHECK(in == 0x5eed0000u + (uint64_t)h_prev() && in2 == in, "receives posted into a copy");
}

static struct {
    bool some; /* xdev_waitsome, else xdev_wait */
    int rc, outcount;
    int finished; /* atomic */
} loser;

static void *losing_waiter(void *arg)
{
    (void)arg;
    xdev_status_t st;
    if (loser.some) {
        xdev_request_t *list[1] = { &shared_req };
        int idx;
        loser.rc = xdev_waitsome(1, list, &loser.outcount, &idx, &st);
    } else {
        loser.rc = xdev_wait(&shared_req, &st);
    }
    __atomic_store_n(&loser.finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* No message is sent: both receives wait for a tag nobody sends, and the
 * main thread cancels them. */
static void reposted_while_waiting(bool some)
{
    const char *call = some ? "xdev_waitsome" : "xdev_wait";
    h_phase("threads: %s on a request another thread reaps and posts again", call);
    int exercised = 0;
    for (int i = 0; i < 3; i++) {
        loser.some = some;
        loser.rc = 12345;
        loser.finished = 0;
        CHECK_RC(xdev_irecv(h_dev, &shared_buf, sizeof shared_buf, h_prev(), TAG_NEVER, CTX_REAP,
                            &shared_req));
        pthread_t th;
        CHECK(pthread_create(&th, NULL, losing_waiter, NULL) == 0, "pthread_create");
        h_sleep_ms(100); /* past the spin and yield phases, asleep */
        CHECK_RC(xdev_cancel(&shared_req));
        int done = 0;
        xdev_status_t st;
        int rc = xdev_test(&shared_req, &done, &st);
        if (rc == XDEV_ERR_ARG) { /* the waiter reaped it first */
            pthread_join(th, NULL);
            CHECK(loser.rc == XDEV_OK, "%s of a cancelled receive returned %d", call, loser.rc);
            continue;
        }
        CHECK(rc == XDEV_OK && done, "xdev_test of a cancelled receive: %d, done %d", rc, done);
        CHECK_RC(xdev_irecv(h_dev, &shared_buf, sizeof shared_buf, h_prev(), TAG_NEVER_AGAIN,
                            CTX_REAP, &shared_req));
        double t0 = h_now();
        while (!__atomic_load_n(&loser.finished, __ATOMIC_ACQUIRE) && h_now() - t0 < 10)
            h_sleep_ms(1);
        bool returned = __atomic_load_n(&loser.finished, __ATOMIC_ACQUIRE);
        CHECK_RC(xdev_cancel(&shared_req));
        pthread_join(th, NULL);
        CHECK(returned, "%s still waited 10 s after another thread had reaped its request and "
              "posted the storage again", call);
        CHECK(loser.rc == XDEV_ERR_ARG, "%s whose request another thread reaped returned %d, "
              "want XDEV_ERR_ARG", call, loser.rc);
        CHECK(xdev_wait(&shared_req, &st) == XDEV_OK && st.error == XDEV_ERR_CANCELED,
              "the request posted again was taken from its poster");
        exercised++;
    }
    CHECK(exercised > 0, "%s reaped the cancelled receive first in every round", call);
}

void threads_reap(void)
{
    racing_waiters();
    copies_and_second_reaps();
    reposted_while_waiting(false);
    reposted_while_waiting(true);
}
