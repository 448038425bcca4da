/*
 * request.c - request lifetime: the id table that lets a peer name one of
 * our requests without us ever trusting a pointer off the wire, and the
 * completion queue that xdev_peek hands out from.
 *
 * An id is (generation << 32 | slot). A slot's generation changes every
 * time it is freed, so a stale or forged id from a peer never reaches a
 * request it does not belong to.
 */
#include <stdlib.h>
#include "device.h"
#include "../kit/dlist.h"

#define NO_SLOT UINT32_MAX

int req_table_init(xdev_t *d)
{
    d->nslots = 0;
    d->slots = NULL;
    d->free_slot = NO_SLOT;
    return XDEV_OK;
}

void req_table_destroy(xdev_t *d)
{
    free(d->slots);
    d->slots = NULL;
}

static int grow_slots(xdev_t *d)
{
    uint32_t n = d->nslots ? d->nslots * 2 : 256;
    req_slot_t *s = realloc(d->slots, (size_t)n * sizeof *s);
    if (!s)
        return XDEV_ERR_NOMEM;
    for (uint32_t i = d->nslots; i < n; i++) {
        s[i].req = NULL;
        s[i].gen = 1;
        s[i].next_free = i + 1 < n ? i + 1 : d->free_slot;
    }
    d->free_slot = d->nslots;
    d->slots = s;
    d->nslots = n;
    return XDEV_OK;
}

/* The magic of an active request at r. Keyed with the address, so that
 * bytes that hold the magic somewhere else never pass for a request: a
 * byte copy or a moved request, and what such copies leave behind in
 * storage that is reused uninitialized (a libfabric provider copies
 * request bytes onto the stack, where a later caller's request array
 * found them). */
static uint64_t magic_at(const xreq_t *r)
{
    return REQ_MAGIC ^ (uint64_t)(uintptr_t)r;
}

/* Read without the device lock (to find the device, and so that a bad
 * request is refused cheaply) while another thread may reap the request:
 * magic and dev are read and written atomically. */
bool req_is_active(const xreq_t *r)
{
    return __atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) == magic_at(r);
}

xdev_t *req_device(const xreq_t *r)
{
    return req_is_active(r) ? __atomic_load_n(&r->dev, __ATOMIC_RELAXED) : NULL;
}

XDEV_HOT int req_start(xdev_t *d, xreq_t *r, int kind, void *buf, size_t len, int peer, int tag,
                       int ctx)
{
    if (d->free_slot == NO_SLOT && grow_slots(d) != XDEV_OK)
        return XDEV_ERR_NOMEM;
    r->ctl_claim = 0;
    if (kind == REQ_RECV && proto_claim_ctl(d, r) != XDEV_OK)
        return XDEV_ERR_NOMEM;
    uint32_t slot = d->free_slot;
    d->free_slot = d->slots[slot].next_free;
    d->slots[slot].req = r;

    /* Only what every path reads before writing: the request is hundreds
     * of bytes, and clearing all of it cost more than the rest of a
     * small send. The protocol fills the rest as it goes. */
    __atomic_store_n(&r->dev, d, __ATOMIC_RELAXED);
    __atomic_store_n(&r->magic, magic_at(r), __ATOMIC_RELEASE);
    r->id = (uint64_t)d->slots[slot].gen << 32 | slot;
    r->kind = (uint8_t)kind;
    r->buf = buf;
    r->len = len;
    r->peer = peer;
    r->tag = tag;
    r->ctx = ctx;
    r->phase = 0;
    r->flags = 0;
    r->niov = 0;
    r->op.owner = OP_REQ;
    r->status = (xdev_status_t){ .source = peer, .tag = tag, .ctx = ctx };
    d->nactive++;
    return XDEV_OK;
}

xreq_t *req_lookup(xdev_t *d, uint64_t id)
{
    uint32_t slot = (uint32_t)id;
    if (slot >= d->nslots || d->slots[slot].gen != (uint32_t)(id >> 32))
        return NULL;
    return d->slots[slot].req;
}

/* Complete r with err as its outcome (XDEV_OK keeps what the protocol put
 * in the status, e.g. XDEV_ERR_TRUNCATE). */
XDEV_HOT void req_complete(xdev_t *d, xreq_t *r, int err)
{
    if (err != XDEV_OK)
        r->status.error = err;
    if (r->flags & F_MEM)
        proto_release_mem(d, r);
    proto_unclaim_ctl(d, r);
    if (r->flags & F_FETCH) {
        proto_fetch_done(d, r);
        return;
    }
    r->phase = PH_DONE;
    d->completions++;
    if (d->loop_armed) /* a cancel or a post completes it outside progress */
        event_loop_poke(d);
    if (r->flags & F_PRIVATE)
        return;
    r->flags |= F_IN_CQ;
    XDEV_DLIST_APPEND(d->cq_head, d->cq_tail, r, cq_prev, cq_next);
}

/* Take r off the completion queue (handed out by peek, or reaped). */
static void cq_unlink(xdev_t *d, xreq_t *r)
{
    if (!(r->flags & F_IN_CQ))
        return;
    XDEV_DLIST_UNLINK(d->cq_head, d->cq_tail, r, cq_prev, cq_next);
    r->flags &= (uint16_t)~F_IN_CQ;
}

xreq_t *req_cq_pop(xdev_t *d)
{
    xreq_t *r = d->cq_head;
    if (r)
        cq_unlink(d, r);
    return r;
}

/* Give a completed (or, at finalize, abandoned) request back to its owner. */
XDEV_HOT void req_reap(xdev_t *d, xreq_t *r, xdev_status_t *st)
{
    cq_unlink(d, r);
    proto_unclaim_ctl(d, r);
    uint32_t slot = (uint32_t)r->id;
    d->slots[slot].req = NULL;
    d->slots[slot].gen++;
    d->slots[slot].next_free = d->free_slot;
    d->free_slot = slot;
    d->nactive--;
    if (st)
        *st = r->status;
    __atomic_store_n(&r->magic, 0, __ATOMIC_RELEASE);
}
