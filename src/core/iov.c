/*
 * iov.c - vector payloads: the pieces of an xdev_iov_t array read and
 * written as one run of bytes, for the core and the transports alike.
 */
#include <string.h>
#include "transport.h"

/* The first piece that holds offset *off, with *off made relative to it;
 * niov when none does. Pieces of length 0 hold nothing. */
static unsigned find(const xdev_iov_t *iov, unsigned niov, size_t *off)
{
    unsigned i = 0;
    while (i < niov && *off >= iov[i].len) {
        *off -= iov[i].len;
        i++;
    }
    return i;
}

void xdev_iov_gather(void *dst, const xdev_iov_t *iov, unsigned niov, size_t off, size_t n)
{
    char *out = dst;
    for (unsigned i = find(iov, niov, &off); n && i < niov; i++, off = 0) {
        size_t k = iov[i].len - off < n ? iov[i].len - off : n;
        if (k)
            xdev_copy(out, (const char *)iov[i].base + off, k);
        out += k;
        n -= k;
    }
}

void xdev_iov_scatter(const xdev_iov_t *iov, unsigned niov, size_t off, const void *src, size_t n)
{
    const char *in = src;
    for (unsigned i = find(iov, niov, &off); n && i < niov; i++, off = 0) {
        size_t k = iov[i].len - off < n ? iov[i].len - off : n;
        if (k)
            xdev_copy((char *)iov[i].base + off, in, k);
        in += k;
        n -= k;
    }
}

size_t xdev_iov_span(const xdev_iov_t *iov, unsigned niov, size_t off, void **at,
                     unsigned *piece)
{
    unsigned i = find(iov, niov, &off);
    if (piece)
        *piece = i;
    if (i == niov) {
        *at = NULL;
        return 0;
    }
    *at = (char *)iov[i].base + off;
    return iov[i].len - off;
}
