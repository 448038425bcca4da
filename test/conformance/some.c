/*
 * some.c - case "some": xdev_testsome and xdev_waitsome.
 *
 *  - 10,000 receives (NULL entries among them) are completed with
 *    testsome: every request is reported exactly once, under its own
 *    index, with its own status, and reaped.
 *  - waitsome over eager and rendezvous receives blocks until at least one
 *    is done, the same way.
 *  - A list with a request that is not active, or with one request twice
 *    (pending or complete), is refused with XDEV_ERR_ARG and nothing
 *    changes: the request completes and is reaped once, and later requests
 *    are reaped as usual. An all-NULL list reports 0.
 *  - A thread in waitsome and one in xdev_wait on the same request, which
 *    a send to oneself then completes: exactly one of them reaps it (the
 *    other gets XDEV_ERR_ARG), and the device goes on reaping later
 *    requests, 300 times.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

enum { CTX_SOME = 97, NTEST = 10000, NWAIT = 64 };

static void drain(int n, xdev_request_t **ptrs, int *tags, bool wait, const char *what)
{
    int *idx = h_malloc((size_t)n * sizeof *idx), left = 0;
    xdev_status_t *st = h_malloc((size_t)n * sizeof *st);
    unsigned char *seen = calloc((size_t)n, 1);
    for (int i = 0; i < n; i++)
        left += ptrs[i] != NULL;
    while (left > 0) {
        int out = -1;
        CHECK_RC(wait ? xdev_waitsome(n, ptrs, &out, idx, st)
                      : xdev_testsome(n, ptrs, &out, idx, st));
        CHECK(out >= 0 && out <= left, "%s: outcount %d with %d left", what, out, left);
        CHECK(!wait || out > 0, "%s: waitsome returned nothing", what);
        for (int k = 0; k < out; k++) {
            int i = idx[k];
            CHECK(i >= 0 && i < n && ptrs[i] && !seen[i], "%s: index %d reported twice or "
                  "for a NULL entry", what, i);
            CHECK(k == 0 || idx[k - 1] < i, "%s: indices out of order", what);
            CHECK(st[k].error == XDEV_OK && st[k].tag == tags[i] && st[k].source == h_prev(),
                  "%s: index %d: error %d tag %d (want %d) source %d", what, i, st[k].error,
                  st[k].tag, tags[i], st[k].source);
            seen[i] = 1;
            ptrs[i] = NULL; /* reaped: as MPI sets MPI_REQUEST_NULL */
        }
        left -= out;
    }
    free(idx);
    free(st);
    free(seen);
}

static void testsome_many(void)
{
    h_phase("some: testsome over %d receives", NTEST);
    xdev_request_t *reqs = h_malloc(NTEST * sizeof *reqs);
    xdev_request_t **ptrs = h_malloc(NTEST * sizeof *ptrs);
    int *tags = h_malloc(NTEST * sizeof *tags);
    uint32_t *in = h_malloc(NTEST * sizeof *in);
    for (int i = 0; i < NTEST; i++) {
        tags[i] = i;
        ptrs[i] = i % 97 == 5 ? NULL : &reqs[i];
        if (ptrs[i])
            CHECK_RC(xdev_irecv(h_dev, &in[i], sizeof in[i], h_prev(), i, CTX_SOME, &reqs[i]));
    }
    h_barrier();
    for (uint32_t i = 0; i < NTEST; i++)
        if (i % 97 != 5)
            CHECK_RC(xdev_send(h_dev, &i, sizeof i, h_next(), (int)i, CTX_SOME));
    drain(NTEST, ptrs, tags, false, "testsome");
    for (uint32_t i = 0; i < NTEST; i++)
        CHECK(i % 97 == 5 || in[i] == i, "receive %u holds %u", i, in[i]);
    free(reqs);
    free(ptrs);
    free(tags);
    free(in);
    h_barrier();
}

