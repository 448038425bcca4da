/*
 * mprobe.c - case "mprobe": the matched probe.
 *
 *  - A claimed message leaves matching: a probe or receive for it sees the
 *    next one instead, and only its handle receives it, whole, with the
 *    status the probe reported; the handle is then zeroed, and using it
 *    again, or a copy of it, gets XDEV_ERR_ARG.
 *  - A claimed message is truncated like any other receive.
 *  - A claim is not yet a receive: a synchronous send, eager or
 *    rendezvous, completes once its claim is received, not before.
 *  - Eight threads race to claim and receive from one source: every
 *    message is received exactly once, eager and rendezvous sizes alike.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

enum { CTX_MPROBE = 90, TAG_A = 1, TAG_B = 2, TAG_RACE = 3, NTHREADS = 8, NRACE = 400 };

static size_t rndz_len(void) { return h_eager + 1000; }

static void claim_leaves_matching(void)
{
    h_phase("mprobe: a claimed message leaves matching");
    size_t big = rndz_len();
    unsigned char *sb = h_malloc(big), *rb = h_malloc(big), *rb2 = h_malloc(big);
    h_fill(sb, big, 11, h_rank);
    xdev_request_t s[2];
    CHECK_RC(xdev_isend(h_dev, sb, big, h_next(), TAG_A, CTX_MPROBE, &s[0]));
    CHECK_RC(xdev_isend(h_dev, sb, 100, h_next(), TAG_A, CTX_MPROBE, &s[1]));

    xdev_message_t msg, copy;
    xdev_status_t st;
    CHECK_RC(xdev_mprobe(h_dev, h_prev(), TAG_A, CTX_MPROBE, &msg, &st));
    CHECK_STATUS(&st, h_prev(), TAG_A, CTX_MPROBE, XDEV_OK, big, "mprobe of the first message");
    copy = msg;
    /* the first is claimed: the next probe and receive see the second */
    int found = 0;
    do
        CHECK_RC(xdev_iprobe(h_dev, h_prev(), TAG_A, CTX_MPROBE, &found, &st));
    while (!found);
    CHECK_STATUS(&st, h_prev(), TAG_A, CTX_MPROBE, XDEV_OK, 100, "iprobe past a claimed message");
    CHECK_RC(xdev_recv(h_dev, rb2, big, h_prev(), TAG_A, CTX_MPROBE, &st));
    CHECK_STATUS(&st, h_prev(), TAG_A, CTX_MPROBE, XDEV_OK, 100, "receive past a claimed message");

    CHECK_RC(xdev_mrecv(h_dev, rb, big, &msg, &st));
    CHECK_STATUS(&st, h_prev(), TAG_A, CTX_MPROBE, XDEV_OK, big, "mrecv");
    CHECK_DATA(rb, big, 11, h_prev(), "mrecv");
    static const xdev_message_t zero;
    CHECK(memcmp(&msg, &zero, sizeof msg) == 0, "mrecv left the handle set");
    xdev_request_t r;
    CHECK(xdev_imrecv(h_dev, rb, big, &msg, &r) == XDEV_ERR_ARG, "a used handle was received again");
    CHECK(xdev_imrecv(h_dev, rb, big, &copy, &r) == XDEV_ERR_ARG, "a copy of a used handle was received");
    CHECK(xdev_mrecv(h_dev, rb, big, &copy, &st) == XDEV_ERR_ARG, "mrecv of a used handle");
    WAIT_SEND(&s[0], big, "first send");
    WAIT_SEND(&s[1], 100, "second send");
    free(sb);
    free(rb);
    free(rb2);
    h_barrier();
}

static void claimed_truncated(void)
{
    h_phase("mprobe: a claimed message is truncated like any other");
    unsigned char sb[300], rb[100 + 16];
    h_fill(sb, sizeof sb, 12, h_rank);
    memset(rb, H_GUARD_BYTE, sizeof rb);
    CHECK_RC(xdev_send(h_dev, sb, sizeof sb, h_next(), TAG_B, CTX_MPROBE));
    xdev_message_t msg;
    xdev_status_t st;
    int found = 0;
    while (!found)
        CHECK_RC(xdev_improbe(h_dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX_MPROBE, &found, &msg, &st));
    CHECK_STATUS(&st, h_prev(), TAG_B, CTX_MPROBE, XDEV_OK, sizeof sb, "improbe");
    xdev_request_t r;
    CHECK_RC(xdev_imrecv(h_dev, rb, 100, &msg, &r));
    CHECK_RC(xdev_wait(&r, &st));
    CHECK_STATUS(&st, h_prev(), TAG_B, CTX_MPROBE, XDEV_ERR_TRUNCATE, 100, "truncated imrecv");
    CHECK(st.msg_len == sizeof sb, "msg_len %zu, want %zu", st.msg_len, sizeof sb);
    CHECK_DATA(rb, 100, 12, h_prev(), "truncated imrecv");
    CHECK(h_verify_const(rb + 100, 16, H_GUARD_BYTE) == H_GOOD, "written past the buffer");
    h_barrier();
}

