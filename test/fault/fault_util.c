/* fault_util.c - helpers shared by the fault tests; see fault_util.h. */
#include "fault_util.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int fault_failures;

static const char *test_name = "fault";
static int my_rank = -1;
static const char *volatile current_step = "start";

static void on_alarm(int sig)
{
    char msg[256];
    const char *step = current_step;
    int n = snprintf(msg, sizeof msg, "[%s rank %d] FAIL: watchdog fired (hung in: %s)\n",
                     test_name, my_rank, step);
    (void)sig;
    if (n > 0) {
        ssize_t w = write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
        (void)w;
    }
    _exit(3);
}

void fault_setup(const char *name, int watchdog_s)
{
    const char *r = getenv("XDEV_RANK");
    test_name = name;
    if (r) my_rank = atoi(r);
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGALRM, on_alarm);
    if (watchdog_s > 0) alarm((unsigned)watchdog_s);
}

void fault_step(const char *what) { current_step = what; }
void fault_set_rank(int rank) { my_rank = rank; }

void fault_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fault_failures++;
    fprintf(stderr, "[%s rank %d] FAIL %s:%d: ", test_name, my_rank, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

void fault_fail_cond(const char *file, int line, const char *what, const char *fmt, ...)
{
    va_list ap;
    fault_failures++;
    fprintf(stderr, "[%s rank %d] FAIL %s:%d: (%s) ", test_name, my_rank, file, line, what);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
}

void fault_log(const char *fmt, ...)
{
    va_list ap;
    printf("[%s rank %d] ", test_name, my_rank);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

int fault_finish(void)
{
    if (fault_failures) {
        fprintf(stderr, "[%s rank %d] FAIL: %d check(s) failed\n", test_name, my_rank,
                fault_failures);
        return 1;
    }
    fault_log("PASS");
    return 0;
}

void fault_abort(void)
{
    fprintf(stderr, "[%s rank %d] FAIL: aborting after %d failed check(s)\n", test_name,
            my_rank, fault_failures);
    exit(1);
}

double fault_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void fault_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

int fault_start(xdev_t **dev, int size)
{
    fault_step("xdev_init");
    REQUIRE_RC(xdev_init(NULL, dev), XDEV_OK);
    int rank = xdev_rank(*dev);
    REQUIRE(xdev_size(*dev) == size, "run with -n %d", size);
    fault_set_rank(rank);
    return rank;
}

int fault_start_with_silent(xdev_t **dev, int size, int victim, double after_s)
{
    int rank = fault_start(dev, size);
    if (rank == victim) {
        fault_sleep_ms((int)(after_s * 1000));
        fault_step("leaving without a word");
        _exit(0);
    }
    return rank;
}

void fault_stop_self(double seconds)
{
    pid_t self = getpid(), pid = fork();
    REQUIRE(pid >= 0, "fork");
    if (pid == 0) {
        fault_sleep_ms((int)(seconds * 1000));
        kill(self, SIGCONT);
        _exit(0);
    }
    raise(SIGSTOP);
}

/* xorshift32 keyed by seed and position-block, cheap and position dependent. */
static uint32_t next_word(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

void fault_fill(void *buf, size_t len, uint32_t seed)
{
    unsigned char *p = buf;
    uint32_t s = seed * 2654435761u + 0x9e3779b9u;
    if (s == 0) s = 1;
    for (size_t i = 0; i < len; i += 4) {
        uint32_t w = next_word(&s);
        for (size_t k = 0; k < 4 && i + k < len; k++) p[i + k] = (unsigned char)(w >> (8 * k));
    }
}

size_t fault_verify(const void *buf, size_t len, uint32_t seed)
{
    const unsigned char *p = buf;
    uint32_t s = seed * 2654435761u + 0x9e3779b9u;
    if (s == 0) s = 1;
    for (size_t i = 0; i < len; i += 4) {
        uint32_t w = next_word(&s);
        for (size_t k = 0; k < 4 && i + k < len; k++)
            if (p[i + k] != (unsigned char)(w >> (8 * k))) return i + k;
    }
    return (size_t)-1;
}

int fault_barrier_skip(xdev_t *dev, int skip)
{
    int rank = xdev_rank(dev), size = xdev_size(dev), rc;
    int root = skip == 0 ? 1 : 0; /* the lowest rank taking part */
    char token = 'b';
    const char *saved = current_step;
    current_step = "fault_barrier";
    if (rank == root) {
        for (int r = 0; r < size; r++) {
            if (r == skip || r == root) continue;
            rc = xdev_recv(dev, &token, 1, r, 0, FAULT_BARRIER_CTX, NULL);
            if (rc != XDEV_OK) return rc;
        }
        for (int r = 0; r < size; r++) {
            if (r == skip || r == root) continue;
            rc = xdev_send(dev, &token, 1, r, 0, FAULT_BARRIER_CTX);
            if (rc != XDEV_OK) return rc;
        }
    } else {
        rc = xdev_send(dev, &token, 1, root, 0, FAULT_BARRIER_CTX);
        if (rc != XDEV_OK) return rc;
        rc = xdev_recv(dev, &token, 1, root, 0, FAULT_BARRIER_CTX, NULL);
        if (rc != XDEV_OK) return rc;
    }
    current_step = saved;
    return XDEV_OK;
}

int fault_barrier(xdev_t *dev) { return fault_barrier_skip(dev, -1); }

int fault_wait_for(xdev_request_t *req, xdev_status_t *st, double timeout_s, int *done)
{
    double end = fault_now() + timeout_s;
    *done = 0;
    for (;;) {
        int rc = xdev_test(req, done, st);
        if (rc != XDEV_OK || *done) return rc;
        if (fault_now() > end) return XDEV_OK;
        fault_sleep_ms(1);
    }
}

void fault_write_out(const char *name, const char *text)
{
    const char *dir = getenv("XDEV_TEST_OUT");
    char path[4096];
    if (!dir)
        return;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

double fault_read_time(const char *name)
{
    const char *dir = getenv("XDEV_TEST_OUT");
    char path[4096];
    double t = -1;
    snprintf(path, sizeof path, "%s/%s", dir ? dir : ".", name);
    for (int i = 0; i < 100 && t < 0; i++) { /* written just after the event */
        FILE *f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%lf", &t) != 1)
                t = -1;
            fclose(f);
        }
        if (t < 0)
            fault_sleep_ms(50);
    }
    return t;
}

uint64_t fault_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void fault_fill_keyed(void *buf, size_t len, uint64_t key)
{
    unsigned char *b = buf;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w = fault_mix(key + i);
        memcpy(b + i, &w, 8);
    }
    uint64_t w = fault_mix(key + i);
    memcpy(b + i, &w, len - i);
}

size_t fault_verify_keyed(const void *buf, size_t len, uint64_t key)
{
    const unsigned char *b = buf;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w = fault_mix(key + i);
        if (memcmp(b + i, &w, 8))
            break;
    }
    for (; i < len; i++) {
        uint64_t w = fault_mix(key + (i & ~(size_t)7));
        if (b[i] != ((unsigned char *)&w)[i & 7])
            return i;
    }
    return (size_t)-1;
}

int fault_write_result(int rank, const char *text)
{
    const char *dir = getenv("XDEV_TEST_OUT");
    char path[4096];
    FILE *f;
    if (!dir) {
        fprintf(stderr, "[%s rank %d] XDEV_TEST_OUT is not set\n", test_name, rank);
        return -1;
    }
    snprintf(path, sizeof path, "%s/rank.%d", dir, rank);
    f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "%s\n", text);
    return fclose(f) == 0 ? 0 : -1;
}
