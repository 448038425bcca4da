/*
 * api.c - the communication calls of xdev.h: argument checks (so that a bad
 * call changes nothing), locking, and the blocking forms.
 */
#include "device.h"

static bool rank_ok(const xdev_t *d, int r) { return r >= 0 && r < d->size; }

/* A request storage that is still active must not be posted again. A
 * blocking call's own (F_PRIVATE) is fresh on its stack and not read
 * before req_start writes it: zeroing its 328 bytes was 45 of the about
 * 440 instructions of an 8-byte xdev_recv outside its wait. */
static bool req_free_to_post(xdev_request_t *req, unsigned flags)
{
    return (flags & F_PRIVATE) || (req && !req_is_active(xreq_of(req)));
}

static bool send_args_ok(const xdev_t *d, const void *buf, size_t len, int dst, int tag, int ctx)
{
    return d && (buf || !len) && rank_ok(d, dst) && tag >= 0 && ctx >= 0;
}

/* flags: F_SYNC for a synchronous send, F_PRIVATE for a blocking call's.
 * niov: buf is a checked vector of that many pieces, len their total. */
XDEV_HOT int post_send(xdev_t *d, const void *buf, size_t len, int dst, int tag, int ctx,
              xdev_request_t *req, unsigned flags, unsigned niov)
{
    if (!send_args_ok(d, buf, len, dst, tag, ctx) || !req_free_to_post(req, flags))
        return XDEV_ERR_ARG;
    xreq_t *r = xreq_of(req);
    dev_lock(d);
    int rc = req_start(d, r, REQ_SEND, (void *)buf, len, dst, tag, ctx);
    if (rc == XDEV_OK) {
        r->flags = (uint16_t)(flags & F_PRIVATE);
        r->niov = (uint8_t)niov;
        if ((rc = proto_send(d, r, flags & F_SYNC)) != XDEV_OK)
            req_reap(d, r, NULL);
    }
    dev_unlock(d);
    return rc;
}

XDEV_HOT int xdev_isend(xdev_t *d, const void *buf, size_t len, int dst, int tag, int ctx,
               xdev_request_t *req)
{
    return post_send(d, buf, len, dst, tag, ctx, req, 0, 0);
}

int xdev_issend(xdev_t *d, const void *buf, size_t len, int dst, int tag, int ctx,
                xdev_request_t *req)
{
    return post_send(d, buf, len, dst, tag, ctx, req, F_SYNC, 0);
}

bool match_args_ok(const xdev_t *d, int src, int tag, int ctx)
{
    return (src == XDEV_ANY_SOURCE || rank_ok(d, src)) && (tag >= 0 || tag == XDEV_ANY_TAG) &&
           ctx >= 0;
}

XDEV_HOT int post_recv(xdev_t *d, void *buf, size_t len, int src, int tag, int ctx,
                       xdev_request_t *req, unsigned flags, unsigned niov)
{
    if (!d || (!buf && len) || !match_args_ok(d, src, tag, ctx) || !req_free_to_post(req, flags))
        return XDEV_ERR_ARG;
    xreq_t *r = xreq_of(req);
    dev_lock(d);
    int rc = req_start(d, r, REQ_RECV, buf, len, src, tag, ctx);
    if (rc == XDEV_OK) {
        r->flags = (uint16_t)flags;
        r->niov = (uint8_t)niov;
        if ((rc = proto_recv(d, r)) != XDEV_OK)
            req_reap(d, r, NULL);
    }
    dev_unlock(d);
    return rc;
}

XDEV_HOT int xdev_irecv(xdev_t *d, void *buf, size_t len, int src, int tag, int ctx,
                        xdev_request_t *req)
{
    return post_recv(d, buf, len, src, tag, ctx, req, 0, 0);
}

/* A waiter's request, by its storage and the id it had when the wait
 * began: another thread may reap it (and even post the storage again)
 * while this one sleeps without the lock. woken: wake_mark at the call. */
struct waited {
    xreq_t *r;
    uint64_t id;
    unsigned woken;
};

static bool still_ours(xdev_t *d, const struct waited *w)
{
    return req_is_active(w->r) && w->r->id == w->id && req_lookup(d, w->id) == w->r;
}

/* Polled on every spin, so only the phase and the id: a request another
 * thread reaped meanwhile was done first, and if it posted the storage
 * again the id moved on (the new request's phase is not ours to wait
 * for); ownership is checked after. */
static XDEV_HOT bool req_done(xdev_t *d, void *arg)
{
    (void)d;
    const struct waited *w = arg;
    return w->r->phase == PH_DONE || w->r->id != w->id;
}

/* The device of an active request; NULL for storage that holds none. */
static xdev_t *dev_of(xdev_request_t *req)
{
    return req ? req_device(xreq_of(req)) : NULL;
}

/* req's device, locked, where req is an active request; else NULL. Checked
 * under the lock: two threads waiting on one request, or a copy or moved
 * request, must not reap anything twice. */
