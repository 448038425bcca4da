/*
 * shm_idle_progress.c - an idle progress thread leaves the core alone.
 *
 * Shared memory has no file descriptor to sleep on, so the progress
 * thread (XDEV_PROGRESS_THREAD=1) can only poll; it must nap between
 * polls rather than spin, or it takes a core from the computation it is
 * meant to overlap. Both ranks exchange a message (so the rings are in
 * use), then sleep for a second while their progress threads run; the
 * CPU time each process used in that second must stay small. A message
 * sent afterwards must still arrive.
 */
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>
#include "xdev.h"

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static int exchange(xdev_t *dev, int value)
{
    int peer = 1 - xdev_rank(dev), got = -1;
    xdev_request_t rq;
    if (xdev_irecv(dev, &got, sizeof got, peer, 7, 0, &rq) != XDEV_OK ||
        xdev_send(dev, &value, sizeof value, peer, 7, 0) != XDEV_OK || xdev_wait(&rq, NULL) != XDEV_OK)
        return -1;
    return got;
}

int main(void)
{
    xdev_t *dev;
    if (xdev_init(NULL, &dev) != XDEV_OK || xdev_size(dev) != 2) {
        fprintf(stderr, "shm_idle_progress: needs a 2-rank job\n");
        return 1;
    }
    int ok = exchange(dev, 1) == 1;
    double before = cpu_seconds();
    nanosleep(&(struct timespec){ .tv_sec = 1 }, NULL);
    double used = cpu_seconds() - before;
    ok &= exchange(dev, 2) == 2;
    /* A spinning thread would use about a second; napping uses a few ms. */
    int quiet = used < 0.25;
    printf("rank %d: idle second used %.3f s of CPU (%s); messages %s\n", xdev_rank(dev), used,
           quiet ? "napping" : "SPINNING", ok ? "arrived" : "LOST");
    return xdev_finalize(dev) == XDEV_OK && ok && quiet ? 0 : 1;
}
