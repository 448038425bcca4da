/*
 * ibv_rma.c - rendezvous by RDMA write or read (the core's RMA seam).
 *
 * WRITE (IBVX's choice): the receiver exposes its buffer (a memory region
 * with remote write), the sender writes into it; READ: the sender exposes
 * its buffer, the receiver reads it. Either way the data moves once, from
 * the application's buffer into the application's buffer. Which one a
 * message uses is rndz_mode's call: XDEV_IBV_RNDZ=write|read|send, or by
 * size (README has the measurements behind the default).
 *
 * A transfer is cut into work requests of at most RMA_CHUNK bytes (the
 * device's largest message is 2 GiB on many). RDMA reads outstanding on a
 * QP are bounded by what both ends agreed at connection (max_rd_atomic),
 * so reads beyond that wait in the peer's queue; writes only wait for room
 * in the send queue.
 *
 * Buffers are registered through the registration cache (regcache.h), or
 * registered and deregistered around each transfer when it is off.
 */
#include <stdlib.h>
#include <string.h>
#include "ibv.h"
#include "../kit/dlist.h"

#define RMA_CHUNK ((size_t)1 << 30)

static int ibv_rma_mode_init(xdev_tp_t *tp);

/* ---- registration ---- */

/* One region serves every use of a range (a source, a target, exposed to
 * a peer), so it allows them all. */
static int reg_cb(void *ctx, void *addr, size_t len, xdev_reg_t *r)
{
    xdev_tp_t *tp = ctx;
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    struct ibv_mr *mr = ibv_reg_mr(tp->pd, addr, len, access);
    if (!mr)
        return XDEV_ERR_SYSTEM;
    r->handle = mr;
    r->lkey = mr->lkey;
    r->rkey = mr->rkey;
    return XDEV_OK;
}

static void dereg_cb(void *ctx, xdev_reg_t *r)
{
    (void)ctx;
    ibv_dereg_mr(r->handle);
}

int ibv_rma_init(xdev_tp_t *tp)
{
    size_t max = 0;
    xdev_regcache_params_t prm = {
        .reg = reg_cb, .dereg = dereg_cb, .ctx = tp, .mode = XDEV_REGCACHE_AUTO,
    };
    if (xdev_opt_choice(tp->dev, "XDEV_IBV_REGCACHE", &prm.mode) != XDEV_OK ||
        xdev_opt_size(tp->dev, "XDEV_REGCACHE_MAX", &max) != XDEV_OK)
        return XDEV_ERR_INIT;
    prm.max_entries = (unsigned)max;
    int rc = xdev_regcache_open(&prm, &tp->regcache);
    return rc == XDEV_OK ? ibv_rma_mode_init(tp) : rc;
}

int ibv_mem_expose(xdev_tp_t *tp, int peer, void *buf, size_t len, bool remote_write,
                   xdev_mem_t *mem)
{
    (void)peer;
    (void)remote_write; /* regions allow both; the key goes to this peer only */
    xdev_reg_t *r;
    int rc = xdev_regcache_get(tp->regcache, buf, len, &r);
    if (rc != XDEV_OK)
        return rc;
    *mem = (xdev_mem_t){ .addr = (uint64_t)(uintptr_t)buf, .key = r->rkey, .handle = r };
    return XDEV_OK;
}

void ibv_mem_release(xdev_tp_t *tp, xdev_mem_t *mem)
{
    xdev_regcache_put(tp->regcache, mem->handle);
    mem->handle = NULL;
}

/* ---- transfers ---- */

static void ctx_unlink(ibv_peer_t *p, ibv_rma_t *c)
{
    XDEV_DLIST_UNLINK(p->rma_head, p->rma_tail, c, prev, next);
    c->next = c->prev = NULL;
}

/* A transfer with nothing on the wire any more leaves the peer's list,
 * and its op goes back to the core. */
static void ctx_finish(xdev_tp_t *tp, ibv_peer_t *p, ibv_rma_t *c, int err)
{
    ctx_unlink(p, c);
    xdev_regcache_put(tp->regcache, c->reg);
    xdev_core_rma_done(tp->dev, c->op, err);
    free(c);
}

/* Post what the peer's limits allow of its transfers, oldest first. */
void ibv_rma_run(xdev_tp_t *tp, ibv_peer_t *p)
{
    for (ibv_rma_t *c = p->rma_head; c; c = c->next) {
        while (c->posted < c->len) {
            bool read = !c->write;
            if (p->broken || p->sq_inflight >= tp->sq_depth || (read && p->rd_out >= p->rd_max))
                return;
            size_t n = c->len - c->posted;
            if (n > RMA_CHUNK)
                n = RMA_CHUNK;
            struct ibv_sge sge = { .addr = (uintptr_t)c->op->local + c->posted,
                                   .length = (uint32_t)n, .lkey = c->reg->lkey };
            struct ibv_send_wr wr = {
                .wr_id = (uint64_t)WR_RMA << 56 | (uintptr_t)c,
                .sg_list = &sge,
                .num_sge = 1,
                .opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
                .send_flags = IBV_SEND_SIGNALED,
                .wr.rdma = { .remote_addr = c->op->remote_addr + c->posted,
                             .rkey = (uint32_t)c->op->remote_key },
            }, *bad;
            if (ibv_post_send(p->qp, &wr, &bad)) {
                p->broken = true;
                return;
            }
            p->sq_inflight++;
            p->rd_out += read;
            c->outstanding++;
            c->posted += n;
        }
    }
}

