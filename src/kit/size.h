/*
 * size.h - "4096", "64k", "16M", "1G": a byte count with an optional k, m
 * or g suffix (powers of 1024), as every XDEV_* size variable and the
 * tools' size options take it. Header-only, so that libxdev_coll and the
 * benchmarks, which see nothing of the core but xdev.h, read sizes the
 * same way.
 */
#ifndef XDEV_KIT_SIZE_H
#define XDEV_KIT_SIZE_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* 0 with the bytes in *out, or -1 with *out untouched. */
static inline int xdev_parse_size(const char *s, size_t *out)
{
    /* A digit first: strtoull also skips blanks and takes a sign, which
     * made " -1" the largest size there is. */
    if (*s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)v << shift;
    return 0;
}

#endif
