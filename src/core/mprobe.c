/*
 * mprobe.c - the matched probe (MPI_Improbe/Mprobe/Imrecv/Mrecv, MPJ's
 * iprobeAndFetch): a probe that takes the message it finds out of
 * matching, so that two threads probing the same source can never both
 * receive one message, or each receive the other's.
 *
 * A handle names its claim by the entry and a serial number, and is
 * checked against the device's claims before use: a handle used twice, or
 * a copy of one already received, gets XDEV_ERR_ARG.
 */
#include <string.h>
#include "device.h"

enum { H_ENTRY, H_DEV, H_CLAIM };

static void status_of(const uxmsg_t *e, int error, xdev_status_t *st)
{
    *st = (xdev_status_t){ .source = e->src, .tag = e->tag, .ctx = e->ctx, .error = error,
                           .count = error ? 0 : e->len, .msg_len = e->len };
}

/* Claim what proto_probe found for the caller: a message is handed out
 * by handle; a lost marker (see xdev_core_peer_failed) is consumed and
 * reported, with an empty handle. Lock held. */
static int claim(xdev_t *d, uxmsg_t *e, xdev_message_t *msg, xdev_status_t *st)
{
    memset(msg, 0, sizeof *msg);
    if (proto_lost(d, e)) {
        status_of(e, XDEV_ERR_PEER, st);
        proto_drop(d, e);
        return XDEV_ERR_PEER;
    }
    status_of(e, XDEV_OK, st);
    proto_claim(d, e);
    msg->opaque_[H_ENTRY] = (uint64_t)(uintptr_t)e;
    msg->opaque_[H_DEV] = (uint64_t)(uintptr_t)d;
    msg->opaque_[H_CLAIM] = e->claim;
    return XDEV_OK;
}

int xdev_improbe(xdev_t *d, int src, int tag, int ctx, int *found, xdev_message_t *msg,
                 xdev_status_t *st)
{
    if (!d || !found || !msg || !st || !match_args_ok(d, src, tag, ctx))
        return XDEV_ERR_ARG;
    dev_lock(d);
    uxmsg_t *e = probe_now(d, src, tag, ctx);
    *found = e != NULL;
    int rc = XDEV_OK;
    if (e)
        rc = claim(d, e, msg, st);
    dev_unlock(d);
    return rc;
}

int xdev_mprobe(xdev_t *d, int src, int tag, int ctx, xdev_message_t *msg, xdev_status_t *st)
{
    if (!d || !msg || !st || !match_args_ok(d, src, tag, ctx))
        return XDEV_ERR_ARG;
    int rc;
    uxmsg_t *e = probe_wait(d, src, tag, ctx, st, &rc);
    if (e)
        rc = claim(d, e, msg, st);
    else
        memset(msg, 0, sizeof *msg);
    dev_unlock(d);
    return rc;
}

/* flags: F_PRIVATE for xdev_mrecv's own request, which, as every blocking
 * call's, must never reach the completion queue: a peek in another thread
 * would hand out storage on this thread's stack. */
static int imrecv(xdev_t *d, void *buf, size_t len, xdev_message_t *msg, xdev_request_t *req,
                  unsigned flags)
{
    if (!d || (!buf && len) || !msg || !req || req_is_active(xreq_of(req)) ||
        msg->opaque_[H_DEV] != (uint64_t)(uintptr_t)d)
        return XDEV_ERR_ARG;
    xreq_t *r = xreq_of(req);
    dev_lock(d);
    uxmsg_t *e = proto_find_claim(d, (const void *)(uintptr_t)msg->opaque_[H_ENTRY],
                                  msg->opaque_[H_CLAIM]);
    int rc = e ? req_start(d, r, REQ_RECV, buf, len, e->src, e->tag, e->ctx) : XDEV_ERR_ARG;
    if (rc == XDEV_OK) {
        r->flags = (uint16_t)flags;
        memset(msg, 0, sizeof *msg);
        proto_recv_claimed(d, e, r);
    }
    dev_unlock(d);
    return rc;
}

int xdev_imrecv(xdev_t *d, void *buf, size_t len, xdev_message_t *msg, xdev_request_t *req)
{
    return imrecv(d, buf, len, msg, req, 0);
}

int xdev_mrecv(xdev_t *d, void *buf, size_t len, xdev_message_t *msg, xdev_status_t *st)
{
    unsigned woken = wake_mark(d);
    xdev_request_t req = { 0 };
    return wait_result(imrecv(d, buf, len, msg, &req, F_PRIVATE), &req, st, woken);
}
