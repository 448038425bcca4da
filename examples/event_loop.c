/*
 * event_loop.c - xdev inside a poll() loop, and what sleeping costs.
 *
 *   xdevrun -n 2 build/examples/event_loop [ROUNDS]
 *
 * Two ranks play ping-pong with 8-byte messages, first waiting with
 * xdev_wait (which busy-polls while messages flow), then waiting in a
 * poll() loop on xdev_fd, asleep until the message comes. Each prints the
 * one-way latency (half the round trip) of both and the CPU time the
 * waiting took: the difference is the price of the wake-up.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <xdev.h>

static double now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The loop an event-driven program runs, for one request. */
static int wait_in_loop(xdev_t *dev, int fd, xdev_request_t *req)
{
    for (;;) {
        while (xdev_progress(dev) > 0)
            ;
        int done = 0;
        int rc = xdev_test(req, &done, NULL);
        if (rc != XDEV_OK || done)
            return rc;
        rc = xdev_arm(dev);
        if (rc == XDEV_OK)
            poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, -1);
        else if (rc != XDEV_ERR_BUSY)
            return rc;
    }
}

static int ping_pong(xdev_t *dev, int rounds, int fd)
{
    int rank = xdev_rank(dev), peer = 1 - rank;
    char msg[8] = "ping";
    for (int i = 0; i < rounds; i++) {
        xdev_request_t req;
        int rc = XDEV_OK;
        if (rank == 0)
            rc = xdev_send(dev, msg, sizeof msg, peer, 0, 0);
        if (rc == XDEV_OK)
            rc = xdev_irecv(dev, msg, sizeof msg, peer, 0, 0, &req);
        if (rc == XDEV_OK)
            rc = fd < 0 ? xdev_wait(&req, NULL) : wait_in_loop(dev, fd, &req);
        if (rc == XDEV_OK && rank == 1)
            rc = xdev_send(dev, msg, sizeof msg, peer, 0, 0);
        if (rc != XDEV_OK)
            return rc;
    }
    return XDEV_OK;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 2000;
    xdev_t *dev;
    int rc = xdev_init(NULL, &dev);
    if (rc != XDEV_OK) {
        fprintf(stderr, "xdev_init: %s\n", xdev_strerror(rc));
        return 1;
    }
    if (xdev_size(dev) != 2 || rounds < 1) {
        fprintf(stderr, "usage: xdevrun -n 2 event_loop [ROUNDS]\n");
        xdev_finalize(dev);
        return 2;
    }
    int fd = xdev_fd(dev);
    const char *how[2] = { "xdev_wait (busy-polling)", "poll() on xdev_fd (asleep)" };
    for (int mode = 0; mode < 2 && rc == XDEV_OK && fd >= 0; mode++) {
        rc = ping_pong(dev, rounds / 10 + 1, mode ? fd : -1); /* warm up */
        double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
        if (rc == XDEV_OK)
            rc = ping_pong(dev, rounds, mode ? fd : -1);
        double wall = now(CLOCK_MONOTONIC) - t0, cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (rc == XDEV_OK && xdev_rank(dev) == 0)
            printf("%-28s one-way latency %8.2f us, CPU %3.0f%% of wall time\n", how[mode],
                   wall / rounds / 2 * 1e6, 100 * cpu / wall);
    }
    if (fd < 0)
        rc = fd;
    if (rc != XDEV_OK)
        fprintf(stderr, "event_loop: %s\n", xdev_strerror(rc));
    int frc = xdev_finalize(dev);
    return rc == XDEV_OK && frc == XDEV_OK ? 0 : 1;
}
