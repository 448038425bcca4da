/*
 * harness.c - device start/stop, barrier, checks, data patterns, watchdog.
 */
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

xdev_t *h_dev;
int h_rank = -1, h_size = -1;
size_t h_eager;
unsigned h_flags;
const char *h_case = "?";
void (*h_after_finalize)(void);

/* --- phase and watchdog -------------------------------------------------- */

static pthread_mutex_t phase_lock = PTHREAD_MUTEX_INITIALIZER;
static char phase[256] = "start";

void h_phase(const char *fmt, ...)
{
    char buf[sizeof phase];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&phase_lock);
    memcpy(phase, buf, sizeof buf);
    pthread_mutex_unlock(&phase_lock);
}

static void phase_copy(char *out, size_t n)
{
    pthread_mutex_lock(&phase_lock);
    snprintf(out, n, "%s", phase);
    pthread_mutex_unlock(&phase_lock);
}

/* Fires shortly before xdevrun's --timeout so that a hang names its phase. */
static void *watchdog(void *arg)
{
    double limit = *(double *)arg;
    double start = h_now();
    for (;;) {
        sleep(1);
        if (h_now() - start > limit) {
            char p[sizeof phase];
            phase_copy(p, sizeof p);
            fprintf(stderr, "[rank %d] %s: WATCHDOG: no finish after %.0f s, stuck in phase: %s\n",
                    h_rank, h_case, limit, p);
            fflush(stderr);
            _exit(3);
        }
    }
    return NULL;
}

/* --- failures ------------------------------------------------------------ */

void h_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    char msg[1024], p[sizeof phase];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    phase_copy(p, sizeof p);
    fprintf(stderr, "[rank %d] %s: FAIL %s:%d: (%s) %s [phase: %s]\n", h_rank, h_case, file,
            line, cond, msg, p);
    fflush(stderr);
    fflush(stdout);
    _exit(1);
}

void h_check_status(const char *file, int line, const xdev_status_t *st, int src, int tag,
                    int ctx, int error, size_t count, const char *what)
{
    /* whole messages: the full length is what was delivered */
    int len_ok = error == XDEV_ERR_TRUNCATE ? st->msg_len > count : st->msg_len == count;
    if (st->source != src || st->tag != tag || st->ctx != ctx || st->error != error ||
        st->count != count || !len_ok)
        h_fail(file, line, "status", "%s: got {source %d, tag %d, ctx %d, error %d (%s), count %zu, "
               "msg_len %zu}, want {source %d, tag %d, ctx %d, error %d (%s), count %zu}",
               what, st->source, st->tag, st->ctx, st->error, xdev_strerror(st->error),
               st->count, st->msg_len, src, tag, ctx, error, xdev_strerror(error), count);
}

void h_check_send_status(const char *file, int line, const xdev_status_t *st, size_t count,
                         const char *what)
{
    if (st->error != XDEV_OK || st->count != count || st->msg_len != count)
        h_fail(file, line, "send status", "%s: got {error %d (%s), count %zu}, want {error 0, count %zu}",
               what, st->error, xdev_strerror(st->error), st->count, count);
}

/* --- device ---------------------------------------------------------------- */

