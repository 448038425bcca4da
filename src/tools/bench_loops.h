/*
 * The timed loops of xdev-bench and its baselines (see bench_method.h).
 *
 * A program defines struct bench_io and these primitives, then includes
 * this header:
 *
 *   bench_send, bench_recv    one blocking message of size bytes
 *   bench_post_sends/_recvs   start count messages of size bytes, all from
 *                             or into buf
 *   bench_wait_sends/_recvs   complete the count messages posted last
 *
 * Waiting for one direction must keep the other moving, as bibw posts
 * both before waiting for either. Tags are the BENCH_TAG_* below; a
 * program whose messages arrive in order may ignore them.
 *
 * The loops are compiled into each program, rather than calling its
 * primitives through pointers, so that every system pays for exactly its
 * own calls per message, as a benchmark written for it alone would.
 */
#ifndef XDEV_BENCH_LOOPS_H
#define XDEV_BENCH_LOOPS_H

#include <time.h>

#include "bench_method.h"

enum { BENCH_TAG_DATA = 1, BENCH_TAG_ACK = 2, BENCH_TAG_BARRIER = 3 };

static inline void bench_send(struct bench_io *io, const void *buf, size_t size, int tag);
static inline void bench_recv(struct bench_io *io, void *buf, size_t size, int tag);
static inline void bench_post_sends(struct bench_io *io, const void *buf, size_t size,
                                    int tag, int count);
static inline void bench_post_recvs(struct bench_io *io, void *buf, size_t size, int tag,
                                    int count);
static inline void bench_wait_sends(struct bench_io *io, int count);
static inline void bench_wait_recvs(struct bench_io *io, int count);

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A zero-byte exchange on its own tag. */
static void bench_barrier(struct bench *b)
{
    if (b->rank == 0) {
        bench_send(b->io, NULL, 0, BENCH_TAG_BARRIER);
        bench_recv(b->io, NULL, 0, BENCH_TAG_BARRIER);
    } else {
        bench_recv(b->io, NULL, 0, BENCH_TAG_BARRIER);
        bench_send(b->io, NULL, 0, BENCH_TAG_BARRIER);
    }
}

/* One iteration of each pattern. */

static inline void bench_ping_pong(struct bench *b, size_t size)
{
    if (b->rank == 0) {
        bench_send(b->io, b->sbuf, size, BENCH_TAG_DATA);
        bench_recv(b->io, b->rbuf, size, BENCH_TAG_DATA);
    } else {
        bench_recv(b->io, b->rbuf, size, BENCH_TAG_DATA);
        bench_send(b->io, b->sbuf, size, BENCH_TAG_DATA);
    }
}

/* The bw pattern: rank 0 sends a window, rank 1 acks it. */
static inline void bench_window(struct bench *b, size_t size)
{
    if (b->rank == 0) {
        bench_post_sends(b->io, b->sbuf, size, BENCH_TAG_DATA, b->window);
        bench_wait_sends(b->io, b->window);
        bench_recv(b->io, b->ack, BENCH_ACK_BYTES, BENCH_TAG_ACK);
    } else {
        bench_post_recvs(b->io, b->rbuf, size, BENCH_TAG_DATA, b->window);
        bench_wait_recvs(b->io, b->window);
        bench_send(b->io, b->ack, BENCH_ACK_BYTES, BENCH_TAG_ACK);
    }
}

static inline void bench_both_ways(struct bench *b, size_t size)
{
    bench_post_recvs(b->io, b->rbuf, size, BENCH_TAG_DATA, b->window);
    bench_post_sends(b->io, b->sbuf, size, BENCH_TAG_DATA, b->window);
    bench_wait_sends(b->io, b->window);
    bench_wait_recvs(b->io, b->window);
}

/* The test is chosen outside the loops, which hold nothing but the pattern. */
static void bench_repeat(struct bench *b, enum bench_test_id test, size_t size, long n)
{
    switch (test) {
    case BENCH_LATENCY:
        for (long i = 0; i < n; i++)
            bench_ping_pong(b, size);
        break;
    case BENCH_BW:
    case BENCH_RATE:
        for (long i = 0; i < n; i++)
            bench_window(b, size);
        break;
    case BENCH_BIBW:
        for (long i = 0; i < n; i++)
            bench_both_ways(b, size);
        break;
    case BENCH_NTESTS:
        break;
    }
}

static double bench_run_one(struct bench *b, enum bench_test_id test, size_t size, long iters,
                            long warmup)
{
    bench_repeat(b, test, size, warmup);
    double t0 = bench_now();
    bench_repeat(b, test, size, iters);
    return bench_now() - t0;
}

static const struct bench_loops bench_loops = { bench_barrier, bench_run_one };

#endif
