/*
 * cancel.c - case "cancel": xdev_cancel.
 *
 *  - A posted receive is cancelled: it completes with XDEV_ERR_CANCELED and
 *    count 0, xdev_peek hands it out, its buffer is never written, and the
 *    message it would have taken goes to the next receive.
 *  - Against a racing sender, round after round, a receive is either
 *    cancelled (and the message then arrives whole in a new receive) or
 *    completes whole (and the cancel said XDEV_ERR_TOO_LATE): never both,
 *    never lost, eager and rendezvous sizes.
 *  - A send to oneself still waiting for its receive is cancelled and
 *    never seen by a probe; a send to another rank is too late to cancel
 *    and completes; a completed request is too late, a reaped one ARG.
 */
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

enum { CTX_CANCEL = 95, TAG_POSTED = 1, TAG_SELF = 2, TAG_SENT = 3, TAG_RACE = 100,
       ROUNDS = 300 };

static void cancel_posted(void)
{
    h_phase("cancel: a posted receive");
    unsigned char buf[64];
    memset(buf, H_GUARD_BYTE, sizeof buf);
    xdev_request_t r, *peeked;
    xdev_status_t st;
    CHECK_RC(xdev_irecv(h_dev, buf, sizeof buf, h_prev(), TAG_POSTED, CTX_CANCEL, &r));
    CHECK_RC(xdev_cancel(&r));
    CHECK_RC(xdev_peek(h_dev, &peeked));
    CHECK(peeked == &r, "xdev_peek did not hand out the cancelled receive");
    CHECK_RC(xdev_wait(&r, &st));
    CHECK(st.error == XDEV_ERR_CANCELED && st.count == 0, "cancelled receive: error %d count %zu",
          st.error, st.count);
    CHECK(xdev_cancel(&r) == XDEV_ERR_ARG, "cancel of a reaped request");
    h_barrier(); /* only now does the sender send */
    unsigned char sb[40];
    h_fill(sb, sizeof sb, 21, h_rank);
    CHECK_RC(xdev_send(h_dev, sb, sizeof sb, h_next(), TAG_POSTED, CTX_CANCEL));
    CHECK_RC(xdev_recv(h_dev, buf, sizeof buf, h_prev(), TAG_POSTED, CTX_CANCEL, &st));
    CHECK_STATUS(&st, h_prev(), TAG_POSTED, CTX_CANCEL, XDEV_OK, sizeof sb, "after the cancel");
    CHECK_DATA(buf, sizeof sb, 21, h_prev(), "after the cancel");
    h_barrier();
}

static size_t race_len(int i) { return i % 4 == 3 ? h_eager + 100 + (size_t)i : (size_t)i * 7 % 500; }

static void spin(unsigned n)
{
    for (volatile unsigned i = 0; i < n; i++)
        ;
}

static void cancel_racing(void)
{
    h_phase("cancel: %d rounds against a racing sender", ROUNDS);
    size_t cap = race_len(3) + ROUNDS;
    unsigned char *sb = h_malloc(cap), *rb = h_malloc(cap);
    int cancelled = 0;
    srand(77 + (unsigned)h_rank);
    for (int i = 0; i < ROUNDS; i++) {
        int tag = TAG_RACE + i;
        size_t n = race_len(i);
        xdev_request_t r, s;
        xdev_status_t st;
        memset(rb, H_GUARD_BYTE, cap);
        CHECK_RC(xdev_irecv(h_dev, rb, cap, h_prev(), tag, CTX_CANCEL, &r));
        h_fill(sb, n, 3000 + (uint64_t)i, h_rank);
        CHECK_RC(xdev_isend(h_dev, sb, n, h_next(), tag, CTX_CANCEL, &s));
        spin((unsigned)rand() % 20000);
        int rc = xdev_cancel(&r);
        CHECK(rc == XDEV_OK || rc == XDEV_ERR_TOO_LATE, "round %d: xdev_cancel returned %d", i, rc);
        CHECK_RC(xdev_wait(&r, &st));
        if (rc == XDEV_OK) {
            cancelled++;
            CHECK(st.error == XDEV_ERR_CANCELED && st.count == 0,
                  "round %d: cancelled, but error %d count %zu", i, st.error, st.count);
            CHECK(h_verify_const(rb, cap, H_GUARD_BYTE) == H_GOOD,
                  "round %d: a cancelled receive's buffer was written", i);
            /* the message was not taken: a new receive gets it whole */
            CHECK_RC(xdev_recv(h_dev, rb, cap, h_prev(), tag, CTX_CANCEL, &st));
        }
        CHECK_STATUS(&st, h_prev(), tag, CTX_CANCEL, XDEV_OK, n, "raced receive");
        CHECK_DATA(rb, n, 3000 + (uint64_t)i, h_prev(), "raced receive");
        WAIT_SEND(&s, n, "raced send");
    }
    h_phase("cancel: %d of %d racing receives were cancelled", cancelled, ROUNDS);
    free(sb);
    free(rb);
    h_barrier();
}

