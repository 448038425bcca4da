/*
 * outstanding.c - case "outstanding": 10,000 receives outstanding at once.
 *
 * Every rank posts 10,000 specific receives from its ring predecessor in a
 * shuffled tag order plus 100 (source, ANY_TAG) receives behind them, while
 * the predecessor sends 10,000 + 100 messages; all requests are completed
 * in a shuffled order with xdev_wait and xdev_test, and every message is
 * checked. Once with the receives posted first, once with the messages sent
 * first (unexpected). A send's buffer is overwritten as soon as the send
 * completes. Matching must stay fast: each phase is timed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

enum { CTX_MANY = 90, NSPEC = 10000, NWILD = 100, NMSG = NSPEC + NWILD, SLOT = 128 };
#define PHASE_LIMIT_S 30.0

static size_t len_of(int tag) { return (size_t)(tag * 7 % (SLOT - 8)); }
/* Message k (in send order) carries tag k for k < NSPEC, then 20000 + ... */
static int tag_of_msg(int k) { return k < NSPEC ? k : 20000 + (k - NSPEC); }

struct phase {
    xdev_request_t *rq, *sq;
    unsigned char *rbuf, *sbuf;
    int *rtag; /* the tag receive i asked for, XDEV_ANY_TAG for the last NWILD */
};

static void post_recvs(struct phase *p)
{
    for (int i = 0; i < NMSG; i++)
        CHECK_RC(xdev_irecv(h_dev, p->rbuf + (size_t)i * SLOT, SLOT, h_prev(), p->rtag[i],
                            CTX_MANY, &p->rq[i]));
}

static void post_sends(struct phase *p)
{
    for (int k = 0; k < NMSG; k++) {
        int tag = tag_of_msg(k);
        unsigned char *b = p->sbuf + (size_t)k * SLOT;
        h_fill(b, len_of(tag), (uint64_t)tag, h_rank);
        CHECK_RC(xdev_isend(h_dev, b, len_of(tag), h_next(), tag, CTX_MANY, &p->sq[k]));
    }
}

static void check_done(struct phase *p, int idx, const xdev_status_t *st)
{
    if (idx >= NMSG) {
        int k = idx - NMSG;
        CHECK_SEND_STATUS(st, len_of(tag_of_msg(k)), "one of 10,100 sends");
        /* a completed send's buffer is ours again: scribbling on it must
         * not change what the receiver gets */
        memset(p->sbuf + (size_t)k * SLOT, 0xEE, SLOT);
        return;
    }
    /* the wildcard receives come after all specific ones: the i-th of them
     * gets the i-th message no specific receive matches */
    int want = p->rtag[idx] == XDEV_ANY_TAG ? 20000 + (idx - NSPEC) : p->rtag[idx];
    char what[64];
    snprintf(what, sizeof what, "receive #%d (tag %d)", idx, p->rtag[idx]);
    CHECK_STATUS(st, h_prev(), want, CTX_MANY, XDEV_OK, len_of(want), what);
    CHECK_DATA(p->rbuf + (size_t)idx * SLOT, st->count, (uint64_t)want, h_prev(), what);
}

/* Complete all 2 * NMSG requests in a shuffled order: one in three with
 * xdev_wait, the rest by passes of xdev_test. */
static void complete_all(struct phase *p, h_rng_t *rng)
{
    int n = 2 * NMSG, left = n;
    int *order = h_malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        order[i] = i;
    h_shuffle(order, (size_t)n, rng);
    while (left > 0) {
        int kept = 0;
        for (int j = 0; j < left; j++) {
            int idx = order[j], done = 0;
            xdev_request_t *r = idx < NMSG ? &p->rq[idx] : &p->sq[idx - NMSG];
            xdev_status_t st;
            if (idx % 3 == 0) {
                CHECK_RC(xdev_wait(r, &st));
                done = 1;
            } else {
                CHECK_RC(xdev_test(r, &done, &st));
            }
            if (done)
                check_done(p, idx, &st);
            else
                order[kept++] = idx;
        }
        left = kept;
    }
    free(order);
}

static void run(int prepost, h_rng_t *rng)
{
    h_phase("outstanding: %d receives, %s", NMSG, prepost ? "posted first" : "messages first");
    struct phase p;
    p.rq = h_malloc(sizeof *p.rq * NMSG);
    p.sq = h_malloc(sizeof *p.sq * NMSG);
    p.rbuf = h_malloc((size_t)NMSG * SLOT);
    p.sbuf = h_malloc((size_t)NMSG * SLOT);
    p.rtag = h_malloc(sizeof(int) * NMSG);
    for (int i = 0; i < NSPEC; i++)
        p.rtag[i] = i;
    h_shuffle(p.rtag, NSPEC, rng);
    for (int i = NSPEC; i < NMSG; i++)
        p.rtag[i] = XDEV_ANY_TAG;

    h_barrier();
    double t0 = h_now();
    if (prepost) {
        post_recvs(&p);
        h_barrier();
        post_sends(&p);
    } else {
        post_sends(&p);
        post_recvs(&p);
    }
    complete_all(&p, rng);
    double dt = h_now() - t0;
    if (h_rank == 0)
        printf("outstanding: %s: %d messages each way per rank in %.2f s\n",
               prepost ? "posted first" : "messages first", NMSG, dt);
    CHECK(dt < PHASE_LIMIT_S, "%d outstanding receives took %.1f s (limit %.0f s)", NMSG, dt,
          PHASE_LIMIT_S);
    free(p.rq), free(p.sq), free(p.rbuf), free(p.sbuf), free(p.rtag);
    h_barrier();
}

void case_outstanding(void)
{
    h_rng_t rng = {0x1234u + (uint64_t)h_rank};
    run(1, &rng);
    run(0, &rng);
}
