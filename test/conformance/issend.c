/*
 * issend.c - case "issend": a synchronous send completes only after the
 * receiver has matched it with a receive.
 *
 * The receiver holds off posting its receive for 300 ms; the sender keeps
 * testing its request. The receiver notes (CLOCK_MONOTONIC, one clock for
 * all processes of the machine) the moment just before it posts the
 * receive and tells the sender, whose request must not have completed
 * before that moment. Eager and rendezvous sizes, a message that has
 * already arrived (the receiver saw it with iprobe) but is not yet
 * received, and the blocking xdev_ssend.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cases.h"
#include "harness.h"

enum { CTX_SYNC = 60, TAG = 11, HOLD_MS = 300 };

static uint64_t us(double t) { return (uint64_t)(t * 1e6); }

/* Tell `to` our post time and learn the post time of `from`. */
static double swap_time(int to, int from, double mine, int tag)
{
    xdev_request_t rq, sq;
    unsigned char in[8], out[8];
    uint64_t v = us(mine), got = 0;
    xdev_status_t st;
    for (int i = 0; i < 8; i++)
        out[i] = (unsigned char)(v >> (8 * i));
    CHECK_RC(xdev_irecv(h_dev, in, 8, from, tag, H_CTX_CONTROL, &rq));
    CHECK_RC(xdev_isend(h_dev, out, 8, to, tag, H_CTX_CONTROL, &sq));
    CHECK_RC(xdev_wait(&rq, &st));
    CHECK_STATUS(&st, from, tag, H_CTX_CONTROL, XDEV_OK, 8, "time message");
    WAIT_SEND(&sq, 8, "time message");
    for (int i = 0; i < 8; i++)
        got |= (uint64_t)in[i] << (8 * i);
    return (double)got * 1e-6;
}

/* Ring: issend to next, receive from prev after HOLD_MS (and, if
 * after_probe, only once iprobe has seen the message plus 150 ms more). */
static void ring(size_t len, int after_probe, uint64_t seed)
{
    h_phase("issend: %zu bytes%s", len, after_probe ? ", message probed before the receive" : "");
    unsigned char *sb = h_malloc(len), *rb = h_malloc(len);
    h_fill(sb, len, seed, h_rank);
    xdev_request_t sq, rq;
    xdev_status_t st;
    int sdone = 0, rdone = 0, not_done_tests = 0;
    double t_done = 0;

    /* One test of the send; notes when it was first seen complete. */
#define TEST_SEND()                                                          \
    do {                                                                     \
        if (!sdone) {                                                        \
            CHECK_RC(xdev_test(&sq, &sdone, &st));                           \
            if (sdone) {                                                     \
                t_done = h_now();                                            \
                CHECK_SEND_STATUS(&st, len, "issend");                       \
            } else {                                                         \
                not_done_tests++;                                            \
            }                                                                \
        }                                                                    \
    } while (0)

    h_barrier();
    double t0 = h_now();
    CHECK_RC(xdev_issend(h_dev, sb, len, h_next(), TAG, CTX_SYNC, &sq));
    while (h_now() - t0 < HOLD_MS / 1000.0) {
        TEST_SEND();
        h_sleep_ms(1);
    }
    if (after_probe) {
        int found = 0;
        while (!found) {
            CHECK(h_now() - t0 < 30, "iprobe never saw the %zu-byte issend message", len);
            CHECK_RC(xdev_iprobe(h_dev, h_prev(), TAG, CTX_SYNC, &found, &st));
            TEST_SEND();
        }
        CHECK_STATUS(&st, h_prev(), TAG, CTX_SYNC, XDEV_OK, len, "iprobe of the issend message");
        double t1 = h_now();
        while (h_now() - t1 < 0.15) {
            TEST_SEND();
            h_sleep_ms(1);
        }
    }
    double t_post = h_now();
    CHECK_RC(xdev_irecv(h_dev, rb, len, h_prev(), TAG, CTX_SYNC, &rq));
    while (!sdone || !rdone) {
        TEST_SEND();
        if (!rdone) {
            xdev_status_t rst;
            CHECK_RC(xdev_test(&rq, &rdone, &rst));
            if (rdone) {
                CHECK_STATUS(&rst, h_prev(), TAG, CTX_SYNC, XDEV_OK, len, "issend receive");
                CHECK_DATA(rb, len, seed, h_prev(), "issend receive");
            }
        }
        CHECK(h_now() - t0 < 60, "issend of %zu bytes: not complete after 60 s (send %d, recv %d)",
              len, sdone, rdone);
    }
#undef TEST_SEND
    double their_post = swap_time(h_prev(), h_next(), t_post, 1);
    CHECK(us(t_done) >= us(their_post),
          "xdev_issend of %zu bytes%s completed %.1f ms before rank %d posted the matching "
          "receive (completed %.1f ms after the send was posted)",
          len, after_probe ? " (already probed)" : "", (their_post - t_done) * 1e3, h_next(),
          (t_done - t0) * 1e3);
    CHECK(not_done_tests > 0, "never saw the issend incomplete");
    free(sb), free(rb);
    h_barrier();
}

/* Pairs (0,1), (2,3), ...: the even rank calls blocking xdev_ssend, the odd
 * one posts its receive after HOLD_MS; then the other way round. */
static void blocking(size_t len, uint64_t seed)
{
    int partner = h_rank ^ 1;
    for (int round = 0; round < 2; round++) {
        h_phase("ssend: %zu bytes, round %d", len, round);
        h_barrier();
        if (partner >= h_size)
            continue;
        int sender = (h_rank & 1) == round;
        unsigned char *b = h_malloc(len);
        if (sender) {
            h_fill(b, len, seed + (uint64_t)round, h_rank);
            double t0 = h_now();
            CHECK_RC(xdev_ssend(h_dev, b, len, partner, TAG, CTX_SYNC));
            double t_done = h_now();
            double their_post = (double)h_recv_u64(partner, 2) * 1e-6;
            CHECK(us(t_done) >= us(their_post),
                  "xdev_ssend of %zu bytes returned %.1f ms before rank %d posted the receive "
                  "(returned %.1f ms after it was called)",
                  len, (their_post - t_done) * 1e3, partner, (t_done - t0) * 1e3);
        } else {
            xdev_status_t st;
            h_sleep_ms(HOLD_MS);
            double t_post = h_now();
            CHECK_RC(xdev_recv(h_dev, b, len, partner, TAG, CTX_SYNC, &st));
            CHECK_STATUS(&st, partner, TAG, CTX_SYNC, XDEV_OK, len, "ssend receive");
            CHECK_DATA(b, len, seed + (uint64_t)round, partner, "ssend receive");
            h_send_u64(partner, 2, us(t_post));
        }
        free(b);
    }
    h_barrier();
}

void case_issend(void)
{
    size_t eager = h_eager > 0 && h_eager < 1000 ? h_eager : 1000;
    size_t rndz = h_eager + 4096 > 1 * MiB ? h_eager + 4096 : 1 * MiB;
    ring(0, 0, 1);
    ring(eager, 0, 2);
    ring(rndz, 0, 3);
    ring(eager, 1, 4);
    ring(rndz, 1, 5);
    blocking(eager, 10);
    blocking(rndz, 20);
}
