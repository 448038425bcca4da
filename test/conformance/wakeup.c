/*
 * wakeup.c - case "wakeup": xdev_wakeup and xdev_peek_timed.
 *
 *  - A thread blocked in xdev_peek with nothing outstanding, in xdev_wait
 *    on a receive nobody sends to, and in a blocking xdev_recv returns
 *    XDEV_ERR_WOKEN when another thread calls xdev_wakeup; the request of
 *    the xdev_wait is still active (and cancellable), and the blocking
 *    receive took no message (its status says cancelled): the one sent
 *    afterwards arrives whole.
 *  - xdev_probe is woken the same way from a signal handler, and
 *    xdev_mprobe from a thread: neither writes its status, and the
 *    woken xdev_mprobe leaves *msg empty.
 *  - A wakeup is not sticky: the next blocking call blocks as usual.
 *  - xdev_peek_timed: 0 looks once, a bound is never cut short, and a
 *    completion is handed out as xdev_peek would.
 *  - Under traffic (2 ranks): while a thread receives a stream of
 *    messages, a blocked xdev_recv beside it still notices a wakeup at
 *    once, and a bounded xdev_peek_timed still ends at its bound. (A
 *    waiter that looked only once no message had come for a while missed
 *    both for up to 2 s.)
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

enum { CTX_WAKE = 96, CTX_STREAM = 95, TAG_LATE = 1, TAG_PEEK = 2, TAG_DATA = 3, TAG_STOP = 4 };

/* A blocked call that takes longer than this to notice has missed it. */
#define NOTICE_S 0.5

/* Fills the status before each blocked call, to see whether it wrote one. */
enum { UNWRITTEN = 0x5a };

enum blocked_call { B_PEEK, B_WAIT, B_RECV, B_PROBE, B_MPROBE, B_PEEK_TIMED };

static struct {
    enum blocked_call call;
    xdev_request_t req;
    int rc;
    xdev_status_t st; /* what the blocked call wrote, UNWRITTEN bytes before */
    xdev_message_t msg; /* the same, for xdev_mprobe */
    double returned;
    int finished; /* set (atomically) once returned is */
} b;

static void *blocker(void *arg)
{
    (void)arg;
    xdev_request_t *out;
    unsigned char buf[16];
    switch (b.call) {
    case B_PEEK: b.rc = xdev_peek(h_dev, &out); break;
    case B_WAIT: b.rc = xdev_wait(&b.req, &b.st); break;
    case B_RECV:
        b.rc = xdev_recv(h_dev, buf, sizeof buf, h_prev(), TAG_LATE, CTX_WAKE, &b.st);
        break;
    case B_PROBE: b.rc = xdev_probe(h_dev, h_prev(), TAG_LATE, CTX_WAKE, &b.st); break;
    case B_MPROBE:
        b.rc = xdev_mprobe(h_dev, h_prev(), TAG_LATE, CTX_WAKE, &b.msg, &b.st);
        break;
    case B_PEEK_TIMED: b.rc = xdev_peek_timed(h_dev, 50, &out); break;
    }
    b.returned = h_now();
    __atomic_store_n(&b.finished, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void on_usr1(int sig)
{
    (void)sig;
    xdev_wakeup(h_dev);
}

/* Start the blocked call, let it settle into its sleep, wake it (from a
 * thread or by a signal to the blocked thread), and check it returned
 * XDEV_ERR_WOKEN soon after. */
static void wake(enum blocked_call call, bool by_signal, const char *what)
{
    h_phase("wakeup: %s", what);
    b.call = call;
    b.rc = 12345;
    memset(&b.st, UNWRITTEN, sizeof b.st);
    memset(&b.msg, UNWRITTEN, sizeof b.msg);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, blocker, NULL) == 0, "pthread_create");
    h_sleep_ms(100); /* past the spin and yield phases, asleep */
    double t0 = h_now();
    if (by_signal)
        CHECK(pthread_kill(th, SIGUSR1) == 0, "pthread_kill");
    else
        CHECK_RC(xdev_wakeup(h_dev));
    pthread_join(th, NULL);
    CHECK(b.rc == XDEV_ERR_WOKEN, "%s returned %d (%s), want XDEV_ERR_WOKEN", what, b.rc,
          xdev_strerror(b.rc));
    CHECK(b.returned - t0 < 2.0, "%s took %.3f s to notice the wakeup", what, b.returned - t0);
}

