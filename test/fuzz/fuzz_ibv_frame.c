/*
 * fuzz_ibv_frame.c - the ibv transport's receive path (ibv_rx_completion:
 * credits in the immediate data, begin_message and feed, held buffers,
 * deferral and resume through ibv_resume and ibv_rx_service) on receive
 * completions that one peer, broken or malicious, caused as it liked. The
 * input is a run of completions (fuzz_ibv.h).
 *
 * No device is needed: the verbs the data path calls (ibv_poll_cq,
 * ibv_post_srq_recv, ibv_post_send) are inline functions that go through
 * the context's ops table, so the CQ, SRQ and QP here are fakes whose
 * context points at this file. The SRQ holds the buffers posted to it, in
 * order, and the CQ completes the oldest with the input's next record, as
 * a device takes SRQ buffers in the order they were posted. The few verbs
 * that are real functions of libibverbs, which would go through a
 * driver's private ops (failing a peer moves its QP to the error state;
 * close destroys what open made), are defined here too: the executable's
 * definition is the one the library's objects linked into it call. The
 * transport and core are the real ones.
 *
 * The receive path promises that no completion makes it read past what
 * the device placed in a buffer or touch a buffer the SRQ holds (ASan: a
 * posted buffer is poisoned, a completed one beyond its byte_len), or
 * place more into a receive than the core gave it room for (receives are
 * heap blocks of exactly their size); that every receive buffer is in one
 * place at a time (the SRQ, the batch waiting to be reposted, or its
 * peer's held list), never posted twice and never lost; that a peer's
 * credits never go below zero nor above what it was given back, and that
 * it gets credits back only for buffers it filled; that a peer whose
 * connection broke is failed, its QP moved to the error state, and the
 * core told once the work requests out on it have come back flushed; that
 * no receive ends while a work request that names its buffer is out (the
 * flush writes a read's target, and the receive's buffer is freed as it
 * ends: fuzz_core.h); and that the core never holds more than the
 * completions carried (fuzz_core_check).
 */
#include <arpa/inet.h>
#include <sanitizer/asan_interface.h>
#include "fuzz_core.h"
#include "fuzz_ibv.h"
#include "ibv.h"

/* The transport as ibv_tp_open sizes it for one peer and the least
 * XDEV_IBV_RX_BUFS: 4 buffers, 2 credits (the rest is for credit-only
 * messages), a send queue of credits + 2 + 32. */
enum { ME = 0, PEER = 1, NRX = 4, CREDITS = 2, SQ_DEPTH = CREDITS + 2 + 32, MAX_INLINE = 256 };

/* Its QP number hashes to slot 0 of the qpn table whatever the table's
 * size; any other number finds no peer. */
enum { PEER_QPN = 0, OTHER_QPN = 1 };

/* The fake device: what it holds and what it was given. */
static struct {
    xdev_tp_t *tp;
    uint32_t srq[NRX];   /* posted receive buffers, oldest first */
    unsigned nsrq;
    bool posted[NRX];
    const uint8_t *in;   /* records not yet completed */
    size_t left;
    size_t delivered;    /* bytes placed in receive buffers */
    unsigned filled;     /* buffers the peer filled with a message's bytes */
    unsigned granted;    /* credits the peer's completions carried */
    unsigned sends;      /* our sends that took one of the peer's buffers */
    unsigned returned;   /* credits our sends carried back */
    unsigned work;       /* work requests posted to the peer's QP */
    struct {
        uint64_t wr_id;
        bool read;       /* an RDMA read: the device writes its target */
        uintptr_t addr;  /* the memory it owns until completion, if not inline */
        uint32_t len;
    } sq[SQ_DEPTH];      /* ... oldest first */
    unsigned flushed;    /* ... how many completed as flushed */
    bool broke;          /* a completion of the peer's in error */
    bool qp_error;       /* its QP was moved to the error state */
} dev;

static uint8_t *buf_data(uint32_t idx)
{
    return (uint8_t *)dev.tp->pool + (size_t)idx * FUZZ_IBV_BUF;
}

