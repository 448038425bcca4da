/*
 * regcache_cost.c - what the registration cache's userfaultfd watch costs,
 * apart from any registration (the callbacks do nothing):
 *
 *   hit       get + put of a cached range
 *   miss      get + put of a new range (the UFFDIO_REGISTER, no reg work)
 *   munmap    mmap + touch + munmap of a 4 MiB range, watched (the event
 *             goes to the cache's thread and the munmap waits for it) and
 *             not watched
 *
 * Prints one line per figure, medians of 9 runs. Usage: regcache-cost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "regcache.h"
#include "xdev.h"

#define LEN (4u << 20)
#define RUNS 9

static int nop_reg(void *ctx, void *addr, size_t len, xdev_reg_t *r)
{
    (void)ctx, (void)addr, (void)len, (void)r;
    return XDEV_OK;
}

static void nop_dereg(void *ctx, xdev_reg_t *r)
{
    (void)ctx, (void)r;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v)
{
    qsort(v, RUNS, sizeof *v, cmp);
    return v[RUNS / 2];
}

/* Microseconds per mmap + touch + munmap cycle, watched by c or not. */
static double cycle(xdev_regcache_t *c, int n)
{
    double t0 = now_us();
    for (int i = 0; i < n; i++) {
        char *p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        p[0] = 1;
        if (c) {
            xdev_reg_t *r;
            xdev_regcache_get(c, p, LEN, &r);
            xdev_regcache_put(c, r);
        }
        munmap(p, LEN);
    }
    return (now_us() - t0) / n;
}

int main(void)
{
    xdev_regcache_params_t prm = { .reg = nop_reg, .dereg = nop_dereg,
                                   .mode = XDEV_REGCACHE_UFFD };
    xdev_regcache_t *c;
    if (xdev_regcache_open(&prm, &c) != XDEV_OK) {
        fprintf(stderr, "regcache-cost: userfaultfd not available here\n");
        return 1;
    }
    char *buf = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    buf[0] = 1;
    double hit[RUNS], watched[RUNS], plain[RUNS];
    for (int r = 0; r < RUNS; r++) {
        const int n = 100000;
        double t0 = now_us();
        for (int i = 0; i < n; i++) {
            xdev_reg_t *reg;
            xdev_regcache_get(c, buf, LEN, &reg);
            xdev_regcache_put(c, reg);
        }
        hit[r] = (now_us() - t0) * 1000 / n;
        watched[r] = cycle(c, 200);
        plain[r] = cycle(NULL, 200);
    }
    printf("regcache hit (get+put): %.0f ns\n", median(hit));
    printf("mmap+munmap 4 MiB, watched (incl. the miss's UFFDIO_REGISTER): %.1f us\n",
           median(watched));
    printf("mmap+munmap 4 MiB, not watched: %.1f us\n", median(plain));
    xdev_regcache_close(c);
    munmap(buf, LEN);
    return 0;
}
