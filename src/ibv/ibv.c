/*
 * ibv.c - the ibv transport's ops table: opening the device and its shared
 * resources, the progress loop, sleeping, finalize. See ibv.h.
 *
 * Sizes (environment): XDEV_IBV_BUF (bytes per eager buffer, default
 * 16 KiB), XDEV_IBV_RX_BUFS (receive buffers the peers' credit windows
 * share, default 256; the SRQ holds what the windows can fill: 66 for one
 * peer, and more than 256 only once each would get fewer than 3),
 * XDEV_IBV_TX_BUFS (send buffers, default 64). Dead peers: XDEV_IBV_PIDFD
 * (default 1: watch peers on this host through a pidfd) and
 * XDEV_IBV_KEEPALIVE_MS (default 2000, 0 for none; see ibv_qp.c).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <fcntl.h>
#include <unistd.h>
#include "ibv.h"

#define DEFAULT_BUF (16 * 1024)
#define DEFAULT_RX_BUFS 256
#define DEFAULT_TX_BUFS 64
#define MAX_CREDITS 64
#define MIN_CREDITS 1
#define GRANT_SLACK 2      /* credit-only messages a peer may have in flight */
#define INLINE_WANT 256
#define POLL_BATCH 32
#define POLL_ROUNDS 8      /* batches a poll takes at most */
#define TIMER_MS 1
#define DEFAULT_KEEPALIVE_MS 2000

int ibv_debug;

static int setup_pool(xdev_tp_t *tp)
{
    size_t buf = DEFAULT_BUF, rx = DEFAULT_RX_BUFS, tx = DEFAULT_TX_BUFS;
    if (xdev_opt_size(tp->dev, "XDEV_IBV_BUF", &buf) ||
        xdev_opt_size(tp->dev, "XDEV_IBV_RX_BUFS", &rx) ||
        xdev_opt_size(tp->dev, "XDEV_IBV_TX_BUFS", &tx))
        return XDEV_ERR_INIT;
    int npeers = tp->size - 1;
    /* Every peer's credits plus its credit-only messages fit on the SRQ,
     * and no more are posted: the SRQ hands out buffers in the order they
     * were posted, so each extra one only lengthens the round that a
     * buffer makes before it is filled again. */
    int credits = xdev_credits_window(rx, npeers, GRANT_SLACK, MIN_CREDITS, MAX_CREDITS);
    tp->credits = credits;
    tp->nrx = (uint32_t)npeers * (uint32_t)(credits + GRANT_SLACK);
    if (tp->nrx > (uint32_t)tp->d.attr.max_srq_wr)
        return XDEV_ERR_INIT;
    tp->ntx = (uint32_t)tx;
    tp->buf_bytes = buf;
    size_t total = (size_t)(tp->nrx + tp->ntx) * buf;
    tp->pool = aligned_alloc(4096, (total + 4095) & ~(size_t)4095);
    tp->bufs = calloc(tp->nrx + tp->ntx, sizeof *tp->bufs);
    tp->repost = calloc(tp->nrx, sizeof *tp->repost);
    tp->dirty = calloc((size_t)tp->size, sizeof *tp->dirty);
    if (!tp->pool || !tp->bufs || !tp->repost || !tp->dirty)
        return XDEV_ERR_NOMEM;
    tp->pool_mr = ibv_reg_mr(tp->pd, tp->pool, total, IBV_ACCESS_LOCAL_WRITE);
    tp->ka_mr = ibv_reg_mr(tp->pd, &tp->ka_slot, sizeof tp->ka_slot,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!tp->pool_mr || !tp->ka_mr)
        return XDEV_ERR_SYSTEM;
    for (uint32_t i = tp->nrx; i < tp->nrx + tp->ntx; i++) {
        tp->bufs[i].next = tp->tx_free;
        tp->tx_free = i + 1;
    }
    return XDEV_OK;
}

/* How much a send can carry inline: ask for INLINE_WANT on a probe QP and
 * keep what the device grants (0 if it refuses inline altogether). */
static void probe_inline(xdev_tp_t *tp)
{
    uint32_t want[2] = { INLINE_WANT, 0 };
    for (int i = 0; i < 2; i++) {
        struct ibv_qp_init_attr ia = {
            .send_cq = tp->cq, .recv_cq = tp->cq, .srq = tp->srq,
            .cap = { .max_send_wr = tp->sq_depth, .max_send_sge = 2, .max_inline_data = want[i] },
            .qp_type = IBV_QPT_RC,
        };
        struct ibv_qp *qp = ibv_create_qp(tp->pd, &ia);
        if (qp) {
            tp->max_inline = ia.cap.max_inline_data;
            ibv_destroy_qp(qp);
            return;
        }
    }
}

