/*
 * threads.c - case "threads": four threads per rank send and receive at
 * once on one device, each thread on its own tag, eager and rendezvous
 * sizes, nonblocking and blocking calls mixed; every byte is checked.
 * Then reap.c's checks that two threads cannot reap one request twice.
 *
 * Run with XDEV_CONF_WATCHDOG=0, the process has one thread until the
 * workers start, and in a process of one thread the device takes no lock:
 * a worker's traffic runs on the main thread first, and the lock must then
 * hold for the four.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/single_threaded.h>

#include "cases.h"
#include "harness.h"

enum { CTX_THREADS = 80, NTHREADS = 4, NMSG = 48, WINDOW = 4 };

static size_t len_of(int t, int j)
{
    size_t rndz = h_eager + 4096 > 256 * KiB ? h_eager + 4096 : 256 * KiB;
    return j % 8 == 7 ? rndz + (size_t)t : (size_t)(j * 37 + t * 11) % 3000;
}

static uint64_t seed_of(int t, int j) { return 9000 + (uint64_t)t * 1000 + (uint64_t)j; }

static void check_recv(int t, int j, const xdev_status_t *st, const unsigned char *buf)
{
    char what[64];
    snprintf(what, sizeof what, "thread %d message #%d", t, j);
    CHECK_STATUS(st, h_prev(), t, CTX_THREADS, XDEV_OK, len_of(t, j), what);
    CHECK_DATA(buf, len_of(t, j), seed_of(t, j), h_prev(), what);
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    size_t cap = len_of(t, 7);
    unsigned char *sb[WINDOW], *rb[WINDOW];
    for (int w = 0; w < WINDOW; w++) {
        sb[w] = h_malloc(cap);
        rb[w] = h_malloc(cap);
    }
    for (int j0 = 0; j0 < NMSG; j0 += WINDOW) {
        xdev_request_t rq[WINDOW], sq[WINDOW];
        xdev_status_t st;
        int blocking = (j0 / WINDOW) % 3 == 2;
        for (int w = 0; w < WINDOW; w++) {
            int j = j0 + w, src = j % 2 ? XDEV_ANY_SOURCE : h_prev();
            CHECK_RC(xdev_irecv(h_dev, rb[w], cap, src, t, CTX_THREADS, &rq[w]));
        }
        for (int w = 0; w < WINDOW; w++) {
            int j = j0 + w;
            h_fill(sb[w], len_of(t, j), seed_of(t, j), h_rank);
            if (blocking)
                CHECK_RC(xdev_send(h_dev, sb[w], len_of(t, j), h_next(), t, CTX_THREADS));
            else
                CHECK_RC(xdev_isend(h_dev, sb[w], len_of(t, j), h_next(), t, CTX_THREADS, &sq[w]));
        }
        for (int w = WINDOW - 1; w >= 0; w--) {
            CHECK_RC(xdev_wait(&rq[w], &st));
            check_recv(t, j0 + w, &st, rb[w]);
        }
        for (int w = 0; w < WINDOW && !blocking; w++)
            WAIT_SEND(&sq[w], len_of(t, j0 + w), "thread send");
    }
    /* a final round with blocking receives */
    for (int j = NMSG; j < NMSG + 2; j++) {
        xdev_request_t sq;
        xdev_status_t st;
        h_fill(sb[0], len_of(t, j), seed_of(t, j), h_rank);
        CHECK_RC(xdev_isend(h_dev, sb[0], len_of(t, j), h_next(), t, CTX_THREADS, &sq));
        CHECK_RC(xdev_recv(h_dev, rb[0], cap, h_prev(), t, CTX_THREADS, &st));
        check_recv(t, j, &st, rb[0]);
        WAIT_SEND(&sq, len_of(t, j), "thread send");
    }
    for (int w = 0; w < WINDOW; w++)
        free(sb[w]), free(rb[w]);
    return NULL;
}

void case_threads(void)
{
    h_phase("threads: %d threads per rank, %d messages each", NTHREADS, NMSG + 2);
    CHECK(!(h_flags & XDEV_FLAG_SINGLE_THREAD), "this case needs a multi-threaded device, but "
          "the environment asks for XDEV_FLAG_SINGLE_THREAD");
    const char *watchdog = getenv("XDEV_CONF_WATCHDOG");
    if (watchdog && !strcmp(watchdog, "0")) {
        CHECK(__libc_single_threaded, "no watchdog, yet the process has threads before the "
              "workers start");
        worker((void *)(intptr_t)NTHREADS);
    }
    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++)
        CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0, "pthread_create");
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
    threads_reap();
}