static void waitsome_mixed(void)
{
    h_phase("some: waitsome over %d eager and rendezvous receives", NWAIT);
    size_t big = h_eager + 100;
    unsigned char *sb = h_malloc(big), *rb = h_malloc(big * NWAIT);
    xdev_request_t reqs[NWAIT], *ptrs[NWAIT];
    int tags[NWAIT];
    for (int i = 0; i < NWAIT; i++) {
        tags[i] = 1000 + i;
        ptrs[i] = &reqs[i];
        CHECK_RC(xdev_irecv(h_dev, rb + (size_t)i * big, big, h_prev(), tags[i], CTX_SOME, &reqs[i]));
    }
    h_barrier();
    for (int i = NWAIT - 1; i >= 0; i--) /* the last posted is sent first */
        CHECK_RC(xdev_send(h_dev, sb, i % 3 ? 10 : big, h_next(), 1000 + i, CTX_SOME));
    drain(NWAIT, ptrs, tags, true, "waitsome");
    free(sb);
    free(rb);
    h_barrier();
}

static void refused(void)
{
    h_phase("some: bad lists");
    xdev_request_t r, idle, *ptrs[3] = { &r, NULL, &idle };
    memset(&idle, 0, sizeof idle);
    int idx[3], out = 77;
    CHECK_RC(xdev_irecv(h_dev, NULL, 0, h_prev(), 5, CTX_SOME, &r));
    CHECK(xdev_testsome(3, ptrs, &out, idx, NULL) == XDEV_ERR_ARG && out == 77,
          "a list with an idle request was not refused, or changed outcount");
    /* A refusal must leave no request marked as listed: one that stopped
     * at an idle entry after pend, and one that met pend twice. pend is a
     * receive nothing sends to, so testsome can only report it pending. */
    xdev_request_t pend, *pend_idle[2] = { &pend, &idle }, *alone[1] = { &pend };
    CHECK_RC(xdev_irecv(h_dev, NULL, 0, h_rank, 7, CTX_SOME, &pend));
    CHECK(xdev_testsome(2, pend_idle, &out, idx, NULL) == XDEV_ERR_ARG, "idle entry");
    CHECK_RC(xdev_testsome(1, alone, &out, idx, NULL));
    CHECK(out == 0, "a pending receive reported done after a refusal");
    xdev_request_t *pend_twice[2] = { &pend, &pend };
    CHECK(xdev_testsome(2, pend_twice, &out, idx, NULL) == XDEV_ERR_ARG, "pend twice");
    CHECK_RC(xdev_testsome(1, alone, &out, idx, NULL));
    CHECK(out == 0, "a pending receive reported done after a refusal");
    CHECK_RC(xdev_cancel(&pend));
    xdev_status_t st;
    CHECK_RC(xdev_wait(&pend, &st));
    CHECK(st.error == XDEV_ERR_CANCELED, "pend: error %d, want cancelled", st.error);
    CHECK(xdev_testsome(1, ptrs, NULL, idx, NULL) == XDEV_ERR_ARG, "NULL outcount");
    CHECK(xdev_testsome(-1, ptrs, &out, idx, NULL) == XDEV_ERR_ARG, "n < 0");
    xdev_request_t *nulls[2] = { NULL, NULL };
    CHECK_RC(xdev_waitsome(2, nulls, &out, idx, NULL));
    CHECK(out == 0, "an all-NULL list reported %d", out);
    xdev_request_t *twice[3] = { &r, NULL, &r };
    out = 77;
    CHECK(xdev_testsome(3, twice, &out, idx, NULL) == XDEV_ERR_ARG && out == 77,
          "a list with a pending request twice was not refused, or changed outcount");
    /* r is untouched by the refusals: it still completes */
    CHECK_RC(xdev_send(h_dev, NULL, 0, h_next(), 5, CTX_SOME));
    CHECK_RC(xdev_wait(&r, &st));
    CHECK_STATUS(&st, h_prev(), 5, CTX_SOME, XDEV_OK, 0, "receive after refused lists");

    /* A complete request listed twice: reaping it twice once freed a slot
     * that a later request then held, and that request could never be
     * reaped. A receive posted before its send to ourselves completes in
     * the send. */
    char got = 0;
    CHECK_RC(xdev_irecv(h_dev, &got, 1, h_rank, 6, CTX_SOME, &r));
    CHECK_RC(xdev_send(h_dev, "x", 1, h_rank, 6, CTX_SOME));
    out = 77;
    CHECK(xdev_waitsome(3, twice, &out, idx, NULL) == XDEV_ERR_ARG && out == 77,
          "a list with a complete request twice was not refused, or changed outcount");
    /* Not marked as listed either: testsome takes it as usual. */
    alone[0] = &r;
    CHECK_RC(xdev_testsome(1, alone, &out, idx, &st));
    CHECK(out == 1 && idx[0] == 0, "the complete request was not reaped: outcount %d", out);
    CHECK_STATUS(&st, h_rank, 6, CTX_SOME, XDEV_OK, 1, "self receive after a refused list");
    CHECK(got == 'x', "self receive after a refused list got %d", got);
    CHECK(xdev_wait(&r, NULL) == XDEV_ERR_ARG, "a request reaped once was reaped again");
    xdev_request_t later[4];
    int vals[4] = { -1, -1, -1, -1 };
    for (int i = 0; i < 4; i++)
        CHECK_RC(xdev_irecv(h_dev, &vals[i], sizeof vals[i], h_rank, 10 + i, CTX_SOME, &later[i]));
    for (int i = 0; i < 4; i++)
        CHECK_RC(xdev_send(h_dev, &i, sizeof i, h_rank, 10 + i, CTX_SOME));
    for (int i = 3; i >= 0; i--) {
        CHECK_RC(xdev_wait(&later[i], &st));
        CHECK(st.tag == 10 + i && vals[i] == i, "later request %d: tag %d value %d", i, st.tag,
              vals[i]);
    }
    h_barrier();
}

