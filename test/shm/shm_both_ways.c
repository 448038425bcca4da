/*
 * shm_both_ways.c - a long message that streams one way is read once when
 * its receiver is sending a long message to its sender at the same time
 * (enum shm_offer in shm.h); every byte of each arrives both times.
 *
 * Each pair of rounds sends one size: LONG, then the smallest message that
 * adapts (SHORTEST, shm.h's SHM_ADAPT_MIN), both of which a fresh verdict
 * streams (streams count as fast until one has been timed), and the
 * sender sleeps SENDER_NAP_MS
 * after its isend, making no progress call. A streamed rendezvous needs
 * the sender to answer and push the data; only a single copy (the
 * receiver reading with process_vm_readv) completes while it sleeps.
 *   one way:   rank 0 sends to rank 1, which sends nothing. Rank 1's
 *              receive must not complete within RECEIVER_WINDOW_S: it is
 *              streamed.
 *   both ways: rank 1 first posts its own LONG to rank 0, then lets rank 0
 *              send. Its receive must now complete within the window.
 * The single copy must be allowed: the test is skipped (77) where Yama
 * keeps a process that is not root from reading another.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xdev.h"
#include "../check.h"
#include "single_copy.h"

#define TAG 5
#define GO_TAG 6
#define CTX 7
#define LONG (1u << 20)
#define SHORTEST (128u << 10)
#define ROUNDS 4 /* one way, then both ways, at LONG then at SHORTEST */
#define SENDER_NAP_MS 600
#define RECEIVER_WINDOW_S 0.5 /* under the nap: the sender has made no call */

static unsigned char pattern(size_t i, int from, int round)
{
    return (unsigned char)(i * 7 + (size_t)from * 29 + (size_t)round * 13 + 1);
}

static size_t size_of(int round) { return round < 2 ? LONG : SHORTEST; }

static void fill(unsigned char *b, int from, int round)
{
    for (size_t i = 0; i < size_of(round); i++) b[i] = pattern(i, from, round);
}

static void check_bytes(const unsigned char *b, const xdev_status_t *st, int from, int round)
{
    size_t len = size_of(round);
    CHECK(st->error == XDEV_OK && st->count == len, "round %d, from %d: error %d, %zu bytes",
          round, from, st->error, st->count);
    size_t i = 0;
    while (i < len && b[i] == pattern(i, from, round)) i++;
    CHECK(i == len, "round %d, from %d: byte %zu is wrong", round, from, i);
}

/* Rank 0, each round: say it is ready (done with the last round), wait
 * for the go, send the round's size and sleep through the receiver's
 * window; in a both-ways round, receive rank 1's message after. */
static void sender(xdev_t *dev, unsigned char *out, unsigned char *in)
{
    for (int round = 0; round < ROUNDS; round++) {
        int go = 1;
        CHECK(xdev_send(dev, &go, sizeof go, 1, GO_TAG, CTX) == XDEV_OK, "ready, round %d", round);
        CHECK(xdev_recv(dev, &go, sizeof go, 1, GO_TAG, CTX, NULL) == XDEV_OK, "go, round %d", round);
        xdev_request_t req;
        xdev_status_t st;
        fill(out, 0, round);
        CHECK(xdev_isend(dev, out, size_of(round), 1, TAG, CTX, &req) == XDEV_OK, "isend, round %d",
              round);
        sleep_ms(SENDER_NAP_MS); /* no progress call: only the receiver can move the data */
        CHECK(xdev_wait(&req, &st) == XDEV_OK && st.error == XDEV_OK, "send, round %d", round);
        if (round % 2) { /* matched only now, so that rank 1's send stays open until now */
            CHECK(xdev_recv(dev, in, size_of(round), 1, TAG, CTX, &st) == XDEV_OK, "rank 1's message");
            check_bytes(in, &st, 1, round);
        }
    }
}

/* Whether rank 1's receive of rank 0's message completed within the window. */
static int received_in_window(xdev_t *dev, unsigned char *in, int round)
{
    memset(in, 0, LONG);
    xdev_request_t req;
    xdev_status_t st;
    int done = 0, go = 1;
    CHECK(xdev_recv(dev, &go, sizeof go, 0, GO_TAG, CTX, NULL) == XDEV_OK, "ready, round %d", round);
    double t0 = now_s(); /* rank 0's nap ends after t0 + the nap */
    CHECK(xdev_irecv(dev, in, size_of(round), 0, TAG, CTX, &req) == XDEV_OK, "irecv, round %d",
          round);
    CHECK(xdev_send(dev, &go, sizeof go, 0, GO_TAG, CTX) == XDEV_OK, "go, round %d", round);
    while (!done && now_s() - t0 < RECEIVER_WINDOW_S)
        CHECK(xdev_test(&req, &done, &st) == XDEV_OK, "test");
    int in_window = done;
    if (!done)
        CHECK(xdev_wait(&req, &st) == XDEV_OK, "wait, round %d", round);
    check_bytes(in, &st, 0, round);
    return in_window;
}

static void receiver(xdev_t *dev, unsigned char *out, unsigned char *in)
{
    for (int round = 0; round < ROUNDS; round += 2) {
        CHECK(!received_in_window(dev, in, round),
              "one way, %zu bytes: a message the verdict streams completed while its sender slept",
              size_of(round));
        fill(out, 1, round + 1);
        xdev_request_t sreq;
        xdev_status_t st;
        CHECK(xdev_isend(dev, out, size_of(round + 1), 0, TAG, CTX, &sreq) == XDEV_OK, "isend");
        CHECK(received_in_window(dev, in, round + 1),
              "both ways, %zu bytes: the message was not read while its sender slept",
              size_of(round + 1));
        CHECK(xdev_wait(&sreq, &st) == XDEV_OK && st.error == XDEV_OK, "send to rank 0");
    }
}

int main(void)
{
    if (!single_copy_allowed()) {
        printf("shm_both_ways: skipped: Yama forbids the single copy to this user\n");
        return 77;
    }
    xdev_t *dev;
    int rc = xdev_init(NULL, &dev);
    if (rc != XDEV_OK) {
        fprintf(stderr, "shm_both_ways: xdev_init: %s\n", xdev_strerror(rc));
        return 1;
    }
    unsigned char *out = malloc(LONG), *in = malloc(LONG);
    if (!out || !in) return 1;
    if (xdev_size(dev) != 2) CHECK(0, "run with 2 ranks");
    else if (xdev_rank(dev) == 0) sender(dev, out, in);
    else receiver(dev, out, in);
    free(out);
    free(in);
    CHECK(xdev_finalize(dev) == XDEV_OK, "finalize");
    if (!failures) printf("shm_both_ways: rank ok\n");
    return failures ? 1 : 0;
}