/* The next record of the input into the oldest posted buffer. */
static void complete(struct ibv_wc *wc)
{
    const uint8_t *h = dev.in;
    size_t len = h[5] | (size_t)h[6] << 8;
    dev.in += FUZZ_IBV_HDR;
    dev.left -= FUZZ_IBV_HDR;
    if (len > dev.left)
        len = dev.left;
    uint32_t idx = dev.srq[0];
    memmove(dev.srq, dev.srq + 1, --dev.nsrq * sizeof dev.srq[0]);
    dev.posted[idx] = false;
    bool fits = len <= FUZZ_IBV_BUF;
    if (fits) {
        ASAN_UNPOISON_MEMORY_REGION(buf_data(idx), len);
        memcpy(buf_data(idx), dev.in, len);
        dev.delivered += len;
    }
    dev.in += len;
    dev.left -= len;
    enum ibv_wc_status status = h[0] & FUZZ_IBV_ERROR ? IBV_WC_WR_FLUSH_ERR
                                : fits                ? IBV_WC_SUCCESS
                                                      : IBV_WC_LOC_LEN_ERR;
    *wc = (struct ibv_wc){ .wr_id = wr_id_make(WR_RECV, 0, idx), .status = status,
                           .opcode = IBV_WC_RECV, .byte_len = fits ? (uint32_t)len : 0,
                           .qp_num = h[0] & FUZZ_IBV_OTHER_QP ? OTHER_QPN : PEER_QPN,
                           .wc_flags = h[0] & FUZZ_IBV_IMM ? IBV_WC_WITH_IMM : 0 };
    memcpy(&wc->imm_data, h + 1, 4);
    if (h[0] & FUZZ_IBV_OTHER_QP)
        return;
    dev.broke |= status != IBV_WC_SUCCESS;
    uint32_t imm = h[0] & FUZZ_IBV_IMM ? ntohl(wc->imm_data) : 0;
    if (status == IBV_WC_SUCCESS) {
        dev.granted += imm & IMM_CREDITS_MASK;
        dev.filled += !(imm & IMM_CREDIT_ONLY);
    }
}

/* A record can complete: its header is there and a buffer is posted. */
static bool can_complete(void)
{
    return dev.left >= FUZZ_IBV_HDR && dev.nsrq;
}

/* Once the QP is in the error state, the work requests posted to it
 * complete as flushed, in the order they were posted. */
static bool can_flush(void)
{
    return dev.qp_error && dev.flushed < dev.work;
}

/* A work request's memory is the device's until its completion, flushed
 * or not: a read in flight as the QP failed may still land. So a flushed
 * read writes its target and any other flushed request reads its source,
 * and ASan stops one whose memory was handed back before. */
static void flush_one(struct ibv_wc *wc)
{
    static volatile uint8_t sink;
    uint8_t *mem = (uint8_t *)dev.sq[dev.flushed].addr;
    uint32_t len = dev.sq[dev.flushed].len;
    if (dev.sq[dev.flushed].read && len)
        memset(mem, 0xd7, len);
    else
        for (uint32_t i = 0; i < len; i++)
            sink = mem[i];
    *wc = (struct ibv_wc){ .wr_id = dev.sq[dev.flushed++].wr_id, .status = IBV_WC_WR_FLUSH_ERR,
                           .qp_num = PEER_QPN };
}

static int fake_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
    (void)cq;
    int n = 0;
    for (; n < num_entries && can_flush(); n++)
        flush_one(wc + n);
    for (; n < num_entries && can_complete(); n++)
        complete(wc + n);
    return n;
}

static int fake_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
                              struct ibv_recv_wr **bad)
{
    (void)srq, (void)bad;
    for (; wr; wr = wr->next) {
        uint32_t idx = wr_value_of(wr->wr_id);
        FUZZ_CHECK(wr->wr_id == wr_id_make(WR_RECV, 0, idx) && idx < NRX && !dev.posted[idx]);
        FUZZ_CHECK(wr->num_sge == 1 && wr->sg_list->addr == (uintptr_t)buf_data(idx) &&
                   wr->sg_list->length == FUZZ_IBV_BUF &&
                   wr->sg_list->lkey == dev.tp->pool_mr->lkey);
        FUZZ_CHECK(dev.nsrq < NRX);
        dev.posted[idx] = true;
        dev.srq[dev.nsrq++] = idx;
        ASAN_POISON_MEMORY_REGION(buf_data(idx), FUZZ_IBV_BUF); /* the device's now */
    }
    return 0;
}