static int setup_queues(xdev_tp_t *tp)
{
    int npeers = tp->size - 1;
    tp->sq_depth = (uint32_t)tp->credits + GRANT_SLACK + 32;
    if (tp->sq_depth > (uint32_t)tp->d.attr.max_qp_wr)
        tp->sq_depth = (uint32_t)tp->d.attr.max_qp_wr;
    int cqe = (int)tp->nrx + npeers * (int)tp->sq_depth;
    if (cqe > tp->d.attr.max_cqe)
        cqe = tp->d.attr.max_cqe;
    tp->chan = ibv_create_comp_channel(tp->d.ctx);
    if (!tp->chan)
        return XDEV_ERR_SYSTEM;
    fcntl(tp->chan->fd, F_SETFL, fcntl(tp->chan->fd, F_GETFL) | O_NONBLOCK);
    tp->cq = ibv_create_cq(tp->d.ctx, cqe, NULL, tp->chan, 0);
    struct ibv_srq_init_attr sa = { .attr = { .max_wr = tp->nrx, .max_sge = 1 } };
    tp->srq = tp->cq ? ibv_create_srq(tp->pd, &sa) : NULL;
    if (!tp->srq)
        return XDEV_ERR_SYSTEM;
    probe_inline(tp);
    struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0 };
    if (epoll_ctl(tp->epfd, EPOLL_CTL_ADD, tp->chan->fd, &ev))
        return XDEV_ERR_SYSTEM;
    uint32_t slots = 4;
    while (slots < 2u * (uint32_t)tp->size)
        slots *= 2;
    tp->qpn_table = calloc(slots, sizeof *tp->qpn_table);
    tp->qpn_mask = slots - 1;
    return tp->qpn_table ? XDEV_OK : XDEV_ERR_NOMEM;
}

static void ibv_tp_close(xdev_tp_t *tp)
{
    if (!tp)
        return;
    for (int p = 0; tp->peers && p < tp->size; p++) {
        ibv_fail_queue(tp, p);
        ibv_peer_close(tp, &tp->peers[p]);
    }
    if (tp->regcache)
        ibv_rma_close(tp);
    if (tp->srq)
        ibv_destroy_srq(tp->srq);
    if (tp->cq)
        ibv_destroy_cq(tp->cq);
    if (tp->chan)
        ibv_destroy_comp_channel(tp->chan);
    if (tp->pool_mr)
        ibv_dereg_mr(tp->pool_mr);
    if (tp->ka_mr)
        ibv_dereg_mr(tp->ka_mr);
    if (tp->pd)
        ibv_dealloc_pd(tp->pd);
    ibv_dev_release(&tp->d);
    if (tp->epfd >= 0)
        close(tp->epfd);
    free(tp->pool);
    free(tp->bufs);
    free(tp->repost);
    free(tp->dirty);
    free(tp->qpn_table);
    free(tp->peers);
    free(tp);
}