static void wake_blocked_calls(void)
{
    CHECK(!(h_flags & XDEV_FLAG_SINGLE_THREAD), "this case needs a multi-threaded device");
    wake(B_PEEK, false, "xdev_peek with nothing outstanding");

    CHECK_RC(xdev_irecv(h_dev, NULL, 0, h_prev(), TAG_PEEK, CTX_WAKE, &b.req));
    wake(B_WAIT, false, "xdev_wait on a receive nobody sends to");
    CHECK_RC(xdev_cancel(&b.req)); /* still active after the wakeup */
    xdev_status_t st;
    CHECK_RC(xdev_wait(&b.req, &st));
    CHECK(st.error == XDEV_ERR_CANCELED, "the woken receive: error %d", st.error);

    wake(B_RECV, false, "a blocking xdev_recv");
    CHECK(b.st.error == XDEV_ERR_CANCELED && b.st.count == 0,
          "the woken xdev_recv's status: error %d count %zu, want cancelled and 0", b.st.error,
          b.st.count);

    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, &old) == 0, "sigaction");
    wake(B_PROBE, true, "xdev_probe, woken from a signal handler");
    xdev_status_t untouched;
    memset(&untouched, UNWRITTEN, sizeof untouched);
    CHECK(memcmp(&b.st, &untouched, sizeof untouched) == 0, "the woken xdev_probe wrote its st");
    sigaction(SIGUSR1, &old, NULL);

    wake(B_MPROBE, false, "xdev_mprobe");
    CHECK(memcmp(&b.st, &untouched, sizeof untouched) == 0, "the woken xdev_mprobe wrote its st");
    xdev_message_t empty;
    memset(&empty, 0, sizeof empty);
    CHECK(memcmp(&b.msg, &empty, sizeof empty) == 0, "the woken xdev_mprobe left *msg as it was");

    /* not sticky, and the woken receive took nothing: this one gets it */
    h_barrier();
    unsigned char sb[16], rb[16];
    h_fill(sb, sizeof sb, 41, h_rank);
    CHECK_RC(xdev_send(h_dev, sb, sizeof sb, h_next(), TAG_LATE, CTX_WAKE));
    CHECK_RC(xdev_recv(h_dev, rb, sizeof rb, h_prev(), TAG_LATE, CTX_WAKE, &st));
    CHECK_STATUS(&st, h_prev(), TAG_LATE, CTX_WAKE, XDEV_OK, sizeof sb, "after the wakeups");
    CHECK_DATA(rb, sizeof sb, 41, h_prev(), "after the wakeups");
    h_barrier();
}

/* The wakeup is for every call blocked at the time, the stream's
 * receives too, which then receive again. */
static void *stream_in(void *arg)
{
    (void)arg;
    unsigned char m[64];
    xdev_status_t st = { .tag = TAG_DATA };
    while (st.tag != TAG_STOP) {
        int rc = xdev_recv(h_dev, m, sizeof m, 1, XDEV_ANY_TAG, CTX_STREAM, &st);
        CHECK(rc == XDEV_OK || rc == XDEV_ERR_WOKEN, "the stream's xdev_recv returned %d (%s)",
              rc, xdev_strerror(rc));
    }
    return NULL;
}

/* Rank 1 streams 64-byte messages to rank 0 until rank 0 says stop, and
 * then says stop itself. */
static void stream_out(void)
{
    unsigned char m[64] = { 0 };
    xdev_status_t st;
    int stop = 0;
    for (unsigned n = 1; !stop; n++) {
        CHECK_RC(xdev_send(h_dev, m, sizeof m, 0, TAG_DATA, CTX_STREAM));
        if (n % 64 == 0)
            CHECK_RC(xdev_iprobe(h_dev, 0, TAG_STOP, CTX_STREAM, &stop, &st));
    }
    CHECK_RC(xdev_recv(h_dev, NULL, 0, 0, TAG_STOP, CTX_STREAM, &st));
    CHECK_RC(xdev_send(h_dev, NULL, 0, 0, TAG_STOP, CTX_STREAM));
}