/* Everything the core answers with (acknowledgements, rendezvous replies
 * and reads) and every credit-only message; none of them completes until
 * the QP is moved to the error state (can_flush). */
static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    (void)bad;
    FUZZ_CHECK(qp == dev.tp->peers[PEER].qp);
    for (; wr; wr = wr->next) {
        FUZZ_CHECK(dev.work < SQ_DEPTH);
        bool owned = wr->num_sge && !(wr->send_flags & IBV_SEND_INLINE);
        FUZZ_CHECK(!owned || wr->num_sge == 1);
        dev.sq[dev.work].wr_id = wr->wr_id;
        dev.sq[dev.work].read = wr->opcode == IBV_WR_RDMA_READ;
        dev.sq[dev.work].addr = owned ? wr->sg_list->addr : 0;
        dev.sq[dev.work++].len = owned ? wr->sg_list->length : 0;
        if (wr->opcode != IBV_WR_SEND_WITH_IMM)
            continue;
        uint32_t imm = ntohl(wr->imm_data);
        dev.returned += imm & IMM_CREDITS_MASK;
        dev.sends += !(imm & IMM_CREDIT_ONLY);
    }
    return 0;
}

static struct ibv_context fake_ctx = { .ops = { .poll_cq = fake_poll_cq,
                                                .post_srq_recv = fake_post_srq_recv,
                                                .post_send = fake_post_send } };
static struct ibv_cq fake_cq = { .context = &fake_ctx };
static struct ibv_srq fake_srq = { .context = &fake_ctx };
static struct ibv_qp fake_qp = { .context = &fake_ctx, .qp_num = PEER_QPN };
static struct ibv_mr fake_mr = { .context = &fake_ctx, .lkey = 0x1b };

/* The real libibverbs functions the transport reaches. */
int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
    FUZZ_CHECK(qp == &fake_qp && attr_mask == IBV_QP_STATE && attr->qp_state == IBV_QPS_ERR);
    dev.qp_error = true;
    return 0;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
    FUZZ_CHECK(qp == &fake_qp);
    return 0;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
    FUZZ_CHECK(srq == &fake_srq);
    return 0;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
    FUZZ_CHECK(cq == &fake_cq);
    return 0;
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
    FUZZ_CHECK(mr == &fake_mr);
    return 0;
}

/* Rendezvous reads and writes register the receive's buffer: through a
 * cache that keeps nothing, with keys that name nothing. */
static int fake_reg(void *ctx, void *addr, size_t len, xdev_reg_t *r)
{
    (void)ctx, (void)addr, (void)len;
    r->lkey = r->rkey = 0x2c;
    return XDEV_OK;
}

static void fake_dereg(void *ctx, xdev_reg_t *r)
{
    (void)ctx, (void)r;
}

/* An open transport to one peer whose QP is up, as ibv_tp_open and the
 * connection exchange leave it; the peer has not yet been heard from. */
static xdev_tp_t *tp_with_peer(void)
{
    xdev_tp_t *tp = calloc(1, sizeof *tp);
    FUZZ_CHECK(tp);
    dev.tp = tp;
    tp->rank = ME;
    tp->size = 2;
    tp->eager_limit = FUZZ_EAGER_LIMIT;
    tp->epfd = -1;
    tp->cq = &fake_cq;
    tp->srq = &fake_srq;
    tp->pool_mr = &fake_mr;
    tp->buf_bytes = FUZZ_IBV_BUF;
    tp->nrx = NRX;
    tp->credits = CREDITS;
    tp->sq_depth = SQ_DEPTH;
    tp->max_inline = MAX_INLINE;
    tp->unsettled = 1;
    tp->next_timer_ms = UINT64_MAX; /* connections, exits, keepalives: not fuzzed */
    tp->pool = malloc(NRX * FUZZ_IBV_BUF);
    tp->bufs = calloc(NRX, sizeof *tp->bufs);
    tp->repost = calloc(NRX, sizeof *tp->repost);
    tp->dirty = calloc(2, sizeof *tp->dirty);
    tp->peers = calloc(2, sizeof *tp->peers);
    tp->qpn_table = calloc(4, sizeof *tp->qpn_table);
    FUZZ_CHECK(tp->pool && tp->bufs && tp->repost && tp->dirty && tp->peers && tp->qpn_table);
    tp->qpn_mask = 3;
    tp->qpn_table[0] = PEER + 1;
    for (int r = 0; r < 2; r++)
        tp->peers[r].pidfd = -1;
    ibv_peer_t *p = &tp->peers[PEER];
    p->qp = &fake_qp;
    p->state = PEER_UP;
    p->cr.avail = CREDITS;
    p->rd_max = 1;
    tp->nup = 1;
    xdev_regcache_params_t prm = { .reg = fake_reg, .dereg = fake_dereg,
                                   .mode = XDEV_REGCACHE_OFF };
    FUZZ_CHECK(xdev_regcache_open(&prm, &tp->regcache) == XDEV_OK);
    FUZZ_CHECK(ibv_rx_init(tp) == XDEV_OK);
    return tp;
}