void h_init(const char *casename)
{
    h_case = casename;
    setvbuf(stdout, NULL, _IOLBF, 0);

    /* XDEV_TEST_HOSTS=N puts rank r on host r % N, so that auto drives shm
     * to some peers and tcp to the others in one device. */
    const char *hosts = getenv("XDEV_TEST_HOSTS"), *rank = getenv("XDEV_RANK");
    if (hosts && rank) {
        char id[32];
        snprintf(id, sizeof id, "conformance-host-%d", atoi(rank) % atoi(hosts));
        setenv("XDEV_HOST_ID", id, 1);
    }

    xdev_config_t cfg;
    CHECK_RC(xdev_config_init(&cfg));
    h_eager = cfg.eager_limit;
    h_flags = cfg.flags;

    /* xdev_init must leave the application's signal handlers alone (a
     * libfabric provider's library once replaced them). */
    static const int sigs[] = { SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGABRT };
    struct sigaction before[5], after;
    for (int i = 0; i < 5; i++)
        sigaction(sigs[i], NULL, &before[i]);
    CHECK_RC(xdev_init(NULL, &h_dev));
    for (int i = 0; i < 5; i++) {
        sigaction(sigs[i], NULL, &after);
        CHECK(after.sa_handler == before[i].sa_handler,
              "xdev_init changed the handler of signal %d", sigs[i]);
    }
    CHECK(h_dev != NULL, "xdev_init returned OK but no device");
    h_rank = xdev_rank(h_dev);
    h_size = xdev_size(h_dev);
    CHECK(h_size >= 2, "the conformance suite needs at least 2 ranks, size is %d", h_size);
    CHECK(h_rank >= 0 && h_rank < h_size, "rank %d out of range (size %d)", h_rank, h_size);
    const char *pmix_rank = getenv("PMIX_RANK");
    if (pmix_rank && !getenv("XDEV_RANK")) /* started by mpirun or srun */
        CHECK(h_rank == atoi(pmix_rank), "device says rank %d, PMIx %s", h_rank, pmix_rank);
    else
        CHECK(h_rank == cfg.rank && h_size == cfg.size,
              "device says rank %d of %d, environment says %d of %d", h_rank, h_size, cfg.rank,
              cfg.size);

    static double limit = 110;
    const char *w = getenv("XDEV_CONF_WATCHDOG");
    if (w && *w)
        limit = atof(w);
    pthread_t t;
    if (limit > 0 && pthread_create(&t, NULL, watchdog, &limit) == 0)
        pthread_detach(t);

    if (h_rank == 0)
        printf("conformance %s: %d ranks, transport %s, eager limit %zu, xdev %s\n", h_case,
               h_size, cfg.transport ? cfg.transport : "(default)", h_eager, xdev_version());
    h_phase("after init");
    h_barrier();
}

void h_finalize(void)
{
    h_phase("final barrier");
    h_barrier();
    h_phase("xdev_finalize");
    int rc = xdev_finalize(h_dev);
    CHECK(rc == XDEV_OK, "xdev_finalize returned %d (%s): a request was left active", rc,
          xdev_strerror(rc));
    h_dev = NULL;
    if (h_after_finalize)
        h_after_finalize();
    if (h_rank == 0)
        printf("conformance %s: %d ranks: PASS\n", h_case, h_size);
}

/* Dissemination barrier: in round k every rank sends a 0-byte message to
 * rank + 2^k and receives one from rank - 2^k. The tag carries a sequence
 * number and the round, so consecutive barriers never mix. */
void h_barrier(void)
{
    static unsigned seq;
    seq++;
    for (int k = 0, d = 1; d < h_size; k++, d <<= 1) {
        int tag = (int)((seq & 0xffffffu) << 5) | k;
        xdev_request_t rr, sr;
        xdev_status_t st;
        CHECK_RC(xdev_irecv(h_dev, NULL, 0, (h_rank + h_size - d) % h_size, tag, H_CTX_BARRIER, &rr));
        CHECK_RC(xdev_isend(h_dev, NULL, 0, (h_rank + d) % h_size, tag, H_CTX_BARRIER, &sr));
        CHECK_RC(xdev_wait(&rr, &st));
        CHECK_STATUS(&st, (h_rank + h_size - d) % h_size, tag, H_CTX_BARRIER, XDEV_OK, 0,
                     "barrier receive");
        WAIT_SEND(&sr, 0, "barrier send");
    }
}

void h_send_u64(int dst, int tag, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    CHECK_RC(xdev_send(h_dev, b, sizeof b, dst, tag, H_CTX_CONTROL));
}

uint64_t h_recv_u64(int src, int tag)
{
    unsigned char b[8];
    xdev_status_t st;
    CHECK_RC(xdev_recv(h_dev, b, sizeof b, src, tag, H_CTX_CONTROL, &st));
    CHECK_STATUS(&st, src, tag, H_CTX_CONTROL, XDEV_OK, 8, "control message");
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return v;
}

/* --- time and memory ----------------------------------------------------- */

double h_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* To a deadline: a relative sleep resumed after each signal never ends
 * when signals come faster than the timer's slack ("signals"). */
void h_sleep_ms(int ms)
{
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += ms / 1000;
    end.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (end.tv_nsec >= 1000000000L)
        end.tv_sec++, end.tv_nsec -= 1000000000L;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end, NULL) == EINTR)
        ;
}

/* Buffers of many MiB sit on transparent huge pages where the kernel has
 * them: the cases fill and check up to 2 GiB per rank, and on a machine
 * whose 4 KiB page faults are slow (a VM's, ~15 us each) the faults, not
 * the transport, would make up most of their run time. */
enum { HUGE_PAGE = 2 * 1024 * 1024 };