/* On rank 0, while a thread receives rank 1's stream, a blocked call
 * must notice a wakeup, or its bound; the stream stops only once it has
 * returned (or after 10 s). */
static void under_traffic(enum blocked_call call, const char *what)
{
    h_phase("wakeup: %s, under traffic", what);
    if (h_rank == 1) {
        stream_out();
    } else {
        pthread_t in, th;
        CHECK(pthread_create(&in, NULL, stream_in, NULL) == 0, "pthread_create");
        h_sleep_ms(50);
        b.call = call;
        b.rc = 12345;
        b.finished = 0;
        double t0 = h_now();
        CHECK(pthread_create(&th, NULL, blocker, NULL) == 0, "pthread_create");
        if (call != B_PEEK_TIMED) {
            h_sleep_ms(100);
            t0 = h_now();
            CHECK_RC(xdev_wakeup(h_dev));
        }
        while (!__atomic_load_n(&b.finished, __ATOMIC_ACQUIRE) && h_now() - t0 < 10)
            h_sleep_ms(1);
        CHECK_RC(xdev_send(h_dev, NULL, 0, 1, TAG_STOP, CTX_STREAM));
        pthread_join(th, NULL);
        pthread_join(in, NULL);
        double bound = call == B_PEEK_TIMED ? 0.05 + NOTICE_S : NOTICE_S;
        int want = call == B_PEEK_TIMED ? XDEV_ERR_TIMEOUT : XDEV_ERR_WOKEN;
        CHECK(b.rc == want, "%s under traffic returned %d (%s), want %s", what, b.rc,
              xdev_strerror(b.rc), xdev_strerror(want));
        CHECK(b.returned - t0 < bound, "%s under traffic returned after %.3f s, want under %.2f s",
              what, b.returned - t0, bound);
    }
    h_barrier();
}

static void peek_timed(void)
{
    h_phase("wakeup: xdev_peek_timed");
    xdev_request_t *out = NULL, r;
    CHECK(xdev_peek_timed(h_dev, 0, &out) == XDEV_ERR_TIMEOUT && !out, "a look at nothing");
    double t0 = h_now();
    CHECK(xdev_peek_timed(h_dev, 50, &out) == XDEV_ERR_TIMEOUT && !out, "50 ms of nothing");
    double waited = h_now() - t0;
    CHECK(waited >= 0.049, "a 50 ms peek returned after %.4f s", waited);
    CHECK(xdev_peek_timed(h_dev, -2, &out) == XDEV_ERR_ARG, "timeout -2");
    CHECK(xdev_peek_timed(NULL, 0, &out) == XDEV_ERR_ARG, "NULL dev");

    uint64_t v = 7, in = 0;
    CHECK_RC(xdev_irecv(h_dev, &in, sizeof in, h_prev(), TAG_PEEK, CTX_WAKE, &r));
    h_barrier();
    CHECK_RC(xdev_send(h_dev, &v, sizeof v, h_next(), TAG_PEEK, CTX_WAKE));
    CHECK_RC(xdev_peek_timed(h_dev, 10000, &out));
    CHECK(out == &r, "xdev_peek_timed handed out another request");
    xdev_status_t st;
    CHECK_RC(xdev_wait(&r, &st));
    CHECK(st.error == XDEV_OK && in == 7, "the peeked receive: error %d value %llu", st.error,
          (unsigned long long)in);
    h_barrier();
}

void case_wakeup(void)
{
    wake_blocked_calls();
    peek_timed();
    /* At 2 ranks only: with more, ranks and their threads oversubscribe
     * the 2-core hosts this runs on so much that a thread may wait for a
     * core longer than the bound. */
    for (int round = 0; round < 3 && h_size == 2; round++) {
        under_traffic(B_RECV, "a blocking xdev_recv");
        under_traffic(B_PEEK_TIMED, "a 50 ms xdev_peek_timed");
    }
}
