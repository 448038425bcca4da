/*
 * signals.c - case "signals": a signal storm cuts no call short.
 *
 * A profiler's timer, or a runtime's own signals (a JVM's, CPython's),
 * interrupt whatever system call the thread is in, and a handler
 * installed without SA_RESTART makes it fail with EINTR. From before
 * xdev_init to after xdev_finalize every rank's main thread takes
 * SIGPROF every 100 us, so that the connects, handshakes, sends, reads and
 * sleeps of every transport meet EINTR again and again. Through it:
 * every rank sends every rank, itself too, messages of 0 bytes-4 MiB, standard
 * and synchronous, each arriving whole, into its buffer and not a byte
 * past it; a ring of blocking probe, receive and matched probe; a
 * blocking wait for a message sent 200 ms late, which must not fail;
 * and xdev_peek_timed with nothing to find, which must neither end
 * early nor fail otherwise than with XDEV_ERR_TIMEOUT.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "harness.h"

enum { CTX_SIGNALS = 130, TAG_ALL = 1, TAG_RING, TAG_LATE, PERIOD_US = 100, LATE_MS = 200,
       PEEK_MS = 100, GUARD = 64 };

static atomic_long storm_hits;

static void on_storm(int sig)
{
    (void)sig;
    atomic_fetch_add_explicit(&storm_hits, 1, memory_order_relaxed);
}

/* Before h_init: a timer that signals this thread alone, every PERIOD_US
 * (the harness's watchdog thread would otherwise take some). */
void signals_before_init(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_storm; /* no SA_RESTART: blocking calls see EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGPROF;
    ev._sigev_un._tid = gettid(); /* sigev_notify_thread_id, which glibc 2.36 lacks */
    timer_t timer;
    struct itimerspec every = {{0, PERIOD_US * 1000}, {0, PERIOD_US * 1000}};
    if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0 || timer_settime(timer, 0, &every, NULL))
        h_fail(__FILE__, __LINE__, "timer", "cannot start the signal storm");
}

static void all_to_all(size_t len, int sync, uint64_t seed)
{
    h_phase("signals: %zu bytes to every rank, %s", len, sync ? "issend" : "isend");
    xdev_request_t *sq = h_malloc(h_size * sizeof *sq), *rq = h_malloc(h_size * sizeof *rq);
    unsigned char *sb = h_malloc(len), **rb = h_malloc(h_size * sizeof *rb);
    h_fill(sb, len, seed, h_rank);
    for (int p = 0; p < h_size; p++) {
        rb[p] = h_malloc(len + GUARD);
        memset(rb[p], 0xa5, len + GUARD);
        CHECK_RC(xdev_irecv(h_dev, rb[p], len, p, TAG_ALL, CTX_SIGNALS, &rq[p]));
    }
    for (int p = 0; p < h_size; p++)
        CHECK_RC((sync ? xdev_issend : xdev_isend)(h_dev, sb, len, p, TAG_ALL, CTX_SIGNALS,
                                                   &sq[p]));
    char what[96];
    for (int p = 0; p < h_size; p++) {
        xdev_status_t st;
        snprintf(what, sizeof what, "%zu bytes from rank %d under signals", len, p);
        CHECK_RC(xdev_wait(&rq[p], &st));
        CHECK_STATUS(&st, p, TAG_ALL, CTX_SIGNALS, XDEV_OK, len, what);
        CHECK_DATA(rb[p], len, seed, p, what);
        for (size_t i = len; i < len + GUARD; i++)
            CHECK(rb[p][i] == 0xa5, "%s: byte %zu past the buffer written", what, i - len);
        free(rb[p]);
    }
    for (int p = 0; p < h_size; p++)
        WAIT_SEND(&sq[p], len, "a send under signals");
    free(sq), free(rq), free(sb), free(rb);
}

