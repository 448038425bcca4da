/*
 * copy-bench - xdev_copy (src/kit/copy.h) beside the C library's memcpy,
 * in one run, for destinations 0-15 bytes past the source modulo the page
 * (where memcpy may take its slow REP MOVSB path and xdev_copy goes in
 * pieces) and 16-4032 past it (where both are one memcpy).
 *
 *   copy-bench [SIZE ...]     (default 4096 32768 131072 524288)
 *
 * Prints per size, in GB/s (10^9 bytes/s), the slowest and the median of
 * each over the offsets, and xdev_copy / memcpy for both. Buffers are
 * cache-resident, as a ring's fragment and the caller's bytes usually are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../../src/kit/copy.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* GB/s of `copy` from s to d over 5 ms, best of 3 (noise only slows). */
static double rate(void (*copy)(void *, const void *, size_t), char *d, const char *s, size_t n)
{
    double best = 0;
    for (int r = 0; r < 3; r++) {
        long k = 0;
        double t0 = now(), t;
        do {
            copy(d, s, n);
            k++;
        } while ((t = now() - t0) < 0.005);
        double gbs = (double)k * (double)n / t / 1e9;
        if (gbs > best) best = gbs;
    }
    return best;
}

static void libc_copy(void *d, const void *s, size_t n) { memcpy(d, s, n); }

/* Page-aligned (aligned_alloc would want a size that is a multiple). */
static char *page_alloc(size_t n)
{
    void *p = NULL;
    return posix_memalign(&p, 4096, n) == 0 ? p : NULL;
}

int main(int argc, char **argv)
{
    static const size_t dflt[] = {4096, 32768, 131072, 524288};
    int nsizes = argc > 1 ? argc - 1 : 4;
    /* offsets past the source: 0-15, then 16-63 and 64-4032 in steps of 64 */
    enum { NEAR = 16, FAR = 48 + 63 };
    printf("%-8s %-6s %10s %10s %10s %10s %8s %8s\n", "size", "offsets", "libc min", "libc med",
           "xdev min", "xdev med", "min x/l", "med x/l");
    for (int i = 0; i < nsizes; i++) {
        size_t n = argc > 1 ? strtoull(argv[i + 1], NULL, 0) : dflt[i];
        char *s = page_alloc(n + 4096), *d = page_alloc(n + 2 * 4096);
        if (!s || !d || !n) return 2;
        memset(s, 1, n + 4096);
        memset(d, 2, n + 2 * 4096);
        for (int part = 0; part < 2; part++) {
            double libc[FAR], mine[FAR];
            int m = part ? FAR : NEAR;
            for (int o = 0; o < m; o++) {
                size_t off = !part ? (size_t)o : o < 48 ? 16 + (size_t)o : (size_t)(o - 47) * 64;
                libc[o] = rate(libc_copy, d + 4096 + off, s, n);
                mine[o] = rate(xdev_copy, d + 4096 + off, s, n);
            }
            double lmin, xmin;
            qsort(libc, (size_t)m, sizeof *libc, cmp);
            qsort(mine, (size_t)m, sizeof *mine, cmp);
            lmin = libc[0];
            xmin = mine[0];
            printf("%-8zu %-6s %10.1f %10.1f %10.1f %10.1f %8.2f %8.2f\n", n, part ? "16+" : "0-15",
                   lmin, libc[m / 2], xmin, mine[m / 2], xmin / lmin, mine[m / 2] / libc[m / 2]);
        }
        free(s);
        free(d);
    }
    return 0;
}
