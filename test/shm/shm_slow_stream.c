/*
 * shm_slow_stream.c - a receiver that finds long messages slow to stream
 * through its ring soon has one copied once, which it completes while the
 * sender makes no progress call at all; every byte of each arrives.
 *
 * Each round rank 0 posts 4 MiB (twice the ring) and sleeps SENDER_NAP
 * before it waits for the send. A streamed rendezvous needs the sender to
 * answer and push the data, so only a single copy (the receiver pulling
 * with process_vm_readv) completes within the RECEIVER_WINDOW that rank 1
 * gives it, counted from before it let the round start. That ends the
 * test. A message that streamed instead is made slow: as soon as its
 * first bytes are in, rank 1 stops calling xdev for 200 ms, so the stream
 * takes at least that long, far slower than a single copy, and the
 * verdict turns (shm_verdict.c). How many rounds that takes is not fixed:
 * the first stream, into a cold ring, is not timed, and one that came
 * whole within a single progress call (the sender refilling the ring as
 * fast as rank 1 drained it) is timed as fast as it was, so that two more
 * slow ones are needed to outweigh it. TRIES leaves room for three of
 * those. The single copy must be allowed: the test is skipped (77) where
 * Yama keeps a process that is not root from reading another.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev.h"
#include "../check.h"
#include "single_copy.h"

#define TAG 4
#define CTX 6
#define LONG (4u << 20)
#define TRIES 12
#define SENDER_NAP_MS 600
#define RECEIVER_WINDOW_S 0.5 /* under the nap: the sender has made no call */

static unsigned char pattern(size_t i, int round) { return (unsigned char)(i * 7 + (size_t)round * 13 + 1); }

static void fill(unsigned char *b, size_t n, int round)
{
    for (size_t i = 0; i < n; i++) b[i] = pattern(i, round);
}

static size_t first_wrong(const unsigned char *b, size_t n, int round)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != pattern(i, round)) return i;
    return n;
}

static void sender(xdev_t *dev, unsigned char *buf)
{
    for (int round = 0;; round++) {
        int again = 0;
        CHECK(xdev_recv(dev, &again, sizeof again, 1, TAG, CTX, NULL) == XDEV_OK, "again?");
        if (!again)
            return;
        fill(buf, LONG, round);
        xdev_request_t req;
        xdev_status_t st;
        CHECK(xdev_isend(dev, buf, LONG, 1, TAG, CTX, &req) == XDEV_OK, "isend, round %d", round);
        sleep_ms(SENDER_NAP_MS); /* no progress call: only the receiver can move the data */
        CHECK(xdev_wait(&req, &st) == XDEV_OK && st.error == XDEV_OK, "send, round %d", round);
    }
}

/* One round: 1 if the message was copied once (complete while the sender
 * slept); otherwise it is received with a pause once its first bytes are
 * in, which makes its stream slow. */
static int receive_round(xdev_t *dev, unsigned char *buf, int round, double t0)
{
    memset(buf, 0, LONG);
    xdev_request_t req;
    xdev_status_t st;
    int done = 0;
    CHECK(xdev_irecv(dev, buf, LONG, 0, TAG, CTX, &req) == XDEV_OK, "irecv, round %d", round);
    while (!done && now_s() - t0 < RECEIVER_WINDOW_S)
        CHECK(xdev_test(&req, &done, &st) == XDEV_OK, "test");
    int copied_once = done;
    while (!done && buf[0] == 0) CHECK(xdev_test(&req, &done, &st) == XDEV_OK, "test");
    if (!done) {
        sleep_ms(200); /* mid-stream: the sender fills the ring and waits for room */
        CHECK(xdev_wait(&req, &st) == XDEV_OK, "wait, round %d", round);
    }
    CHECK(st.error == XDEV_OK && st.count == LONG, "round %d: error %d, %zu bytes", round, st.error,
          st.count);
    size_t bad = first_wrong(buf, LONG, round);
    CHECK(bad == LONG, "round %d: byte %zu is wrong", round, bad);
    return copied_once;
}

static void receiver(xdev_t *dev, unsigned char *buf)
{
    int copied_once = 0;
    for (int round = 0; round < TRIES && !copied_once; round++) {
        double t0 = now_s(); /* the sender's nap ends after t0 + the nap */
        int again = 1;
        CHECK(xdev_send(dev, &again, sizeof again, 0, TAG, CTX) == XDEV_OK, "go, round %d", round);
        copied_once = receive_round(dev, buf, round, t0);
    }
    int stop = 0;
    CHECK(xdev_send(dev, &stop, sizeof stop, 0, TAG, CTX) == XDEV_OK, "stop");
    CHECK(copied_once, "no message of %d was copied once: each streamed, though rank 1 made "
                       "every stream slow", TRIES);
}

int main(void)
{
    if (!single_copy_allowed()) {
        printf("shm_slow_stream: skipped: Yama forbids the single copy to this user\n");
        return 77;
    }
    xdev_t *dev;
    int rc = xdev_init(NULL, &dev);
    if (rc != XDEV_OK) {
        fprintf(stderr, "shm_slow_stream: xdev_init: %s\n", xdev_strerror(rc));
        return 1;
    }
    unsigned char *buf = malloc(LONG);
    if (!buf) return 1;
    if (xdev_size(dev) != 2) CHECK(0, "run with 2 ranks");
    else if (xdev_rank(dev) == 0) sender(dev, buf);
    else receiver(dev, buf);
    free(buf);
    CHECK(xdev_finalize(dev) == XDEV_OK, "finalize");
    if (!failures) printf("shm_slow_stream: rank ok\n");
    return failures ? 1 : 0;
}