static xdev_t *lock_active(xdev_request_t *req, struct waited *w)
{
    xdev_t *d = dev_of(req);
    if (!d)
        return NULL;
    unsigned woken = wake_mark(d);
    dev_lock(d);
    *w = (struct waited){ xreq_of(req), xreq_of(req)->id, woken };
    if (!still_ours(d, w)) {
        dev_unlock(d);
        return NULL;
    }
    return d;
}

XDEV_HOT int xdev_wait(xdev_request_t *req, xdev_status_t *st)
{
    struct waited w;
    xdev_t *d = lock_active(req, &w);
    if (!d)
        return XDEV_ERR_ARG;
    xreq_t *r = w.r;
    int rc = XDEV_OK;
    if (r->phase != PH_DONE) /* often done already: a window's later requests */
        rc = progress_until(d, req_done, &w, -1, w.woken);
    if (rc == XDEV_ERR_WOKEN && still_ours(d, &w) && r->phase != PH_DONE) {
        dev_unlock(d);
        return rc; /* still active: wait again, or cancel it */
    }
    rc = XDEV_ERR_ARG;
    if (still_ours(d, &w)) {
        req_reap(d, r, st);
        rc = XDEV_OK;
    }
    dev_unlock(d);
    return rc;
}

XDEV_HOT int xdev_test(xdev_request_t *req, int *done, xdev_status_t *st)
{
    struct waited w;
    xdev_t *d = done ? lock_active(req, &w) : NULL;
    if (!d)
        return XDEV_ERR_ARG;
    xreq_t *r = w.r;
    if (r->phase != PH_DONE)
        progress_once(d);
    *done = r->phase == PH_DONE;
    if (*done)
        req_reap(d, r, st);
    dev_unlock(d);
    return XDEV_OK;
}

/* xdev_wait for a blocking call's request. Its storage is on the caller's
 * stack, where no other thread can reach it, so it needs none of
 * xdev_wait's checks that the request is still the one waited for. */
static XDEV_HOT int wait_own(xdev_request_t *req, xdev_status_t *st, unsigned woken)
{
    xreq_t *r = xreq_of(req);
    xdev_t *d = r->dev;
    dev_lock(d);
    int rc = XDEV_OK;
    if (r->phase != PH_DONE) {
        struct waited w = { r, r->id, woken };
        rc = progress_until(d, req_done, &w, -1, woken);
    }
    if (r->phase == PH_DONE) {
        req_reap(d, r, st);
        rc = XDEV_OK;
    }
    dev_unlock(d);
    return rc;
}

/* Blocking forms: the operation's own error is what the caller wants.
 * Woken, a request that has not begun is cancelled and the call returns
 * XDEV_ERR_WOKEN; one that has begun is finished first, since its storage
 * (on the blocking call's stack) and buffer cannot outlive the call. */
XDEV_HOT int wait_result(int rc, xdev_request_t *req, xdev_status_t *st, unsigned woken)
{
    if (rc != XDEV_OK)
        return rc;
    xdev_status_t local;
    if (!st)
        st = &local;
    while ((rc = wait_own(req, st, woken)) == XDEV_ERR_WOKEN) {
        if (xdev_cancel(req) == XDEV_OK) {
            xdev_wait(req, st);
            return XDEV_ERR_WOKEN;
        }
        woken = wake_mark(xreq_of(req)->dev); /* begun: finish it */
    }
    return rc != XDEV_OK ? rc : st->error;
}

XDEV_HOT int xdev_send(xdev_t *d, const void *buf, size_t len, int dst, int tag, int ctx)
{
    unsigned woken = wake_mark(d);
    /* Which transport serves dst is fixed at init, so its short tier is
     * read without the lock: a message it cannot take (a long one, or any
     * on a transport that has none) then takes the lock once, not twice. */
    if (send_args_ok(d, buf, len, dst, tag, ctx) && peer_fits_short(d, dst, len)) {
        dev_lock(d);
        int sent = proto_send_now(d, buf, len, dst, tag, ctx);
        dev_unlock(d);
        if (sent)
            return XDEV_OK;
    }
    xdev_request_t req;
    return wait_result(post_send(d, buf, len, dst, tag, ctx, &req, F_PRIVATE, 0), &req, NULL,
                       woken);
}

int xdev_ssend(xdev_t *d, const void *buf, size_t len, int dst, int tag, int ctx)
{
    unsigned woken = wake_mark(d);
    xdev_request_t req;
    return wait_result(post_send(d, buf, len, dst, tag, ctx, &req, F_SYNC | F_PRIVATE, 0), &req,
                       NULL, woken);
}

XDEV_HOT int xdev_recv(xdev_t *d, void *buf, size_t len, int src, int tag, int ctx,
                       xdev_status_t *st)
{
    unsigned woken = wake_mark(d);
    xdev_request_t req;
    return wait_result(post_recv(d, buf, len, src, tag, ctx, &req, F_PRIVATE, 0), &req, st, woken);
}

/* A message its dead sender could not complete is found as what the
 * receive that takes it will get: XDEV_ERR_PEER and no bytes. */
