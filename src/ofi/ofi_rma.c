/*
 * ofi_rma.c - the RMA seam: rendezvous data moved by fi_read / fi_write.
 *
 * The receiver reads the sender's exposed buffer by default (one control
 * message fewer than a write); XDEV_OFI_RMA=write makes the sender write
 * into the receiver's instead, and XDEV_OFI_RMA=off streams everything.
 * Without FI_RMA in the provider every rendezvous is streamed.
 *
 * Registration: the exposed buffer is registered for the peer per message
 * (fi_mr_reg with a key we choose, or the provider's with FI_MR_PROV_KEY;
 * bound to the endpoint with FI_MR_ENDPOINT); its address on the wire is
 * the virtual address with FI_MR_VIRT_ADDR, else an offset from 0. The
 * local side of a transfer is registered only under FI_MR_LOCAL.
 * Transfers larger than the provider's largest message go in pieces.
 */
#include <stdlib.h>
#include <string.h>
#include "ofi.h"
#include "../kit/dlist.h"

int ofi_mr_local(xdev_tp_t *tp, void *buf, size_t len, uint64_t access, struct fid_mr **mr)
{
    uint64_t key = (tp->mr_mode & FI_MR_PROV_KEY) ? 0 : ++tp->next_key;
    if (fi_mr_reg(tp->domain, buf, len, access, 0, key, 0, mr, NULL) != 0)
        return XDEV_ERR_SYSTEM;
    if ((tp->mr_mode & FI_MR_ENDPOINT) &&
        (fi_mr_bind(*mr, &tp->ep->fid, 0) != 0 || fi_mr_enable(*mr) != 0)) {
        fi_close(&(*mr)->fid);
        *mr = NULL;
        return XDEV_ERR_SYSTEM;
    }
    return XDEV_OK;
}

static int reg_user(void *ctx, void *addr, size_t len, xdev_reg_t *r)
{
    xdev_tp_t *tp = ctx;
    struct fid_mr *mr;
    uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    if (ofi_mr_local(tp, addr, len, access, &mr) != XDEV_OK)
        return XDEV_ERR_SYSTEM;
    uint64_t key = fi_mr_key(mr);
    if (key == FI_KEY_NOTAVAIL) {
        fi_close(&mr->fid);
        return XDEV_ERR_SYSTEM;
    }
    r->handle = mr;
    r->lkey = (uint64_t)(uintptr_t)fi_mr_desc(mr);
    r->rkey = key;
    return XDEV_OK;
}

static void dereg_user(void *ctx, xdev_reg_t *r)
{
    (void)ctx;
    fi_close(&((struct fid_mr *)r->handle)->fid);
}

/* User buffers are registered through the core's cache (XDEV_REGCACHE):
 * one registration, with every access, serves a buffer's sends, reads,
 * writes and exposures, and is kept for its next use while the kernel
 * says the memory is still there. */
int ofi_regcache_open(xdev_tp_t *tp)
{
    if (tp->rma_mode == XDEV_RNDZ_SEND && !(tp->mr_mode & FI_MR_LOCAL))
        return XDEV_OK; /* nothing of the user's is ever registered */
    size_t max = 0;
    xdev_regcache_params_t p = {
        .reg = reg_user, .dereg = dereg_user, .ctx = tp, .mode = XDEV_REGCACHE_AUTO,
    };
    if (xdev_opt_choice(tp->dev, "XDEV_REGCACHE", &p.mode) != XDEV_OK ||
        xdev_opt_size(tp->dev, "XDEV_REGCACHE_MAX", &max) != XDEV_OK)
        return XDEV_ERR_INIT;
    p.max_entries = (unsigned)max;
    return xdev_regcache_open(&p, &tp->regcache);
}

int ofi_rndz_mode(xdev_tp_t *tp, int peer, size_t len)
{
    (void)len;
    return tp->peers[peer].failed ? XDEV_RNDZ_SEND : tp->rma_mode;
}