struct racer {
    xdev_request_t *req;
    int rc, reaped;
    bool wrote_when_refused;
};

/* The loser of the race is refused, and as every XDEV_ERR_ARG, writes
 * nothing: not even a zero outcount. */
static void *waitsome_racer(void *arg)
{
    struct racer *w = arg;
    xdev_request_t *list[1] = { w->req };
    int idx[1], out = 77;
    w->rc = xdev_waitsome(1, list, &out, idx, NULL);
    w->reaped = w->rc == XDEV_OK ? out : 0;
    w->wrote_when_refused = w->rc == XDEV_ERR_ARG && out != 77;
    return NULL;
}

static void raced(void)
{
    h_phase("some: waitsome and xdev_wait race for one request");
    if (h_flags & XDEV_FLAG_SINGLE_THREAD)
        return;
    for (int i = 0; i < 300; i++) {
        xdev_request_t r;
        int val = 0, one = i;
        CHECK_RC(xdev_irecv(h_dev, &val, sizeof val, h_rank, 30, CTX_SOME, &r));
        struct racer w = { &r, 0, 0, false };
        pthread_t t;
        CHECK(pthread_create(&t, NULL, waitsome_racer, &w) == 0, "pthread_create");
        if (i % 2)
            h_sleep_ms(1); /* now and then the racer is asleep in waitsome */
        CHECK_RC(xdev_send(h_dev, &one, sizeof one, h_rank, 30, CTX_SOME));
        int rc = xdev_wait(&r, NULL);
        pthread_join(t, NULL);
        CHECK(rc == XDEV_OK || rc == XDEV_ERR_ARG, "xdev_wait returned %d", rc);
        CHECK(w.rc == XDEV_OK || w.rc == XDEV_ERR_ARG, "xdev_waitsome returned %d", w.rc);
        CHECK(!w.wrote_when_refused, "round %d: a refused xdev_waitsome wrote outcount", i);
        int reaps = (rc == XDEV_OK) + w.reaped;
        CHECK(reaps == 1, "round %d: the request was reaped %d times", i, reaps);
        CHECK(val == i, "round %d: received %d", i, val);
    }
    /* the slots are sound: a later request is reaped as usual */
    xdev_request_t r;
    int val = 0, seven = 7;
    CHECK_RC(xdev_irecv(h_dev, &val, sizeof val, h_rank, 31, CTX_SOME, &r));
    CHECK_RC(xdev_send(h_dev, &seven, sizeof seven, h_rank, 31, CTX_SOME));
    CHECK_RC(xdev_wait(&r, NULL));
    CHECK(val == 7, "after the races: received %d", val);
    h_barrier();
}

void case_some(void)
{
    testsome_many();
    waitsome_mixed();
    refused();
    raced();
}
