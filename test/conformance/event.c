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
 *    For 1 MiB the bar is the same message received with xdev_wait,
 *    timed in the same rounds, plus that margin: on emulated CPUs (the
 *    ibv VM) moving 1 MiB alone takes tens of milliseconds.
 *  - A completion that another thread's call makes outside any progress
 *    pass (xdev_cancel of the loop's receive; a receive posted for the
 *    loop's synchronous send to itself) makes the armed fd readable at
 *    once, not at the next tick.
 *  - With XDEV_TEST_EVENT_WORKER=1, a second thread sits blocked in a
 *    receive on another context the whole time: it reads the transports
 *    too, and what it takes in for the loop must still wake the loop.
 *    With XDEV_TEST_EVENT_WORKER=poll it polls xdev_iprobe instead, as an
 *    actor runtime's worker might: each probe reads the transports.
 *  - With XDEV_TEST_EVENT_EDGE=1 the loop sleeps in an epoll set that holds
 *    the fd edge-triggered (EPOLLET), as mio and tokio register every fd:
 *    it wakes only on a new event, never for one it saw before arming.
 */
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "harness.h"

enum { CTX_EVENT = 97, CTX_WORKER = 98, TAG_EV = 1, TAG_BY_CALL = 2, ROUNDS = 3, PAUSE_MS = 100 };
/* Well under the device's 100 ms tick, well over a real wakeup. */
#define WAKE_MARGIN 0.04

/* The epoll set that holds the fd edge-triggered, or -1 to poll it. */
static int edge_set = -1;

/* Sleep until fd is readable (a new edge of it, with edge_set), at most
 * timeout_ms; returns how many fds woke the sleep. */
static int sleep_on(int fd, int timeout_ms)
{
    if (edge_set >= 0) {
        struct epoll_event ev;
        return epoll_wait(edge_set, &ev, 1, timeout_ms);
    }
    struct pollfd p = { .fd = fd, .events = POLLIN };
    return poll(&p, 1, timeout_ms);
}

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
            CHECK(sleep_on(fd, 5000) >= 0, "poll");
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

static xdev_request_t by_call_req;

static void *cancel_it(void *arg)
{
    (void)arg;
    CHECK_RC(xdev_cancel(&by_call_req));
    return NULL;
}

static void *receive_it(void *arg)
{
    uint64_t in;
    CHECK_RC(xdev_recv(h_dev, &in, sizeof in, h_rank, TAG_BY_CALL, CTX_EVENT, NULL));
    CHECK(in == *(uint64_t *)arg, "the receive of the loop's send to itself: wrong payload");
    return NULL;
}

/* Arm, let another thread complete the loop's request by a call, and
 * poll: the fd must be readable well before the tick. */
static void completed_by_call(int fd, bool by_cancel)
{
    h_phase("event: %s by another thread wakes the armed loop",
            by_cancel ? "a cancel" : "a receive that matches the loop's send to itself");
    for (int round = 0; round < ROUNDS; round++) {
        uint64_t out = 0xca11ed00u + (uint64_t)round, in;
        if (by_cancel)
            CHECK_RC(xdev_irecv(h_dev, &in, sizeof in, h_prev(), TAG_BY_CALL, CTX_EVENT,
                                &by_call_req));
        else
            CHECK_RC(xdev_issend(h_dev, &out, sizeof out, h_rank, TAG_BY_CALL, CTX_EVENT,
                                 &by_call_req));
        int rc;
        do {
            while (xdev_progress(h_dev) > 0) {
            }
        } while ((rc = xdev_arm(h_dev)) == XDEV_ERR_BUSY);
        CHECK_RC(rc);
        pthread_t th;
        CHECK(pthread_create(&th, NULL, by_cancel ? cancel_it : receive_it, &out) == 0,
              "pthread_create");
        pthread_join(th, NULL);
        double t0 = h_now();
        CHECK(sleep_on(fd, 5000) == 1, "poll");
        double waited = h_now() - t0;
        CHECK(waited < WAKE_MARGIN, "round %d: the fd became readable %.1f ms after the other "
              "thread's call had completed the loop's request (the tick is 100 ms)", round,
              waited * 1e3);
        xdev_status_t st;
        CHECK_RC(xdev_wait(&by_call_req, &st));
        CHECK(st.error == (by_cancel ? XDEV_ERR_CANCELED : XDEV_OK), "round %d: error %d",
              round, st.error);
    }
}

/* One message of len bytes from the rank whose turn it is (phase) to its
 * neighbour, received in the event loop or with xdev_wait; on the
 * receiver returns the seconds from send to completion, else -1. */
static double exchange(int fd, unsigned char *buf, size_t len, uint64_t seed, int phase,
                       bool in_loop, double *waited, double *cpu, int *sleeps)
{
    h_barrier();
    if (h_rank % 2 == phase) {
        h_sleep_ms(PAUSE_MS);
        h_fill(buf, len, seed, h_rank);
        double t = h_now();
        memcpy(buf, &t, sizeof t); /* when it was sent */
        CHECK_RC(xdev_send(h_dev, buf, len, h_next(), TAG_EV, CTX_EVENT));
        return -1;
    }
    xdev_request_t req;
    xdev_status_t st;
    memset(buf, 0, len);
    CHECK_RC(xdev_irecv(h_dev, buf, len, h_prev(), TAG_EV, CTX_EVENT, &req));
    double t0 = h_now(), c0 = thread_cpu(), done;
    if (in_loop) {
        done = loop_until_done(fd, &req, &st, sleeps);
        *waited += done - t0;
        *cpu += thread_cpu() - c0;
    } else {
        CHECK_RC(xdev_wait(&req, &st));
        done = h_now();
    }
    CHECK_STATUS(&st, h_prev(), TAG_EV, CTX_EVENT, XDEV_OK, len, "event loop receive");
    double sent;
    memcpy(&sent, buf, sizeof sent);
    unsigned char *check = h_malloc(len);
    h_fill(check, len, seed, h_prev());
    CHECK(memcmp(buf + 8, check + 8, len - 8) == 0, "%zu bytes arrived changed", len);
    free(check);
    return done - sent;
}

/* Blocked (or polling) until the main thread sends this rank the message
 * it waits for. */
static void *worker(void *arg)
{
    bool poll_probe = *(const bool *)arg;
    char x;
    xdev_status_t st;
    for (int found = 0; poll_probe && !found;) {
        CHECK_RC(xdev_iprobe(h_dev, h_rank, 0, CTX_WORKER, &found, &st));
        h_sleep_ms(1);
    }
    CHECK_RC(xdev_recv(h_dev, &x, 1, h_rank, 0, CTX_WORKER, &st));
    return NULL;
}

static double median_of(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    return v[n / 2];
}

void case_event(void)
{
    args();
    int fd = xdev_fd(h_dev);
    const char *edge = getenv("XDEV_TEST_EVENT_EDGE");
    if (edge && !strcmp(edge, "1")) {
        edge_set = epoll_create1(EPOLL_CLOEXEC);
        struct epoll_event ev = { .events = EPOLLIN | EPOLLET };
        CHECK(edge_set >= 0 && epoll_ctl(edge_set, EPOLL_CTL_ADD, fd, &ev) == 0,
              "an epoll set with the fd edge-triggered");
    }
    completed_by_call(fd, true);
    completed_by_call(fd, false);
    size_t sizes[2] = { 8, (size_t)1 << 20 };
    unsigned char *buf = h_malloc(sizes[1]);
    double lat[2][ROUNDS], busy[ROUNDS];
    int nlat[2] = { 0, 0 }, nbusy = 0;
    double waited = 0, cpu = 0;
    int sleeps = 0;
    const char *w = getenv("XDEV_TEST_EVENT_WORKER");
    bool with_worker = w && (!strcmp(w, "1") || !strcmp(w, "poll"));
    bool poll_probe = with_worker && !strcmp(w, "poll");
    pthread_t worker_thread;
    if (with_worker)
        CHECK(pthread_create(&worker_thread, NULL, worker, &poll_probe) == 0, "pthread_create");
    for (int round = 0; round < ROUNDS; round++) {
        for (int s = 0; s < 2; s++) {
            /* the 1 MiB message also once with xdev_wait: its reference */
            for (int in_loop = s == 0; in_loop < 2; in_loop++) {
                for (int phase = 0; phase < 2; phase++) {
                    uint64_t seed = (uint64_t)(round * 8 + s * 4 + in_loop * 2 + phase);
                    h_phase("event: round %d, %zu bytes, %s%s", round, sizes[s],
                            (h_rank % 2) == phase ? "sending" : "waiting",
                            in_loop ? "" : " with xdev_wait");
                    double t = exchange(fd, buf, sizes[s], seed, phase, in_loop, &waited, &cpu,
                                        &sleeps);
                    if (t < 0)
                        continue;
                    if (in_loop)
                        lat[s][nlat[s]++] = t;
                    else
                        busy[nbusy++] = t;
                }
            }
        }
    }
    free(buf);
    if (with_worker) {
        CHECK_RC(xdev_send(h_dev, "x", 1, h_rank, 0, CTX_WORKER));
        CHECK(pthread_join(worker_thread, NULL) == 0, "pthread_join");
    }
    double small = median_of(lat[0], nlat[0]), large = median_of(lat[1], nlat[1]);
    double ref = median_of(busy, nbusy);
    h_phase("event: waited %.3f s with %.3f s of CPU, %d sleeps, median wake %.2f ms (8 B), "
            "%.2f ms (1 MiB; %.2f ms with xdev_wait)", waited, cpu, sleeps, small * 1e3,
            large * 1e3, ref * 1e3);
    CHECK(sleeps > 0, "the loop never slept");
    CHECK(cpu < 0.3 * waited, "the waiting thread used %.3f s of CPU in %.3f s: it spun", cpu,
          waited);
    CHECK(small < WAKE_MARGIN, "8 bytes: median %.1f ms from send to the loop's completion: "
          "wakeups lost", small * 1e3);
    CHECK(large < ref + WAKE_MARGIN, "1 MiB: median %.1f ms from send to the loop's "
          "completion, %.1f ms with xdev_wait: wakeups lost", large * 1e3, ref * 1e3);
    if (edge_set >= 0)
        close(edge_set);
    h_barrier();
}