static void ring(size_t len, uint64_t seed)
{
    h_phase("signals: ring of %zu bytes, blocking probe, receive and matched probe", len);
    unsigned char *sb = h_malloc(len), *rb = h_malloc(len);
    xdev_request_t sq;
    xdev_status_t st;
    h_fill(sb, len, seed, h_rank);
    CHECK_RC(xdev_isend(h_dev, sb, len, h_next(), TAG_RING, CTX_SIGNALS, &sq));
    CHECK_RC(xdev_probe(h_dev, h_prev(), TAG_RING, CTX_SIGNALS, &st));
    CHECK_STATUS(&st, h_prev(), TAG_RING, CTX_SIGNALS, XDEV_OK, len, "a probe under signals");
    CHECK_RC(xdev_recv(h_dev, rb, len, h_prev(), TAG_RING, CTX_SIGNALS, &st));
    CHECK_STATUS(&st, h_prev(), TAG_RING, CTX_SIGNALS, XDEV_OK, len, "a recv under signals");
    CHECK_DATA(rb, len, seed, h_prev(), "a recv under signals");
    WAIT_SEND(&sq, len, "a ring send under signals");

    xdev_message_t msg;
    h_fill(sb, len, seed + 1, h_rank);
    CHECK_RC(xdev_isend(h_dev, sb, len, h_next(), TAG_RING, CTX_SIGNALS, &sq));
    CHECK_RC(xdev_mprobe(h_dev, h_prev(), TAG_RING, CTX_SIGNALS, &msg, &st));
    CHECK_RC(xdev_mrecv(h_dev, rb, len, &msg, &st));
    CHECK_STATUS(&st, h_prev(), TAG_RING, CTX_SIGNALS, XDEV_OK, len, "an mrecv under signals");
    CHECK_DATA(rb, len, seed + 1, h_prev(), "an mrecv under signals");
    WAIT_SEND(&sq, len, "a ring send under signals");
    free(sb), free(rb);
}

/* Rank 0 sends its neighbour a message LATE_MS late: the neighbour sleeps
 * in xdev_wait (on the transports' fds or a futex) meanwhile. */
static void late_wait(void)
{
    h_phase("signals: a blocking wait %d ms long", LATE_MS);
    uint64_t v = 0x5157, got = 0;
    xdev_request_t rq;
    xdev_status_t st;
    h_barrier();
    if (h_rank == 0) {
        h_sleep_ms(LATE_MS);
        CHECK_RC(xdev_send(h_dev, &v, sizeof v, 1, TAG_LATE, CTX_SIGNALS));
    } else if (h_rank == 1) {
        CHECK_RC(xdev_irecv(h_dev, &got, sizeof got, 0, TAG_LATE, CTX_SIGNALS, &rq));
        CHECK_RC(xdev_wait(&rq, &st));
        CHECK_STATUS(&st, 0, TAG_LATE, CTX_SIGNALS, XDEV_OK, sizeof got, "the late message");
        CHECK(got == v, "the late message holds %#llx", (unsigned long long)got);
    }
}

static void timed_peek(void)
{
    h_phase("signals: xdev_peek_timed(%d) with nothing to find", PEEK_MS);
    xdev_request_t *req = NULL;
    double t0 = h_now();
    int rc = xdev_peek_timed(h_dev, PEEK_MS, &req);
    double took = h_now() - t0;
    CHECK(rc == XDEV_ERR_TIMEOUT && req == NULL, "xdev_peek_timed returned %d (%s), req %p", rc,
          xdev_strerror(rc), (void *)req);
    CHECK(took >= PEEK_MS / 1000.0, "xdev_peek_timed(%d) gave up after %.3f s", PEEK_MS, took);
}

void case_signals(void)
{
    static const size_t lens[] = { 0, 1, 1000, 8 * KiB, 64 * KiB, 64 * KiB + 1, 1 * MiB, 4 * MiB };
    uint64_t seed = 1;
    for (int round = 0; round < 2; round++)
        for (size_t i = 0; i < sizeof lens / sizeof *lens; i++)
            all_to_all(lens[i], (int)(i + round) % 2, seed++);
    ring(300 * KiB, seed++);
    ring(100, seed++);
    late_wait();
    timed_peek();
    long hits = atomic_load(&storm_hits);
    CHECK(hits > 1000, "only %ld signals came: no storm", hits);
    if (h_rank == 0)
        printf("signals: %ld signals on rank 0 so far\n", hits);
}