static int ibv_tp_open(xdev_t *dev, const xdev_tp_params_t *prm, xdev_tp_t **out)
{
    xdev_tp_t *tp = calloc(1, sizeof *tp);
    if (!tp)
        return XDEV_ERR_NOMEM;
    tp->dev = dev;
    bool debug = false, pidfd = true;
    size_t ka = DEFAULT_KEEPALIVE_MS;
    int rc_opt = XDEV_OK;
    if (xdev_opt_flag(dev, "XDEV_IBV_DEBUG", &debug) || xdev_opt_flag(dev, "XDEV_IBV_PIDFD", &pidfd) ||
        xdev_opt_size(dev, "XDEV_IBV_KEEPALIVE_MS", &ka))
        rc_opt = XDEV_ERR_INIT;
    ibv_debug = debug;
    tp->rank = prm->rank;
    tp->size = prm->size;
    tp->eager_limit = prm->eager_limit;
    tp->peer_timeout_ms = prm->peer_timeout_ms;
    tp->scan_ms = 1;
    tp->unsettled = prm->size > 1 ? (unsigned)prm->size - 1 : 0;
    tp->use_pidfd = pidfd;
    tp->keepalive_ms = (unsigned)ka;
    tp->epfd = epoll_create1(EPOLL_CLOEXEC);
    tp->peers = calloc((size_t)prm->size, sizeof *tp->peers);
    int rc = tp->epfd < 0 ? XDEV_ERR_SYSTEM : !tp->peers ? XDEV_ERR_NOMEM : rc_opt;
    for (int i = 0; tp->peers && i < prm->size; i++)
        tp->peers[i].pidfd = -1;
    if (prm->size > 1 && rc == XDEV_OK) {
        /* QP addresses travel through the bootstrap directory; an explicit
         * peer table has no room for them. */
        if (prm->peers)
            rc = XDEV_ERR_INIT;
        if (rc == XDEV_OK)
            rc = ibv_dev_choose(dev, &tp->d);
        if (rc == XDEV_OK && !(tp->pd = ibv_alloc_pd(tp->d.ctx)))
            rc = XDEV_ERR_SYSTEM;
        if (rc == XDEV_OK)
            rc = setup_pool(tp);
        if (rc == XDEV_OK)
            rc = setup_queues(tp);
        if (rc == XDEV_OK)
            rc = ibv_rx_init(tp);
        if (rc == XDEV_OK)
            rc = ibv_rma_init(tp);
        xdev_host_token(tp->host, sizeof tp->host, (const char *const[]){ "pid" }, 1);
    }
    if (rc != XDEV_OK) {
        IBV_TRACE(tp, "open failed (%d)", rc);
        ibv_tp_close(tp);
        return rc;
    }
    IBV_TRACE(tp, "%s port %u gid %d%s, %u rx bufs of %zu, %d credits, inline %u, rd_atom %d, "
              "regcache %s",
              tp->size > 1 ? ibv_get_device_name(tp->d.ctx->device) : "-", tp->d.port,
              tp->d.gid_index, tp->d.roce ? " (RoCE)" : "", tp->nrx, tp->buf_bytes, tp->credits,
              tp->max_inline, tp->d.attr.max_qp_rd_atom,
              tp->regcache && xdev_regcache_mode(tp->regcache) ? "uffd" : "off");
    *out = tp;
    return XDEV_OK;
}

/* Sleep support: the CQ channel and the pidfds. A CQ event must be asked
 * for again after each one, and completions that came before the asking
 * raise none: so arm asks and says "poll once more" (busy); the next arm,
 * with the CQ drained after asking, can sleep. Returns the events taken. */
static int take_events(xdev_tp_t *tp)
{
    struct epoll_event ev[16];
    int n = epoll_wait(tp->epfd, ev, 16, 0);
    for (int i = 0; i < n; i++) {
        uint32_t who = ev[i].data.u32;
        if (who == 0) {
            struct ibv_cq *cq;
            void *ctx;
            if (ibv_get_cq_event(tp->chan, &cq, &ctx) == 0) {
                ibv_ack_cq_events(cq, 1);
                tp->cq_armed = false;
            }
        } else if (who <= (uint32_t)tp->size) {
            ibv_peer_t *p = &tp->peers[who - 1];
            p->exited = true;
            epoll_ctl(tp->epfd, EPOLL_CTL_DEL, p->pidfd, NULL);
        }
    }
    return n > 0 ? n : 0;
}

/* Take what completed, batch by batch until one is not full or `rounds`
 * have been taken; true if anything arrived. */
static bool poll_cq(xdev_tp_t *tp, int rounds)
{
    struct ibv_wc wc[POLL_BATCH];
    bool received = false;
    for (int round = 0; round < rounds; round++) {
        int n = ibv_poll_cq(tp->cq, POLL_BATCH, wc);
        for (int i = 0; i < n; i++) {
            unsigned kind = wr_kind_of(wc[i].wr_id);
            if (kind == WR_RECV) {
                ibv_rx_completion(tp, &wc[i]);
                received = true;
            } else if (kind == WR_RMA) {
                ibv_rma_completion(tp, &wc[i]);
            } else {
                ibv_tx_completion(tp, &wc[i]);
            }
        }
        if (n < POLL_BATCH)
            break;
    }
    return received;
}