static void cancel_sends(void)
{
    h_phase("cancel: sends");
    size_t big = h_eager + 500;
    unsigned char *b = h_malloc(big);
    h_fill(b, big, 31, h_rank);
    xdev_request_t s, r;
    xdev_status_t st;
    int found = 1;
    /* to ourselves, waiting for its receive (a synchronous one and one
     * over the eager limit both wait for theirs) */
    CHECK_RC(xdev_issend(h_dev, b, 10, h_rank, TAG_SELF, CTX_CANCEL, &s));
    CHECK_RC(xdev_cancel(&s));
    CHECK_RC(xdev_wait(&s, &st));
    CHECK(st.error == XDEV_ERR_CANCELED && st.count == 0 && st.msg_len == 10,
          "cancelled ssend to self: error %d count %zu msg_len %zu", st.error, st.count,
          st.msg_len);
    CHECK_RC(xdev_isend(h_dev, b, big, h_rank, TAG_SELF, CTX_CANCEL, &s));
    CHECK_RC(xdev_cancel(&s));
    CHECK_RC(xdev_wait(&s, &st));
    CHECK(st.error == XDEV_ERR_CANCELED && st.count == 0 && st.msg_len == big,
          "cancelled large send to self: error %d count %zu msg_len %zu", st.error, st.count,
          st.msg_len);
    CHECK_RC(xdev_iprobe(h_dev, h_rank, TAG_SELF, CTX_CANCEL, &found, &st));
    CHECK(!found, "a cancelled send to self is still there to receive");

    /* to another rank: it has begun, so it completes */
    CHECK_RC(xdev_irecv(h_dev, b, big, h_prev(), TAG_SENT, CTX_CANCEL, &r));
    h_barrier();
    CHECK_RC(xdev_isend(h_dev, b, 10, h_next(), TAG_SENT, CTX_CANCEL, &s));
    CHECK(xdev_cancel(&s) == XDEV_ERR_TOO_LATE, "a send handed to the transport was cancelled");
    WAIT_SEND(&s, 10, "send that was too late to cancel");
    CHECK_RC(xdev_wait(&r, &st));
    CHECK_STATUS(&st, h_prev(), TAG_SENT, CTX_CANCEL, XDEV_OK, 10, "receive of it");

    /* completed but not reaped: too late */
    CHECK_RC(xdev_isend(h_dev, b, 10, h_rank, TAG_SELF, CTX_CANCEL, &s));
    CHECK_RC(xdev_irecv(h_dev, b, big, h_rank, TAG_SELF, CTX_CANCEL, &r));
    CHECK(xdev_cancel(&r) == XDEV_ERR_TOO_LATE, "a completed receive was cancelled");
    CHECK_RC(xdev_wait(&r, &st));
    CHECK(st.error == XDEV_OK && st.count == 10, "receive after a late cancel: %d %zu", st.error, st.count);
    WAIT_SEND(&s, 10, "send to self");
    CHECK(xdev_cancel(NULL) == XDEV_ERR_ARG, "cancel(NULL)");
    free(b);
    h_barrier();
}

void case_cancel(void)
{
    cancel_posted();
    cancel_racing();
    cancel_sends();
}
