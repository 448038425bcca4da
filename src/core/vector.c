/*
 * vector.c - xdev_isendv, xdev_irecvv and their blocking forms: a request
 * whose buffer is an array of pieces (xreq_t.niov). The protocol moves it
 * as one message of the pieces' total length; the copies into and out of
 * the pieces happen where the bytes are copied anyway (iov.c), and a
 * rendezvous of a vector is streamed, never read or written one-sidedly.
 */
#include <stdint.h>
#include "device.h"

_Static_assert(XDEV_IOV_MAX <= UINT8_MAX, "xreq_t.niov holds a piece count");

/* Is iov a vector xdev takes? Its total length in *total if so. */
static bool vector_ok(const xdev_iov_t *iov, int n, size_t *total)
{
    if (!iov || n < 1 || n > XDEV_IOV_MAX)
        return false;
    size_t sum = 0;
    for (int i = 0; i < n; i++) {
        if ((!iov[i].base && iov[i].len) || iov[i].len > SIZE_MAX - sum)
            return false;
        sum += iov[i].len;
    }
    *total = sum;
    return true;
}

int xdev_isendv(xdev_t *d, const xdev_iov_t *iov, int n, int dst, int tag, int ctx,
                xdev_request_t *req)
{
    size_t len;
    return vector_ok(iov, n, &len) ? post_send(d, iov, len, dst, tag, ctx, req, 0, (unsigned)n)
                                   : XDEV_ERR_ARG;
}

int xdev_irecvv(xdev_t *d, const xdev_iov_t *iov, int n, int src, int tag, int ctx,
                xdev_request_t *req)
{
    size_t len;
    return vector_ok(iov, n, &len)
               ? post_recv(d, (void *)iov, len, src, tag, ctx, req, 0, (unsigned)n)
               : XDEV_ERR_ARG;
}

int xdev_sendv(xdev_t *d, const xdev_iov_t *iov, int n, int dst, int tag, int ctx)
{
    unsigned woken = wake_mark(d);
    size_t len;
    if (!vector_ok(iov, n, &len))
        return XDEV_ERR_ARG;
    xdev_request_t req;
    return wait_result(post_send(d, iov, len, dst, tag, ctx, &req, F_PRIVATE, (unsigned)n), &req,
                       NULL, woken);
}

int xdev_recvv(xdev_t *d, const xdev_iov_t *iov, int n, int src, int tag, int ctx,
               xdev_status_t *st)
{
    unsigned woken = wake_mark(d);
    size_t len;
    if (!vector_ok(iov, n, &len))
        return XDEV_ERR_ARG;
    xdev_request_t req;
    return wait_result(post_recv(d, (void *)iov, len, src, tag, ctx, &req, F_PRIVATE, (unsigned)n),
                       &req, st, woken);
}