static void ibv_tp_progress(xdev_tp_t *tp, bool woke)
{
    if (tp->size < 2)
        return;
    ibv_rx_service(tp);
    /* Used buffers go back on the SRQ from a poll that received nothing
     * (or at once where they may not wait: ibv_rx.c's release). One that
     * received may have handed the core a message its caller is about to
     * answer; the repost, two thirds of a whole send in instructions,
     * waits for the idle polls that follow the answer. */
    if (!poll_cq(tp, POLL_ROUNDS) || tp->repost_now)
        ibv_rx_repost(tp);
    ibv_tx_run(tp);
    /* The coarse clock, read every 64th poll or after a sleep, is fine
     * enough for timers (connections, exits, keepalives). The precise one
     * may be a system call reading a device: in a VM whose clock source
     * is the HPET it was a tenth of the polling loop's time. */
    if (!woke && !tp->timer_due && (++tp->polls & 63))
        return;
    tp->timer_due = false;
    uint64_t now = xdev_now_coarse_ms();
    if (now >= tp->next_timer_ms) {
        tp->next_timer_ms = now + TIMER_MS;
        take_events(tp);
        /* A peer's last messages were in our CQ before its exit could be
         * seen, but a poll takes at most POLL_ROUNDS batches, and what is
         * left of a peer judged gone is dropped: take everything first.
         * (Found by random traffic over rxe: a 4-rank job lost a message
         * of a rank that had finalized and exited.) */
        if (ibv_exits_unjudged(tp))
            poll_cq(tp, INT_MAX);
        ibv_check_exits(tp);
        if (tp->unsettled)
            ibv_connect_timers(tp, now);
        ibv_keepalive(tp, now);
    }
}

/* The vendor ids the kernel's software RDMA drivers report: rxe's and
 * siw's ("bmt"). They run over the host's ordinary network stack, where
 * tcp is as fast and needs no setup. */
#define SOFT_RXE_VENDOR 0xffffff
#define SOFT_SIW_VENDOR 0x626d74

/* auto sends to other hosts over ibv where this host has an active port
 * on an RDMA adapter (not a software emulation of one). */
static bool ibv_fast_network(const xdev_t *dev)
{
    ibv_device_choice_t d;
    if (ibv_dev_choose(dev, &d) != XDEV_OK)
        return false;
    bool hardware = d.attr.vendor_id != SOFT_RXE_VENDOR && d.attr.vendor_id != SOFT_SIW_VENDOR;
    ibv_dev_release(&d);
    return hardware;
}

static int ibv_tp_wait_fd(xdev_tp_t *tp)
{
    return tp->size < 2 ? -1 : tp->epfd;
}

static int ibv_tp_arm(xdev_tp_t *tp)
{
    if (tp->size < 2)
        return XDEV_OK;
    ibv_rx_repost(tp); /* none held back while we sleep: peers wait on them */
    bool events = take_events(tp) > 0;
    tp->next_timer_ms = 0; /* look at the events as soon as we wake */
    if (!tp->cq_armed) {
        ibv_req_notify_cq(tp->cq, 0);
        tp->cq_armed = true;
        return XDEV_ERR_BUSY;
    }
    /* Held arrivals to deliver, or an exit just taken: no sleeping.
     * (Queued sends can wait: only a completion, which wakes us, gives
     * them credits or buffers.) */
    return events || tp->service ? XDEV_ERR_BUSY : XDEV_OK;
}

static void ibv_tp_watch(xdev_tp_t *tp, int peer)
{
    ibv_want_peer(tp, peer);
}

/* Finalize: done once every queued send has left and been acknowledged;
 * a peer notices our exit through its pidfd or its next send. */
static int ibv_tp_shutdown(xdev_tp_t *tp)
{
    tp->shutting_down = true;
    return tp->size < 2 || ibv_tx_idle(tp);
}

/* The short tier is one post: inline, or one send buffer, which holds
 * the frame's prefix and an eager head too. */
static size_t ibv_short_max(xdev_tp_t *tp)
{
    return tp->buf_bytes - IBV_PREFIX - xdev_wire_head_len(XDEV_MSG_EAGER);
}

const xdev_tp_ops_t xdev_ibv_ops = {
    .name = "ibv",
    .publishes_late = true,
    .open = ibv_tp_open,
    .send = ibv_send,
    .short_max = ibv_short_max,
    .progress = ibv_tp_progress,
    .wait_fd = ibv_tp_wait_fd,
    .arm = ibv_tp_arm,
    .info = ibv_info,
    .fast_network = ibv_fast_network,
    .resume = ibv_resume,
    .watch = ibv_tp_watch,
    .rndz_mode = ibv_rndz_mode,
    .mem_expose = ibv_mem_expose,
    .mem_release = ibv_mem_release,
    .rma = ibv_rma,
    .shutdown = ibv_tp_shutdown,
    .close = ibv_tp_close,
};
