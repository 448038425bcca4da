/*
 * handoff.c - case "handoff": a thread blocked on the device gets in while
 * another thread's wait keeps traffic moving. Rank 0's thread A waits for
 * one message from rank 1; a few ms in, thread B sends one byte, and its
 * send must return long before A's wait does. Two rounds:
 *  - a flood: 100,000 small messages arrive before the one A waits for,
 *    so A's wait never runs out of work; it must give B a turn at the lock
 *    (progress.c) instead of keeping it until the flood is over;
 *  - a single copy: A waits for 256 MiB, which shm moves with one copy
 *    from rank 1's memory; the copy must go in pieces, with the lock let
 *    go between them, not in one system call that holds it throughout.
 *    B comes 20 ms in, when A's wait has stopped spinning and yielding
 *    (progress.c): it only polls, its transport being busy (shm_arm), and
 *    must still give B a turn.
 * Ranks past 1 only take part in the barriers.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

enum { CTX_HANDOFF = 95, TAG_FLOOD = 1, TAG_WAITED = 2, TAG_B = 3, FLOOD = 100000 };
#define BIG (256 * MiB)

static double b_returned;

static void *thread_b(void *arg)
{
    h_sleep_ms(*(const int *)arg);
    char one = 'b';
    CHECK_RC(xdev_send(h_dev, &one, 1, 1, TAG_B, CTX_HANDOFF));
    b_returned = h_now();
    return NULL;
}

static void sender(unsigned char *buf, size_t len, int flood)
{
    char small[64] = { 0 }, one = 0;
    xdev_status_t st;
    h_barrier();
    for (int i = 0; i < flood; i++)
        CHECK_RC(xdev_send(h_dev, small, sizeof small, 0, TAG_FLOOD, CTX_HANDOFF));
    CHECK_RC(xdev_send(h_dev, buf, len, 0, TAG_WAITED, CTX_HANDOFF));
    CHECK_RC(xdev_recv(h_dev, &one, 1, 0, TAG_B, CTX_HANDOFF, &st));
    CHECK(one == 'b', "thread B's byte");
}

static void waiter(unsigned char *buf, size_t len, int flood, int b_ms, const char *round)
{
    xdev_request_t r;
    xdev_status_t st;
    memset(buf, 0, len);
    CHECK_RC(xdev_irecv(h_dev, buf, len, 1, TAG_WAITED, CTX_HANDOFF, &r));
    h_barrier();
    pthread_t b;
    CHECK(pthread_create(&b, NULL, thread_b, &b_ms) == 0, "pthread_create");
    h_phase("%s: waiting while thread B sends", round);
    CHECK_RC(xdev_wait(&r, &st));
    double a_returned = h_now();
    pthread_join(b, NULL);
    CHECK_STATUS(&st, 1, TAG_WAITED, CTX_HANDOFF, XDEV_OK, len, round);
    CHECK_DATA(buf, len, 77, 1, round);
    /* Without the hand-over B gets the lock only when A lets go, at the
     * end: the two return within microseconds of each other. */
    CHECK(b_returned + 0.002 < a_returned,
          "%s: thread B's send returned %.2f ms before thread A's wait: it waited for "
          "nearly all of A's traffic", round, (a_returned - b_returned) * 1e3);
    char small[64];
    for (int i = 0; i < flood; i++) /* the flood, unexpected until now */
        CHECK_RC(xdev_recv(h_dev, small, sizeof small, 1, TAG_FLOOD, CTX_HANDOFF, &st));
}

void case_handoff(void)
{
    CHECK(h_size >= 2, "handoff needs 2 ranks");
    unsigned char *big = h_rank <= 1 ? h_malloc(BIG) : NULL;
    static const struct { size_t len; int flood, b_ms; const char *name; } rounds[] = {
        { 64, FLOOD, 3, "flood" }, { BIG, 0, 20, "single copy" },
    };
    for (int i = 0; i < 2; i++) {
        if (h_rank == 1) {
            h_fill(big, rounds[i].len, 77, 1);
            sender(big, rounds[i].len, rounds[i].flood);
        } else if (h_rank == 0) {
            waiter(big, rounds[i].len, rounds[i].flood, rounds[i].b_ms, rounds[i].name);
        } else {
            h_barrier();
        }
        h_barrier();
    }
    free(big);
}