/* Rank 0 sends, rank 1 claims. Nothing more of rank 0's may reach rank 1
 * until rank 0 has looked: a later message of its makes rank 1 read a
 * claimed rendezvous into memory of its own (xdev_imrecv), which
 * completes the send. */
static void claimed_ssend(void)
{
    h_phase("mprobe: a synchronous send completes when its claim is received");
    size_t lens[2] = { 100, rndz_len() };
    unsigned char *buf = h_malloc(rndz_len()), note = 0;
    for (int k = 0; k < 2 && h_rank < 2; k++) {
        xdev_status_t st;
        if (h_rank == 0) {
            h_fill(buf, lens[k], 13 + (uint64_t)k, h_rank);
            xdev_request_t s;
            CHECK_RC(xdev_issend(h_dev, buf, lens[k], 1, TAG_A, CTX_MPROBE, &s));
            CHECK_RC(xdev_recv(h_dev, &note, 1, 1, TAG_B, CTX_MPROBE, &st)); /* claimed */
            int done = 0;
            for (double t0 = h_now(); !done && h_now() - t0 < 0.05;)
                CHECK_RC(xdev_test(&s, &done, &st));
            CHECK(!done, "a %zu-byte synchronous send completed while only claimed", lens[k]);
            CHECK_RC(xdev_send(h_dev, &note, 1, 1, TAG_B, CTX_MPROBE)); /* looked */
            WAIT_SEND(&s, lens[k], "the claimed synchronous send");
        } else {
            xdev_message_t msg;
            CHECK_RC(xdev_mprobe(h_dev, 0, TAG_A, CTX_MPROBE, &msg, &st));
            CHECK_RC(xdev_send(h_dev, &note, 1, 0, TAG_B, CTX_MPROBE));
            CHECK_RC(xdev_recv(h_dev, &note, 1, 0, TAG_B, CTX_MPROBE, &st));
            CHECK_RC(xdev_mrecv(h_dev, buf, lens[k], &msg, &st));
            CHECK_STATUS(&st, 0, TAG_A, CTX_MPROBE, XDEV_OK, lens[k], "the claim's mrecv");
            CHECK_DATA(buf, lens[k], 13 + (uint64_t)k, 0, "the claim's mrecv");
        }
    }
    free(buf);
    h_barrier();
}

/* ---- eight threads race on one source ---- */

static atomic_int taken;
static atomic_uchar seen[NRACE];

static size_t race_len(int i) { return i % 10 == 9 ? rndz_len() + (size_t)i : (size_t)i * 13 % 900 + 8; }

static void *racer(void *arg)
{
    (void)arg;
    unsigned char *buf = h_malloc(rndz_len() + NRACE);
    while (atomic_load(&taken) < NRACE) {
        xdev_message_t msg;
        xdev_status_t st;
        int found = 0;
        CHECK_RC(xdev_improbe(h_dev, h_prev(), TAG_RACE, CTX_MPROBE, &found, &msg, &st));
        if (!found)
            continue;
        atomic_fetch_add(&taken, 1);
        CHECK_RC(xdev_mrecv(h_dev, buf, st.count, &msg, &st));
        uint32_t i;
        CHECK(st.count >= sizeof i, "a %zu-byte message in the race", st.count);
        memcpy(&i, buf, sizeof i);
        CHECK(i < NRACE && st.count == race_len((int)i), "message #%u has %zu bytes", i, st.count);
        CHECK(atomic_fetch_add(&seen[i], 1) == 0, "message #%u received twice", i);
        CHECK_DATA(buf + sizeof i, st.count - sizeof i, 1000 + i, h_prev(), "raced message");
    }
    free(buf);
    return NULL;
}

static void racing_claims(void)
{
    h_phase("mprobe: %d threads claim %d messages from one source", NTHREADS, NRACE);
    CHECK(!(h_flags & XDEV_FLAG_SINGLE_THREAD), "this case needs a multi-threaded device");
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++)
        CHECK(pthread_create(&th[t], NULL, racer, NULL) == 0, "pthread_create");
    unsigned char *sb = h_malloc(rndz_len() + NRACE);
    for (uint32_t i = 0; i < NRACE; i++) {
        size_t n = race_len((int)i);
        memcpy(sb, &i, sizeof i);
        h_fill(sb + sizeof i, n - sizeof i, 1000 + i, h_rank);
        CHECK_RC(xdev_send(h_dev, sb, n, h_next(), TAG_RACE, CTX_MPROBE));
    }
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
    for (int i = 0; i < NRACE; i++)
        CHECK(atomic_load(&seen[i]) == 1, "message #%d received %d times", i, atomic_load(&seen[i]));
    free(sb);
    h_barrier();
}

void case_mprobe(void)
{
    claim_leaves_matching();
    claimed_truncated();
    claimed_ssend();
    racing_claims();
}
