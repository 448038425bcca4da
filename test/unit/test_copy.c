/*
 * test_copy.c - xdev_copy (src/kit/copy.h): every byte arrives and none
 * is written outside the destination, for sizes on both sides of the
 * piece size and destinations at every offset from the source that takes
 * the copy in pieces (0-15 past it modulo the page) and at some that do
 * not. Its speed is measured by test/bench/copy_bench.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../../src/kit/copy.h"
#include "unit_check.h"

#define PAGE 4096
#define GUARD 64

/* Page-aligned (aligned_alloc would want a size that is a multiple). */
static unsigned char *page_alloc(size_t n)
{
    void *p = NULL;
    return posix_memalign(&p, PAGE, n) == 0 ? p : NULL;
}

int main(void)
{
    static const size_t sizes[] = {0,    1,    2047, 2048, 2049, 4095,     4096,
                                   4097, 6144, 6145, 65536 + 7, 256 * 1024 + 1};
    const size_t max = 256 * 1024 + 1;
    unsigned char *src = page_alloc(max + PAGE);
    unsigned char *dst = page_alloc(max + 3 * PAGE);
    if (!src || !dst) return 1;
    for (size_t i = 0; i < max + PAGE; i++) src[i] = (unsigned char)(i * 131 + 7);
    static const int deltas[] = {0, 1, 8, 15, 16, 63, 64, 65, 2048, 4095};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        for (int s_off = 0; s_off < 64; s_off += 21)
            for (size_t j = 0; j < sizeof deltas / sizeof *deltas; j++) {
                size_t n = sizes[k];
                const unsigned char *s = src + s_off;
                /* d - s = deltas[j] modulo the page, with room for guards */
                unsigned char *d = dst + PAGE + s_off + deltas[j];
                memset(d - GUARD, 0xa5, n + 2 * GUARD);
                xdev_copy(d, s, n);
                CHECK(memcmp(d, s, n) == 0);
                int guards_ok = 1;
                for (int g = 1; g <= GUARD; g++)
                    if (d[-g] != 0xa5 || d[n + (size_t)g - 1] != 0xa5) guards_ok = 0;
                CHECK(guards_ok);
            }
    free(src);
    free(dst);
    return failures != 0;
}