static void fill_probe_status(const xdev_t *d, const uxmsg_t *e, xdev_status_t *st)
{
    bool lost = proto_lost(d, e);
    st->source = e->src;
    st->tag = e->tag;
    st->ctx = e->ctx;
    st->count = lost ? 0 : e->len;
    st->msg_len = e->len;
    st->error = lost ? XDEV_ERR_PEER : XDEV_OK;
}

uxmsg_t *probe_now(xdev_t *d, int src, int tag, int ctx)
{
    uxmsg_t *e = proto_probe(d, src, tag, ctx);
    if (!e) {
        progress_once(d);
        e = proto_probe(d, src, tag, ctx);
    }
    return e;
}

int xdev_iprobe(xdev_t *d, int src, int tag, int ctx, int *found, xdev_status_t *st)
{
    if (!d || !found || !st || !match_args_ok(d, src, tag, ctx))
        return XDEV_ERR_ARG;
    dev_lock(d);
    uxmsg_t *e = probe_now(d, src, tag, ctx);
    *found = e != NULL;
    if (e)
        fill_probe_status(d, e, st);
    dev_unlock(d);
    return XDEV_OK;
}

struct probe_args {
    int src, tag, ctx;
    unsigned deaths; /* d->deaths when it began (read under the lock) */
};

/* progress_until's test for a blocking probe: something matches, the
 * named source is dead, or (a wildcard under XDEV_FLAG_WILDCARD_FAILS)
 * some peer died. */
static bool probe_done(xdev_t *d, void *arg)
{
    struct probe_args *a = arg;
    if (proto_probe(d, a->src, a->tag, a->ctx))
        return true;
    return a->src != XDEV_ANY_SOURCE ? d->peers[a->src].dead
                                     : (d->flags & XDEV_FLAG_WILDCARD_FAILS) &&
                                           d->deaths != a->deaths;
}

/* A blocking probe that found nothing ended by a death: its status and
 * result. A named source's is {src, XDEV_ANY_TAG, ctx, XDEV_ERR_PEER}
 * (no message has tag XDEV_ANY_TAG); a wildcard's is as posted, with
 * XDEV_ERR_PEER_PENDING. */
static int probe_failed(const struct probe_args *a, xdev_status_t *st)
{
    bool named = a->src != XDEV_ANY_SOURCE;
    *st = (xdev_status_t){ .source = a->src, .tag = named ? XDEV_ANY_TAG : a->tag,
                           .ctx = a->ctx,
                           .error = named ? XDEV_ERR_PEER : XDEV_ERR_PEER_PENDING };
    return st->error;
}

uxmsg_t *probe_wait(xdev_t *d, int src, int tag, int ctx, xdev_status_t *st, int *rc)
{
    struct probe_args a = { .src = src, .tag = tag, .ctx = ctx };
    unsigned woken = wake_mark(d);
    dev_lock(d);
    a.deaths = d->deaths;
    *rc = progress_until(d, probe_done, &a, -1, woken);
    uxmsg_t *e = proto_probe(d, src, tag, ctx);
    if (!e && *rc != XDEV_ERR_WOKEN)
        *rc = probe_failed(&a, st);
    return e;
}

int xdev_probe(xdev_t *d, int src, int tag, int ctx, xdev_status_t *st)
{
    if (!d || !st || !match_args_ok(d, src, tag, ctx))
        return XDEV_ERR_ARG;
    int rc;
    uxmsg_t *e = probe_wait(d, src, tag, ctx, st, &rc);
    if (e) {
        fill_probe_status(d, e, st);
        rc = st->error;
    }
    dev_unlock(d);
    return rc;
}

static bool cq_nonempty(xdev_t *d, void *arg)
{
    (void)arg;
    return d->cq_head != NULL;
}

int xdev_peek_timed(xdev_t *d, int timeout_ms, xdev_request_t **req)
{
    if (!d || !req || timeout_ms < -1)
        return XDEV_ERR_ARG;
    unsigned woken = wake_mark(d);
    dev_lock(d);
    int rc = XDEV_OK;
    if (timeout_ms == 0) {
        if (!d->cq_head)
            progress_once(d);
        if (!d->cq_head)
            rc = XDEV_ERR_TIMEOUT;
    } else {
        rc = progress_until(d, cq_nonempty, NULL, timeout_ms, woken);
    }
    if (rc == XDEV_OK)
        *req = public_of(req_cq_pop(d));
    dev_unlock(d);
    return rc;
}

int xdev_peek(xdev_t *d, xdev_request_t **req)
{
    return xdev_peek_timed(d, -1, req);
}

int xdev_wakeup(xdev_t *d)
{
    if (!d)
        return XDEV_ERR_ARG;
    xdev_wakeup_signal(d);
    return XDEV_OK;
}

int xdev_peer_state(xdev_t *d, int rank)
{
    if (!d || !rank_ok(d, rank))
        return XDEV_ERR_ARG;
    dev_lock(d);
    const peer_t *p = &d->peers[rank];
    int state = p->dead                          ? XDEV_PEER_DEAD
                : p->arrivals || rank == d->rank ? XDEV_PEER_ALIVE
                                                 : XDEV_PEER_UNKNOWN;
    dev_unlock(d);
    return state;
}