/* Progress while records or flushes can still complete or the transport
 * has arrivals to deliver or buffers to repost. */
static void run(xdev_tp_t *tp, fuzz_core_t *fc)
{
    while (can_complete() || can_flush() || tp->service || tp->nrepost) {
        xdev_ibv_ops.progress(tp, false);
        fuzz_core_step(fc);
    }
}

static void mark(bool *seen, uint32_t idx)
{
    FUZZ_CHECK(idx < NRX && !seen[idx]);
    seen[idx] = true;
}

/* Every receive buffer is in exactly one place, and a failed peer holds
 * none. */
static void check_buffers(const xdev_tp_t *tp, const ibv_peer_t *p)
{
    bool seen[NRX] = { false };
    for (unsigned i = 0; i < dev.nsrq; i++)
        mark(seen, dev.srq[i]);
    for (uint32_t i = 0; i < tp->nrepost; i++)
        mark(seen, tp->repost[i]);
    for (uint32_t b = p->pend_head; b; b = tp->bufs[b - 1].next)
        mark(seen, b - 1);
    for (int i = 0; i < NRX; i++)
        FUZZ_CHECK(seen[i]);
    if (p->state == PEER_DEAD)
        FUZZ_CHECK(!p->pend_head && p->in.state == XDEV_RXMSG_IDLE);
}

/* Does the core hold a message of p's back (UX_DEFERRED, p's token)? */
static bool core_defers(const xdev_t *d, const ibv_peer_t *p)
{
    for (const uxmsg_t *e = d->ux_head; e; e = e->next)
        if (e->state == UX_DEFERRED && e->token == p)
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    memset(&dev, 0, sizeof dev);
    dev.in = data;
    dev.left = size;
    xdev_tp_t *tp = tp_with_peer();
    fuzz_core_t fc;
    fuzz_core_open(&fc, ME, 2, &xdev_ibv_ops, tp);
    tp->dev = fc.dev;
    ibv_peer_t *p = &tp->peers[PEER];

    run(tp, &fc);
    fuzz_core_catch_up(&fc);
    run(tp, &fc);

    bool dead = p->state == PEER_DEAD;
    FUZZ_CHECK(dead == fc.dev->peers[PEER].dead && dead == dev.qp_error);
    FUZZ_CHECK(dead || !dev.broke);
    check_buffers(tp, p);
    FUZZ_CHECK(p->cr.avail >= 0 && (long)p->cr.avail + dev.sends <= (long)CREDITS + dev.granted);
    /* (unsigned: a count gone below zero wraps and breaks the sum) */
    FUZZ_CHECK((uint64_t)dev.returned + p->cr.owed + p->owed_unposted <= dev.filled);
    if (p->in.state != XDEV_RXMSG_IDLE)
        FUZZ_CHECK(p->in.got <= p->in.rx.len);
    /* it holds arrivals back only while the core defers one: else they
     * would wait for a resume that never comes */
    FUZZ_CHECK(dead || p->in.state != XDEV_RXMSG_DEFERRED || core_defers(fc.dev, p));
    fuzz_core_check(&fc, dev.delivered);

    xdev_ibv_ops.close(tp);
    fuzz_core_close(&fc);
    return 0;
}
