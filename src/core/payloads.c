/*
 * payloads.c - unexpected messages' payload buffers, kept for reuse
 * (payloads.h says why).
 */
#include <stdlib.h>
#include "payloads.h"

void *xdev_payload_get(xdev_payloads_t *p, size_t len, size_t *cap)
{
    /* Newest first: a burst's buffers come back in the order it used them. */
    for (int i = p->nkept - 1; len >= PAYLOADS_MIN && i >= 0; i--) {
        size_t have = p->kept[i].cap;
        if (have < len || have / 2 > len)
            continue;
        void *buf = p->kept[i].buf;
        p->kept[i] = p->kept[--p->nkept];
        p->bytes -= have;
        *cap = have;
        return buf;
    }
    *cap = len;
    return malloc(len);
}

void xdev_payload_put(xdev_payloads_t *p, void *buf, size_t cap)
{
    if (buf && cap >= PAYLOADS_MIN && p->nkept < PAYLOADS_SLOTS &&
        cap <= PAYLOADS_BYTES - p->bytes) {
        p->kept[p->nkept].buf = buf;
        p->kept[p->nkept++].cap = cap;
        p->bytes += cap;
        return;
    }
    free(buf);
}

void xdev_payloads_drain(xdev_payloads_t *p)
{
    while (p->nkept)
        free(p->kept[--p->nkept].buf);
    p->bytes = 0;
}