int ofi_mem_expose(xdev_tp_t *tp, int peer, void *buf, size_t len, bool remote_write,
                   xdev_mem_t *mem)
{
    if (tp->rma_mode == XDEV_RNDZ_SEND || tp->peers[peer].failed)
        return XDEV_ERR_SYSTEM;
    ofi_exposure_t *x = calloc(1, sizeof *x);
    if (!x)
        return XDEV_ERR_NOMEM;
    if (xdev_regcache_get(tp->regcache, buf, len, &x->reg) != XDEV_OK) {
        free(x);
        return XDEV_ERR_SYSTEM;
    }
    x->peer = peer; /* (the registration serves every access: ofi_regcache_open) */
    x->remote_write = remote_write;
    XDEV_DLIST_PUSH(tp->exposed, x, prev, next);
    /* Without FI_MR_VIRT_ADDR a peer names offsets into the registration,
     * which the cache may have made for a larger range starting lower. */
    uint64_t addr = (uint64_t)(uintptr_t)buf;
    *mem = (xdev_mem_t){
        .addr = (tp->mr_mode & FI_MR_VIRT_ADDR) ? addr : addr - x->reg->start,
        .key = x->reg->rkey,
        .handle = x,
    };
    return XDEV_OK;
}

static void unexpose(xdev_tp_t *tp, ofi_exposure_t *x)
{
    XDEV_DLIST_UNLINK_HEAD(tp->exposed, x, prev, next);
    xdev_regcache_put(tp->regcache, x->reg);
    free(x);
}

void ofi_mem_release(xdev_tp_t *tp, xdev_mem_t *mem)
{
    if (mem->handle)
        unexpose(tp, mem->handle);
    mem->handle = NULL;
}

/* A failed peer may yet run (judged by pings, it was only slow or cut
 * off) and carry out a write or read it was asked for: the provider would
 * serve it from or into a buffer whose request has ended. A closed region
 * refuses it, so the buffers exposed to the peer are registered no longer
 * once their requests end; the cache must not keep them. (A provider that
 * checks the key once per operation, as rxd does, finishes one the peer
 * began before it failed: that is what the hold of ofi_peer_fail_at is
 * for.) Returns how many of them p may write into. */
unsigned ofi_revoke_exposures(xdev_tp_t *tp, const ofi_peer_t *p)
{
    unsigned writable = 0;
    for (ofi_exposure_t *x = tp->exposed; x; x = x->next)
        if (x->peer == p->rank) {
            xdev_regcache_revoke(tp->regcache, x->reg);
            writable += x->remote_write;
        }
    return writable;
}

/* Close: exposures of requests the caller abandoned are ended here, or
 * the domain could not close. */
void ofi_mem_release_all(xdev_tp_t *tp)
{
    while (tp->exposed)
        unexpose(tp, tp->exposed);
}

/* Post the next piece of m's transfer. */
static int post_piece(xdev_tp_t *tp, ofi_peer_t *p, ofi_msg_t *m)
{
    xdev_rmaop_t *op = m->rma;
    ofi_ctx_t *c = ofi_ctx_get(tp);
    if (!c)
        return -FI_EAGAIN;
    size_t n = op->len - m->posted;
    if (n > tp->rma_max)
        n = tp->rma_max;
    c->msg = m;
    c->peer = p->rank;
    c->kind = 0;
    c->rma_len = n;
    char *local = (char *)op->local + m->posted;
    uint64_t remote = op->remote_addr + m->posted;
    void *desc = ofi_reg_desc(m->reg);
    int rc = op->write ? (int)fi_write(tp->ep, local, n, desc, p->addr, remote, op->remote_key, c)
                       : (int)fi_read(tp->ep, local, n, desc, p->addr, remote, op->remote_key, c);
    if (rc != 0) {
        ofi_ctx_put(tp, c);
        return rc;
    }
    m->started = true;
    m->pending++;
    p->rma_bytes += n;
    m->posted += n;
    m->all_posted = m->posted == op->len;
    return 0;
}