bool ibv_rma_pending(const ibv_peer_t *p)
{
    for (const ibv_rma_t *c = p->rma_head; c; c = c->next)
        if (c->posted < c->len)
            return true;
    return false;
}

int ibv_rma(xdev_tp_t *tp, int peer, xdev_rmaop_t *op)
{
    ibv_peer_t *p = &tp->peers[peer];
    if (p->state != PEER_UP || !p->remote_ready)
        return XDEV_ERR_PEER; /* a rendezvous follows a message: cannot happen */
    ibv_rma_t *c = calloc(1, sizeof *c);
    if (!c)
        return XDEV_ERR_NOMEM;
    if (xdev_regcache_get(tp->regcache, op->local, op->len, &c->reg) != XDEV_OK) {
        free(c);
        return XDEV_ERR_SYSTEM;
    }
    c->op = op;
    c->peer = peer;
    c->write = op->write;
    c->len = op->len;
    XDEV_DLIST_APPEND(p->rma_head, p->rma_tail, c, prev, next);
    ibv_rma_run(tp, p);
    ibv_tx_kick(tp, p);
    return 0;
}

void ibv_rma_completion(xdev_tp_t *tp, struct ibv_wc *wc)
{
    ibv_rma_t *c = (ibv_rma_t *)(uintptr_t)(wc->wr_id & (((uint64_t)1 << 56) - 1));
    ibv_peer_t *p = &tp->peers[c->peer];
    p->sq_inflight--;
    if (!c->write && p->rd_out)
        p->rd_out--;
    c->outstanding--;
    if (wc->status != IBV_WC_SUCCESS && p->state != PEER_DEAD) {
        IBV_TRACE(tp, "peer %d: rdma completion %s", c->peer, ibv_wc_status_str(wc->status));
        /* hands c's op back and frees c, or holds it while flushes are
         * due: c is not ours to touch after this */
        ibv_peer_fail(tp, c->peer);
        return;
    }
    if (p->state == PEER_DEAD) {
        if (c->outstanding)
            return;
        int peer = c->peer;
        ctx_finish(tp, p, c, XDEV_ERR_PEER);
        if (--p->held == 0)
            xdev_core_peer_failed(tp->dev, peer);
    } else if (c->outstanding == 0 && c->posted == c->len) {
        ctx_finish(tp, p, c, XDEV_OK);
    } else {
        ibv_tx_kick(tp, p);
    }
}

/* The peer failed and its QP is in the error state: a transfer with
 * nothing on the wire goes back to the core now, as failed. One with work
 * requests out is held, since the device may write into its buffer until
 * their completions (flushed, mostly) come: the verbs contract. The count
 * of those held is returned; the last one's completion tells the core. */
unsigned ibv_rma_fail_peer(xdev_tp_t *tp, ibv_peer_t *p)
{
    unsigned held = 0;
    ibv_rma_t *next;
    for (ibv_rma_t *c = p->rma_head; c; c = next) {
        next = c->next;
        c->posted = c->len; /* nothing more goes out */
        if (c->outstanding)
            held++;
        else
            ctx_finish(tp, p, c, XDEV_ERR_PEER);
    }
    return held;
}

/* Closing: the QPs are gone, nothing will complete any more. */
void ibv_rma_close(xdev_tp_t *tp)
{
    for (int i = 0; tp->peers && i < tp->size; i++) {
        ibv_peer_t *p = &tp->peers[i];
        while (p->rma_head)
            ctx_finish(tp, p, p->rma_head, XDEV_ERR_PEER);
    }
    xdev_regcache_close(tp->regcache);
    tp->regcache = NULL;
}
/* Default: write (IBVX) below XDEV_IBV_READ_MIN bytes, read from there. */
int ibv_rndz_mode(xdev_tp_t *tp, int peer, size_t len)
{
    (void)peer;
    if (tp->rndz_force >= 0)
        return tp->rndz_force;
    return len >= tp->read_min ? XDEV_RNDZ_READ : XDEV_RNDZ_WRITE;
}

static int ibv_rma_mode_init(xdev_tp_t *tp)
{
    /* In the order of XDEV_IBV_RNDZ's choices. */
    static const int forced[] = { -1, XDEV_RNDZ_WRITE, XDEV_RNDZ_READ, XDEV_RNDZ_SEND };
    int choice = 0;
    tp->read_min = SIZE_MAX;
    if (xdev_opt_choice(tp->dev, "XDEV_IBV_RNDZ", &choice) != XDEV_OK ||
        xdev_opt_size(tp->dev, "XDEV_IBV_READ_MIN", &tp->read_min) != XDEV_OK)
        return XDEV_ERR_INIT;
    tp->rndz_force = forced[choice];
    return XDEV_OK;
}
