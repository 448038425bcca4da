/*
 * unexpected_burst.c - what a burst of unexpected messages costs the
 * receiver: rank 0 sends COUNT messages of SIZE bytes and then a marker
 * on another tag; rank 1 receives the marker first, so that every message
 * of the burst arrives before its receive is posted, and then receives
 * them in order. Rank 1 prints, per message and per round, the time until
 * the marker came (the burst arriving into the unexpected queue, bounded
 * by how fast rank 0 sends) and the time to receive the burst from the
 * queue (README, the unexpected queue).
 *
 *   xdevrun -n 2 unexpected-burst [COUNT [SIZE [ROUNDS]]]
 *
 * The unexpected bound (XDEV_UNEXPECTED_LIMIT, 64 MiB) must hold the
 * burst, or rank 0 is held back and the two times measure that instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "xdev.h"

enum { TAG_BURST = 1, TAG_MARK = 2, TAG_DONE = 3 };

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int burst(xdev_t *dev, char *buf, long count, size_t size, int round)
{
    char c = 0;
    int rc = XDEV_OK;
    if (xdev_rank(dev) == 0) {
        for (long i = 0; i < count && !rc; i++)
            rc = xdev_send(dev, buf, size, 1, TAG_BURST, 0);
        if (!rc) rc = xdev_send(dev, &c, 1, 1, TAG_MARK, 0);
        return rc ? rc : xdev_recv(dev, &c, 1, 1, TAG_DONE, 0, NULL);
    }
    double t0 = now_us();
    rc = xdev_recv(dev, &c, 1, 0, TAG_MARK, 0, NULL);
    double t1 = now_us();
    for (long i = 0; i < count && !rc; i++)
        rc = xdev_recv(dev, buf, size, 0, TAG_BURST, 0, NULL);
    double t2 = now_us();
    if (!rc) printf("round %d: arrive %.3f us, receive %.3f us per message\n", round,
                    (t1 - t0) / count, (t2 - t1) / count);
    return rc ? rc : xdev_send(dev, &c, 1, 0, TAG_DONE, 0);
}

int main(int argc, char **argv)
{
    long count = argc > 1 ? atol(argv[1]) : 100000;
    size_t size = argc > 2 ? (size_t)atol(argv[2]) : 8;
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    xdev_t *dev;
    int rc = xdev_init(NULL, &dev);
    if (rc) {
        fprintf(stderr, "unexpected-burst: xdev_init: %s\n", xdev_strerror(rc));
        return 1;
    }
    char *buf = calloc(1, size ? size : 1);
    if (count < 1 || !buf || xdev_size(dev) != 2) {
        fprintf(stderr, "unexpected-burst: run 2 ranks, COUNT >= 1\n");
        xdev_finalize(dev);
        return 1;
    }
    for (int r = 0; r < rounds && !rc; r++)
        rc = burst(dev, buf, count, size, r);
    if (rc) fprintf(stderr, "unexpected-burst: %s\n", xdev_strerror(rc));
    free(buf);
    xdev_finalize(dev);
    return rc ? 1 : 0;
}
