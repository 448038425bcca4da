/*
 * copy.h - the one copy of payload bytes between a caller's buffer and
 * xdev's own memory (rings, bounce buffers, unexpected messages), which
 * the core and every transport make through xdev_copy.
 *
 * glibc (Debian 12's 2.36 among others) copies from about 2 KiB up with
 * REP MOVSB on CPUs with fast short REP MOVSB, and on AMD Zen that runs
 * about twenty times slower when the destination lies a few bytes past
 * the source modulo the 4 KiB page (glibc bug 30994): 1-15 bytes past it
 * on this machine's EPYC, 2-3 GB/s against 40-90 elsewhere, for 4 KiB to
 * 512 KiB (0 past it is slow on some other Zen parts). A ring slot
 * and a caller's buffer fall into that relation by chance: about 200 of
 * the 56,000 copies of a 1 MiB bidirectional run did, each taking twenty
 * times as long as the rest. In that relation the copy goes in pieces
 * that glibc copies with its vector loop instead (5-8 times faster, see
 * test/bench/copy_bench.c); in any other it is one memcpy.
 */
#ifndef XDEV_KIT_COPY_H
#define XDEV_KIT_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define XDEV_COPY_PIECE 2048 /* below glibc's REP MOVSB threshold */

static inline void xdev_copy(void *dst, const void *src, size_t n)
{
    char *d = dst;
    const char *s = src;
    if (n > XDEV_COPY_PIECE && (((uintptr_t)d - (uintptr_t)s) & 4095) < 16)
        for (; n > XDEV_COPY_PIECE; n -= XDEV_COPY_PIECE, d += XDEV_COPY_PIECE, s += XDEV_COPY_PIECE)
            memcpy(d, s, XDEV_COPY_PIECE);
    memcpy(d, s, n);
}

#endif
