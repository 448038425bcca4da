/*
 * truncate.c - case "truncate": a message longer than the receive buffer.
 *
 * It fills the buffer, completes with status.error == XDEV_ERR_TRUNCATE and
 * status.count == buffer length, status.msg_len == the message's length
 * (xdev_recv returns XDEV_ERR_TRUNCATE too),
 * guard bytes on both sides of the buffer stay untouched, and the next
 * message on the same pair still arrives intact. Eager and rendezvous
 * sizes; receives posted before and after the message; irecv and recv.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

enum { CTX_TRUNC = 50, TAG = 9, GUARD = 64 };

struct trial {
    size_t len; /* message */
    size_t cap; /* receive buffer */
};

static int trials(struct trial *t)
{
    size_t e = h_eager;
    size_t big = e + 4096 > 1 * MiB ? e + 4096 : 1 * MiB;
    int n = 0;
    t[n++] = (struct trial){1, 0};
    t[n++] = (struct trial){100, 10};
    if (e > 1) /* eager, one byte too long */
        t[n++] = (struct trial){e, e - 1};
    t[n++] = (struct trial){e + 1, e};       /* rendezvous into eager-limit buffer */
    t[n++] = (struct trial){big, 1000};      /* rendezvous into a small buffer */
    t[n++] = (struct trial){4 * big + 3, big}; /* rendezvous into a big buffer */
    return n;
}

/* mode 0: irecv posted first; 1: irecv after the send; 2: blocking recv after the send */
static void run(const struct trial *t, int mode, uint64_t seed)
{
    static const char *modes[3] = {"irecv posted first", "irecv posted late", "blocking recv"};
    h_phase("truncate: %zu-byte message into %zu-byte buffer, %s", t->len, t->cap, modes[mode]);
    char what[128];
    snprintf(what, sizeof what, "%zu-byte message into %zu-byte buffer (%s)", t->len, t->cap,
             modes[mode]);

    /* the follow-up message alternates between eager and rendezvous size */
    size_t next_len = seed & 1 ? 500 : 300 * KiB + (h_eager < 300 * KiB ? 0 : h_eager);
    unsigned char *sb = h_malloc(t->len), *sb2 = h_malloc(next_len);
    unsigned char *area = h_malloc(t->cap + 2 * GUARD), *rb = area + GUARD;
    unsigned char *rb2 = h_malloc(next_len);
    h_fill(sb, t->len, seed, h_rank);
    h_fill(sb2, next_len, seed + 1000, h_rank);
    memset(area, H_GUARD_BYTE, t->cap + 2 * GUARD);

    xdev_request_t sq[2], rq;
    xdev_status_t st;
    if (mode == 0)
        CHECK_RC(xdev_irecv(h_dev, rb, t->cap, h_prev(), TAG, CTX_TRUNC, &rq));
    h_barrier();
    CHECK_RC(xdev_isend(h_dev, sb, t->len, h_next(), TAG, CTX_TRUNC, &sq[0]));
    CHECK_RC(xdev_isend(h_dev, sb2, next_len, h_next(), TAG, CTX_TRUNC, &sq[1]));
    if (mode == 1)
        CHECK_RC(xdev_irecv(h_dev, rb, t->cap, h_prev(), TAG, CTX_TRUNC, &rq));
    if (mode == 2) {
        int rc = xdev_recv(h_dev, rb, t->cap, h_prev(), TAG, CTX_TRUNC, &st);
        CHECK(rc == XDEV_ERR_TRUNCATE, "%s: xdev_recv returned %d (%s), want XDEV_ERR_TRUNCATE",
              what, rc, xdev_strerror(rc));
    } else {
        CHECK_RC(xdev_wait(&rq, &st));
    }
    CHECK_STATUS(&st, h_prev(), TAG, CTX_TRUNC, XDEV_ERR_TRUNCATE, t->cap, what);
    CHECK(st.msg_len == t->len, "%s: status.msg_len %zu, want the full length", what, st.msg_len);
    CHECK_DATA(rb, t->cap, seed, h_prev(), what);
    size_t bad = h_verify_const(area, GUARD, H_GUARD_BYTE);
    CHECK(bad == H_GOOD, "%s: the byte %zu before the buffer was written", what, GUARD - bad);
    bad = h_verify_const(rb + t->cap, GUARD, H_GUARD_BYTE);
    CHECK(bad == H_GOOD, "%s: byte %zu past the end of the buffer was written", what, bad);

    /* the pair still works: the next message arrives whole */
    snprintf(what, sizeof what, "%zu-byte message after a truncated %zu-byte one", next_len,
             t->len);
    CHECK_RC(xdev_recv(h_dev, rb2, next_len, h_prev(), TAG, CTX_TRUNC, &st));
    CHECK_STATUS(&st, h_prev(), TAG, CTX_TRUNC, XDEV_OK, next_len, what);
    CHECK_DATA(rb2, next_len, seed + 1000, h_prev(), what);

    /* the truncated send itself completes (its own status is not specified) */
    CHECK_RC(xdev_wait(&sq[0], &st));
    WAIT_SEND(&sq[1], next_len, "send after the truncated one");
    free(sb), free(sb2), free(area), free(rb2);
    h_barrier();
}

void case_truncate(void)
{
    struct trial t[8];
    int n = trials(t);
    uint64_t seed = 1;
    for (int i = 0; i < n; i++)
        for (int mode = 0; mode < 3; mode++)
            run(&t[i], mode, seed++);
}