static bool room_for_op(const xdev_tp_t *tp, const ofi_peer_t *p)
{
    return tp->local_only || p->rma_bytes < OFI_RMA_BYTES_MAX;
}

/* Post queued transfers in order, posted already true if this call has
 * posted an op. No callbacks: runs inside ofi_rma too.
 *
 * A provider may move a whole op inside one of our calls, with our device
 * lock held: the one that posts it (libfabric's shm reads 256 MiB with one
 * process_vm_readv), so ops are XDEV_TP_PASS_BYTES at most and a call
 * posts no second one while another thread waits for the lock. It does
 * not stop after one otherwise: one op a poll cost shm's provider 11% of
 * its 16 MiB bandwidth both ways (test/bench/RESULTS.md, "ofi: RMA in
 * pieces").
 *
 * Or the peer's call: tcp;ofi_rxm serves our reads inside the peer's
 * fi_cq_read, every byte asked for while the socket keeps draining. So
 * over a provider that leaves the host an op is posted only while less
 * than OFI_RMA_BYTES_MAX is in flight to the peer, whether of one long
 * message or of a window of shorter ones (room_for_op), and more as
 * those complete (ofi_tx_complete). In bytes, not ops: two ops in flight
 * cost a window of 1 MiB messages 31% of its bandwidth; 8 MiB cost a
 * 16 MiB ping-pong 6%. Not over a provider that stays on the host: there
 * the reader's own post makes the copy, and a cap cost shm's provider
 * 5-18% of its 8-32 MiB bandwidth both ways (RESULTS, "ofi: 16 MiB of
 * RMA in flight"). */
static void post_queued(xdev_tp_t *tp, ofi_peer_t *p, bool posted)
{
    while (p->rmaq_head && !p->failed && !p->broken && room_for_op(tp, p)) {
        ofi_msg_t *m = p->rmaq_head;
        int rc = posted && xdev_core_lock_wanted(tp->dev) ? -FI_EAGAIN : post_piece(tp, p, m);
        posted = true;
        if (rc == -FI_EAGAIN) {
            ofi_service_later(tp, p);
            return;
        }
        if (rc != 0) {
            p->broken = true;
            ofi_service_later(tp, p);
            return;
        }
        if (m->all_posted) {
            p->rmaq_head = m->qnext;
            if (!p->rmaq_head)
                p->rmaq_tail = NULL;
        }
    }
}

void ofi_rma_flush(xdev_tp_t *tp, ofi_peer_t *p)
{
    post_queued(tp, p, false);
}

int ofi_rma(xdev_tp_t *tp, int peer, xdev_rmaop_t *op)
{
    ofi_peer_t *p = &tp->peers[peer];
    if (p->failed || p->broken || ofi_resolve(tp, p, false) != 1)
        return XDEV_ERR_PEER;
    if (!op->len)
        return 1;
    ofi_msg_t *m = ofi_msg_new(tp, p);
    if (!m)
        return XDEV_ERR_NOMEM;
    if ((tp->mr_mode & FI_MR_LOCAL) &&
        xdev_regcache_get(tp->regcache, op->local, op->len, &m->reg) != XDEV_OK) {
        ofi_msg_free(tp, p, m);
        return XDEV_ERR_SYSTEM;
    }
    m->rma = op;
    p->active = true;
    bool posted = false;
    if (!p->rmaq_head && room_for_op(tp, p)) {
        /* Nothing ahead of it: a failure to post the first piece means
         * nothing moved, and the core streams the message instead. */
        int rc = post_piece(tp, p, m);
        if (rc != 0 && rc != -FI_EAGAIN) {
            ofi_msg_free(tp, p, m);
            return XDEV_ERR_SYSTEM;
        }
        if (m->all_posted)
            return 0;
        posted = rc == 0;
    }
    if (p->rmaq_tail)
        p->rmaq_tail->qnext = m;
    else
        p->rmaq_head = m;
    p->rmaq_tail = m;
    post_queued(tp, p, posted);
    return 0;
}
