/*
 * harness.c - device start/stop, failures, patterns, watchdog, sizes.
 */
#include "harness.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

xdev_t *t_dev;
int t_rank = -1, t_size = -1;
static const char *t_case = "?";
static char phase[256] = "start";
static int ctx_next = 100;

void t_phase(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(phase, sizeof phase, fmt, ap);
    va_end(ap);
}

static void on_alarm(int sig)
{
    (void)sig;
    char msg[400];
    int n = snprintf(msg, sizeof msg, "[rank %d] %s: WATCHDOG: stuck in phase: %s\n", t_rank,
                     t_case, phase);
    if (n > 0) (void)!write(2, msg, (size_t)n);
    _exit(3);
}

void t_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "[rank %d] %s: FAIL %s:%d: (%s) %s [phase: %s]\n", t_rank, t_case, file, line,
            cond, msg, phase);
    fflush(stderr);
    _exit(1);
}

double t_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void *t_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    CHECK(p != NULL, "malloc(%zu)", n);
    return p;
}

void t_fill(void *buf, size_t len, uint64_t seed, int who)
{
    uint8_t *p = buf;
    for (size_t i = 0; i < len; i++) p[i] = t_byte(seed, who, i);
}

size_t t_verify(const void *buf, size_t len, uint64_t seed, int who)
{
    const uint8_t *p = buf;
    for (size_t i = 0; i < len; i++)
        if (p[i] != t_byte(seed, who, i)) return i;
    return (size_t)-1;
}

void t_init(const char *casename)
{
    t_case = casename;
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGALRM, on_alarm);
    const char *w = getenv("XDEV_COLL_TEST_WATCHDOG");
    alarm(w && *w ? (unsigned)atoi(w) : 100);
    CHECK_RC(xdev_init(NULL, &t_dev));
    t_rank = xdev_rank(t_dev);
    t_size = xdev_size(t_dev);
}

void t_finalize(void)
{
    t_phase("xdev_finalize");
    int rc = xdev_finalize(t_dev);
    CHECK(rc == XDEV_OK, "xdev_finalize returned %d (%s)", rc, xdev_strerror(rc));
    if (t_rank == 0) printf("coll %s: %d ranks: PASS\n", t_case, t_size);
}

int t_next_ctx(void) { return ctx_next++; }

xdev_coll_group_t *t_world(const char *var, const char *alg)
{
    xdev_coll_group_t *g = NULL;
    if (var) {
        if (alg) setenv(var, alg, 1);
        else unsetenv(var);
    }
    CHECK_RC(xdev_coll_group_create(t_dev, NULL, t_size, t_next_ctx(), &g));
    if (var) unsetenv(var);
    return g;
}

/* Every size for small jobs; fewer, but still 0 B to 4 MiB, when ranks
 * outnumber the 2 cores several times over. XDEV_COLL_TEST_MAX caps them. */
const size_t *t_sizes(void)
{
    static size_t sizes[16];
    static const size_t small[] = {0, 1, 7, 8, 64, 1000, 4 * KiB + 3, 32 * KiB,
                                   100 * KiB + 1, 1 * MiB, 4 * MiB, (size_t)-1};
    static const size_t large[] = {0, 8, 3000, 100 * KiB + 1, 4 * MiB, (size_t)-1};
    const size_t *from = t_size <= 4 ? small : large;
    size_t max = (size_t)-2;
    const char *m = getenv("XDEV_COLL_TEST_MAX");
    if (m && *m) max = strtoull(m, NULL, 10);
    int n = 0;
    for (int i = 0; from[i] != (size_t)-1; i++)
        if (from[i] <= max) sizes[n++] = from[i];
    sizes[n] = (size_t)-1;
    return sizes;
}