void *h_malloc(size_t n)
{
    void *p = NULL;
    if (n >= 4 * HUGE_PAGE) {
        if (posix_memalign(&p, HUGE_PAGE, n) != 0)
            p = NULL;
        else
            (void)madvise(p, n / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE); /* a hint */
    } else {
        p = malloc(n ? n : 1);
    }
    CHECK(p != NULL, "malloc(%zu) failed", n);
    return p;
}

/* --- patterns ------------------------------------------------------------ */

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t stream_base(uint64_t seed, int sender)
{
    return mix64(seed * 0x9e3779b97f4a7c15ull + ((uint64_t)(uint32_t)sender << 32) + 0x5851f42d);
}

static inline uint64_t pattern_word(uint64_t base, size_t w)
{
    return mix64(base + ((uint64_t)w + 1) * 0x9e3779b97f4a7c15ull);
}

/* Byte i is byte (i % 8) in memory of word i / 8, on any byte order. */
uint8_t h_pattern_byte(uint64_t seed, int sender, size_t i)
{
    uint64_t w = pattern_word(stream_base(seed, sender), i / 8);
    uint8_t b[8];
    memcpy(b, &w, 8);
    return b[i % 8];
}

void h_fill(void *buf, size_t len, uint64_t seed, int sender)
{
    unsigned char *p = buf;
    uint64_t base = stream_base(seed, sender);
    size_t w = 0;
    for (; (w + 1) * 8 <= len; w++) {
        uint64_t v = pattern_word(base, w);
        memcpy(p + w * 8, &v, 8);
    }
    for (size_t i = w * 8; i < len; i++)
        p[i] = h_pattern_byte(seed, sender, i);
}

size_t h_verify(const void *buf, size_t len, uint64_t seed, int sender)
{
    const unsigned char *p = buf;
    uint64_t base = stream_base(seed, sender);
    size_t w = 0;
    for (; (w + 1) * 8 <= len; w++) {
        uint64_t v = pattern_word(base, w), got;
        memcpy(&got, p + w * 8, 8);
        if (got != v) {
            for (size_t i = w * 8;; i++)
                if (p[i] != h_pattern_byte(seed, sender, i))
                    return i;
        }
    }
    for (size_t i = w * 8; i < len; i++)
        if (p[i] != h_pattern_byte(seed, sender, i))
            return i;
    return H_GOOD;
}

void h_check_data(const char *file, int line, const void *buf, size_t len, uint64_t seed,
                  int sender, const char *what)
{
    size_t bad = h_verify(buf, len, seed, sender);
    if (bad == H_GOOD)
        return;
    /* Whose data is it? Look for a small seed and a rank whose pattern
     * matches from the bad offset on (the cases use seeds below 100000). */
    char guess[96] = "";
    size_t n = len - bad < 16 ? len - bad : 16;
    for (uint64_t s = 0; s < 100000 && !guess[0]; s++)
        for (int r = 0; r < h_size && !guess[0]; r++) {
            size_t i = 0;
            while (i < n && ((const unsigned char *)buf)[bad + i] == h_pattern_byte(s, r, bad + i))
                i++;
            if (i == n && n >= 4)
                snprintf(guess, sizeof guess, "; from there on it looks like seed %llu from rank %d",
                         (unsigned long long)s, r);
        }
    char got[3 * 16 + 1] = "", want[3 * 16 + 1] = "";
    for (size_t i = 0; i < n; i++) {
        snprintf(got + 3 * i, 4, " %02x", ((const unsigned char *)buf)[bad + i]);
        snprintf(want + 3 * i, 4, " %02x", h_pattern_byte(seed, sender, bad + i));
    }
    h_fail(file, line, "data", "%s: %zu-byte message (seed %llu from rank %d) differs first at "
           "offset %zu: got%s, want%s%s", what, len, (unsigned long long)seed, sender, bad, got,
           want, guess);
}

size_t h_verify_const(const void *buf, size_t len, uint8_t value)
{
    const unsigned char *p = buf;
    for (size_t i = 0; i < len; i++)
        if (p[i] != value)
            return i;
    return H_GOOD;
}

/* --- random -------------------------------------------------------------- */

uint64_t h_rand(h_rng_t *r)
{
    r->s += 0x9e3779b97f4a7c15ull;
    return mix64(r->s);
}

void h_shuffle(int *v, size_t n, h_rng_t *r)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)h_rand_below(r, i);
        int t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}
