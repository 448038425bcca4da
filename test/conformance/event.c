/*
 * event.c - case "event": xdev_fd, xdev_arm and xdev_progress driving a
 * plain poll() loop, as an event loop (epoll, libuv, asyncio) would.
 *
 *  - Argument checks; xdev_arm before xdev_fd is refused; the fd is the
 *    same on every call.
 *  - Half the ranks wait in the loop for a message (8 bytes, eager; and
 *    1 MiB, rendezvous, whose every step needs the loop to wake) that
 *    their neighbour sends only after a pause; then the roles swap. The
 *    data arrives whole, the waiting thread's CPU time is well below the
 *    wall time it waited (it slept, it did not spin), and the loop wakes
 *    soon after the send: a lost wakeup would leave it asleep until the
 *    device's tick (100 ms), which the median over the rounds would show.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cases.h"
#include "harness.h"

enum { CTX_EVENT = 97, TAG_EV = 1, ROUNDS = 3, PAUSE_MS = 100 };

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wait for req in an event loop; returns the time it completed. */
static double loop_until_done(int fd, xdev_request_t *req, xdev_status_t *st, int *sleeps)
{
    for (;;) {
        while (xdev_progress(h_dev) > 0) {
        }
        int done = 0;
        CHECK_RC(xdev_test(req, &done, st));
        if (done)
            return h_now();
        int rc = xdev_arm(h_dev);
        CHECK(rc == XDEV_OK || rc == XDEV_ERR_BUSY, "xdev_arm returned %d (%s)", rc,
              xdev_strerror(rc));
        if (rc == XDEV_OK) {
            struct pollfd p = { .fd = fd, .events = POLLIN };
            CHECK(poll(&p, 1, 5000) >= 0, "poll");
            ++*sleeps;
        }
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void args(void)
{
    h_phase("event: arguments");
    CHECK(xdev_fd(NULL) == XDEV_ERR_ARG, "xdev_fd(NULL)");
    CHECK(xdev_arm(NULL) == XDEV_ERR_ARG, "xdev_arm(NULL)");
    CHECK(xdev_progress(NULL) == XDEV_ERR_ARG, "xdev_progress(NULL)");
    CHECK(xdev_arm(h_dev) == XDEV_ERR_ARG, "xdev_arm before xdev_fd");
    int fd = xdev_fd(h_dev);
    CHECK(fd >= 0, "xdev_fd returned %d (%s)", fd, xdev_strerror(fd));
    CHECK(xdev_fd(h_dev) == fd, "a second xdev_fd gave another fd");
    int rc = xdev_progress(h_dev);
    CHECK(rc == 0 || rc == 1, "xdev_progress returned %d", rc);
}

void case_event(void)
{
    args();
    int fd = xdev_fd(h_dev);
    size_t sizes[2] = { 8, (size_t)1 << 20 };
    unsigned char *buf = h_malloc(sizes[1]);
    double lat[2 * 2 * ROUNDS];
    int nlat = 0;
    double waited = 0, cpu = 0;
    int sleeps = 0;
    for (int round = 0; round < ROUNDS; round++) {
        for (int s = 0; s < 2; s++) {
            for (int phase = 0; phase < 2; phase++) {
                size_t len = sizes[s];
                uint64_t seed = (uint64_t)(round * 4 + s * 2 + phase);
                h_phase("event: round %d, %zu bytes, %s", round, len,
                        (h_rank % 2) == phase ? "sending" : "waiting");
                h_barrier();
                if (h_rank % 2 == phase) {
                    h_sleep_ms(PAUSE_MS);
                    h_fill(buf, len, seed, h_rank);
                    double t = h_now();
                    memcpy(buf, &t, sizeof t); /* when it was sent */
                    CHECK_RC(xdev_send(h_dev, buf, len, h_next(), TAG_EV, CTX_EVENT));
                    continue;
                }
                xdev_request_t req;
                xdev_status_t st;
                memset(buf, 0, len);
                CHECK_RC(xdev_irecv(h_dev, buf, len, h_prev(), TAG_EV, CTX_EVENT, &req));
                double t0 = h_now(), c0 = thread_cpu();
                double done = loop_until_done(fd, &req, &st, &sleeps);
                waited += done - t0;
                cpu += thread_cpu() - c0;
                CHECK_STATUS(&st, h_prev(), TAG_EV, CTX_EVENT, XDEV_OK, len, "event loop receive");
                double sent;
                memcpy(&sent, buf, sizeof sent);
                lat[nlat++] = done - sent;
                unsigned char *check = h_malloc(len);
                h_fill(check, len, seed, h_prev());
                CHECK(memcmp(buf + 8, check + 8, len - 8) == 0, "%zu bytes arrived changed", len);
                free(check);
            }
        }
    }
    free(buf);
    qsort(lat, (size_t)nlat, sizeof lat[0], cmp_double);
    double median = lat[nlat / 2];
    h_phase("event: waited %.3f s with %.3f s of CPU, %d sleeps, median wake %.2f ms", waited,
            cpu, sleeps, median * 1e3);
    CHECK(sleeps > 0, "the loop never slept");
    CHECK(cpu < 0.3 * waited, "the waiting thread used %.3f s of CPU in %.3f s: it spun", cpu,
          waited);
    CHECK(median < 0.04, "median %.1f ms from send to the loop's completion: wakeups lost",
          median * 1e3);
    h_barrier();
}
