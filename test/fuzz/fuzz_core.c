/*
 * fuzz_core.c - the device of fuzz_core.h. It is built the way the unit
 * tests build one (test/unit/test_rx_whole.c): the core's own tables and
 * functions, no transport opened, so a target decides what the transport
 * state is.
 */
#include <stdlib.h>
#include <string.h>
#include "fuzz_core.h"

/* Room for a few buffered messages, so that a longer stream also meets
 * the bound and the deferral that comes with it. */
#define FUZZ_UNEXPECTED_LIMIT (4 * sizeof(uxmsg_t) + 2048)

static const size_t recv_len[FUZZ_NRECV + 1] = { 0, 7, 64, 300, 200 };

static fuzz_core_t *fuzzed; /* one device at a time */

static void post(fuzz_core_t *fc, int i, int tag)
{
    fc->buf[i] = recv_len[i] ? malloc(recv_len[i]) : NULL;
    xreq_t *r = xreq_of(&fc->recv[i]);
    FUZZ_CHECK(req_start(fc->dev, r, REQ_RECV, fc->buf[i], recv_len[i], XDEV_ANY_SOURCE, tag, 0) ==
               XDEV_OK);
    FUZZ_CHECK(proto_recv(fc->dev, r) == XDEV_OK);
}

void fuzz_core_open(fuzz_core_t *fc, int rank, int size, const xdev_tp_ops_t *ops, xdev_tp_t *tp)
{
    memset(fc, 0, sizeof *fc); /* the late receive is no request until posted */
    xdev_t *d = calloc(1, sizeof *d);
    FUZZ_CHECK(d && !req_table_init(d) && !xdev_mtable_init(&d->posted) &&
               !xdev_mtable_init(&d->unexpected));
    d->rank = rank;
    d->size = size;
    d->flags = XDEV_FLAG_SINGLE_THREAD;
    d->cfg.unexpected_limit = FUZZ_UNEXPECTED_LIMIT;
    d->wake_fd = d->event_fd = d->tick_fd = -1;
    d->tps[0].ops = ops;
    d->tps[0].tp = tp;
    d->ntps = 1;
    d->peers = calloc((size_t)size, sizeof *d->peers);
    FUZZ_CHECK(d->peers);
    for (int i = 0; i < size; i++) {
        d->peers[i].eager_limit = FUZZ_EAGER_LIMIT;
        d->peers[i].cut = UINT64_MAX;
    }
    fc->dev = d;
    fuzzed = fc;
    fc->awaited_upto = calloc((size_t)size, sizeof *fc->awaited_upto);
    FUZZ_CHECK(fc->awaited_upto);
    for (int i = 0; i < FUZZ_NRECV; i++)
        post(fc, i, i);
    fuzz_core_step(fc);
}

/* Does a receive wait on the streams (as stream_awaited counts)? Also
 * the core's own: an offer it reads in as it arrives (fetch_offer) is a
 * rendezvous receive that waits for its data like any other. */
static bool waiting(const fuzz_core_t *fc)
{
    for (int i = 0; i <= FUZZ_LATE; i++) {
        int phase = xreq_of((xdev_request_t *)&fc->recv[i])->phase;
        if (phase == PH_WAIT_DATA || phase == PH_RECV_POSTED)
            return true;
    }
    for (const uxmsg_t *e = fc->dev->ux_head; e; e = e->next)
        if (e->fetch)
            return true;
    return false;
}

/* The core charges an arrival past the bound when a request waits as it
 * arrives, which a step need not show: the core's read of an offer starts
 * as its offer arrives and may end with its data a few arrivals on, all
 * within one read of the transport. So each head the transport hands the
 * core comes through here first (the targets link with
 * -Wl,--wrap=xdev_core_rx_begin), and what arrived while one waited
 * counts as awaited. */
int __real_xdev_core_rx_begin(xdev_t *d, int peer, void *token, xdev_rx_t *rx);
int __wrap_xdev_core_rx_begin(xdev_t *d, int peer, void *token, xdev_rx_t *rx);

int __wrap_xdev_core_rx_begin(xdev_t *d, int peer, void *token, xdev_rx_t *rx)
{
    bool awaited = fuzzed && fuzzed->dev == d && waiting(fuzzed);
    int rc = __real_xdev_core_rx_begin(d, peer, token, rx);
    if (awaited)
        fuzzed->awaited_upto[peer] = d->peers[peer].arrivals;
    return rc;
}

void fuzz_core_step(fuzz_core_t *fc)
{
    /* A request that ended gave its buffer back: the program may free it
     * at once, so ASan stops a transport that writes into it later. */
    for (int i = 0; i <= FUZZ_LATE; i++)
        if (fc->buf[i] && xreq_of(&fc->recv[i])->phase == PH_DONE) {
            free(fc->buf[i]);
            fc->buf[i] = NULL;
        }
    bool now = waiting(fc);
    if (fc->was_waiting || now)
        for (int i = 0; i < fc->dev->size; i++)
            fc->awaited_upto[i] = fc->dev->peers[i].arrivals;
    fc->was_waiting = now;
}

void fuzz_core_catch_up(fuzz_core_t *fc)
{
    post(fc, FUZZ_LATE, XDEV_ANY_TAG);
    fuzz_core_step(fc); /* posted, it may read deferred messages past the bound */
}

void fuzz_core_check(const fuzz_core_t *fc, size_t received)
{
    const xdev_t *d = fc->dev;
    for (int i = 0; i <= FUZZ_LATE; i++) {
        const xreq_t *r = xreq_of((xdev_request_t *)&fc->recv[i]);
        if (r->phase != PH_DONE)
            continue;
        FUZZ_CHECK(r->status.count <= recv_len[i]);
        FUZZ_CHECK(r->status.count <= received);
        FUZZ_CHECK(r->status.error != XDEV_OK || r->status.count == r->status.msg_len);
    }
    /* Over the bound only to reach what a waiting request needs from the
     * sender (a rendezvous receive the frames matched, in PH_WAIT_DATA, the
     * core's read of an offer, or a receive still posted for a message to
     * come). What it buffered then stays past the bound once the receive
     * is done; every message that arrived later was charged within the
     * bound, and those still held were all held at the last such charge. */
    size_t later = 0;
    for (const uxmsg_t *e = d->ux_head; e; e = e->next)
        if (e->arrival > fc->awaited_upto[e->src])
            later += e->charge;
    FUZZ_CHECK(later <= d->cfg.unexpected_limit);
    for (const uxmsg_t *e = d->ux_head; e; e = e->next)
        FUZZ_CHECK(e->type == XDEV_MSG_RNDZ_START || e->state != UX_READY || e->len <= received);
}

void fuzz_core_close(fuzz_core_t *fc)
{
    fuzzed = NULL;
    device_free(fc->dev);
    free(fc->awaited_upto);
    for (int i = 0; i <= FUZZ_LATE; i++)
        free(fc->buf[i]);
}
