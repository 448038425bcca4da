/*
 * ofi.c - the libfabric transport: its ops table, open and close, the
 * completion-queue progress loop, losing a peer, and the goodbye at
 * shutdown. See ofi.h for the design.
 *
 * Shutdown: once nothing of ours is queued or in flight to a peer we have
 * exchanged anything with, it gets a BYE; we are done when every such
 * peer's BYE has come back (or it failed). Frames are ordered, so its BYE
 * means everything it sent us is in, and our BYE's completion that
 * everything we sent has left: closing the endpoint then cuts nothing off.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ofi.h"

#define CLOCK_EVERY 16 /* polls between looks at the (coarse) clock */

void ofi_service_later(xdev_tp_t *tp, ofi_peer_t *p)
{
    if (p->in_service)
        return;
    p->in_service = true;
    p->service_next = tp->service;
    tp->service = p;
}

/* p is gone: hand back what we queued for it, forget what it sent that
 * the core has not taken, then tell the core, once the provider has let
 * go of the caller's memory (ofi_tx_fail_all): the core fails every
 * request that involves p, and one whose buffer the provider still wrote
 * would be handed back with it. A region exposed for p to write into is
 * the provider's to serve p's writes for as long as p may run
 * (ofi_revoke_exposures), which no completion of ours reports: it is held
 * until p has had its time. (One p reads from: p cannot harm it.) */
void ofi_peer_fail_at(xdev_tp_t *tp, ofi_peer_t *p, const char *where, int line)
{
    if (p->failed)
        return;
    ofi_say("rank %d: peer %d failed (%s, ofi line %d)", tp->rank, p->rank, where, line);
    p->failed = true;
    p->failed_ms = xdev_now_ms();
    p->failed_polls = tp->polls;
    unsigned exposed = ofi_revoke_exposures(tp, p);
    p->held = ofi_tx_fail_all(tp, p) + exposed;
    ofi_rx_drop(tp, p);
    if (p->held)
        ofi_say("rank %d: %u messages and regions of peer %d wait for the provider", tp->rank,
                p->held, p->rank);
    else
        xdev_core_peer_failed(tp->dev, p->rank);
}

/* p said goodbye (it is in its xdev_finalize) and the core has all it
 * sent: it sends nothing more, as a closed connection says over tcp, so
 * the core fails what waits on it. Its finalize waits for our goodbye,
 * which goes now rather than at ours (ofi_shutdown waits for it to go). */
void ofi_peer_left(xdev_tp_t *tp, ofi_peer_t *p)
{
    if (!p->bye_sent)
        p->bye_sent = ofi_send_ctrl(tp, p, K_BYE);
    ofi_peer_fail(tp, p);
}

/* p sent a frame it could not have sent so, or one of its frames never
 * came. It lives, and would wait for ever for what we no longer answer,
 * as nothing more of its may reach us to be answered with K_GONE: tell it
 * now, as a closed connection tells a tcp peer. */
void ofi_peer_reject_at(xdev_tp_t *tp, ofi_peer_t *p, const char *where, int line)
{
    ofi_peer_fail_at(tp, p, where, line);
    ofi_tell_gone(tp, p);
}

/* The provider has let go of all it held for failed p; or it has had its
 * time (ofi_timers), and the rest is handed back regardless, since a
 * request must end. */
void ofi_peer_released(xdev_tp_t *tp, ofi_peer_t *p)
{
    if (p->held) {
        ofi_say("rank %d: the provider kept %u messages and regions of peer %d (%s)", tp->rank,
                p->held, p->rank, p->exited ? "it exited" : "past the peer timeout");
        ofi_tx_release_held(tp, p);
    }
    xdev_core_peer_failed(tp->dev, p->rank);
}

/* Peers that asked for attention outside a completion: a resumed payload,
 * more backlog, credits to return, posts the provider refused for now. */
static void run_service(xdev_tp_t *tp)
{
    ofi_peer_t *list = tp->service;
    tp->service = NULL;
    while (list) {
        ofi_peer_t *p = list;
        list = p->service_next;
        p->in_service = false;
        if (p->failed)
            continue;
        if (p->broken) {
            ofi_peer_fail(tp, p);
            continue;
        }
        ofi_rx_drain(tp, p);
        ofi_tx_flush(tp, p);
        ofi_rma_flush(tp, p);
        ofi_rx_owe_credits(tp, p);
    }
}

/* Which pool a completion's context came from. An error entry's flags
 * are no guide: a provider may leave them 0, and a receive buffer taken
 * for a send context would fail whichever peer its bytes happen to name. */
static bool is_rxbuf(const xdev_tp_t *tp, const void *ctx)
{
    const ofi_rxbuf_t *b = ctx;
    return b >= tp->rxbufs && b < tp->rxbufs + tp->nrxbufs;
}

static bool is_txctx(const xdev_tp_t *tp, const void *ctx)
{
    const ofi_ctx_t *c = ctx;
    return c >= tp->ctxs && c < tp->ctxs + tp->nctxs;
}

static void on_error(xdev_tp_t *tp)
{
    struct fi_cq_err_entry err;
    memset(&err, 0, sizeof err);
    if (fi_cq_readerr(tp->cq, &err, 0) != 1)
        return;
    ofi_say("error completion: %s (prov_errno %d), flags 0x%llx, %s", ofi_strerror(err.err),
            err.prov_errno, (unsigned long long)err.flags,
            is_rxbuf(tp, err.op_context)   ? "a receive buffer"
            : is_txctx(tp, err.op_context) ? "a send or rma"
                                           : "no context of ours");
    if (is_rxbuf(tp, err.op_context)) {
        /* Which peer it was filling is unknown; that peer's own sends
         * fail if it is gone. */
        ofi_rx_failed(tp, err.op_context);
    } else if (is_txctx(tp, err.op_context)) {
        ofi_tx_complete(tp, err.op_context, false);
    }
}

static void ofi_progress(xdev_tp_t *tp, bool woke)
{
    if (!tp->cq)
        return;
    struct fi_cq_msg_entry ev[OFI_RX_BATCH];
    for (int round = 0; round < 4; round++) {
        ssize_t n = fi_cq_read(tp->cq, ev, OFI_RX_BATCH);
        if (n == -FI_EAVAIL) {
            on_error(tp);
            continue;
        }
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n; i++) {
            if (ev[i].flags & FI_RECV)
                ofi_rx_arrived(tp, ev[i].op_context, ev[i].len);
            else
                ofi_tx_complete(tp, ev[i].op_context, true);
        }
        if (n < OFI_RX_BATCH)
            break;
    }
    if (tp->unposted)
        ofi_rx_repost_all(tp);
    run_service(tp);
    /* Counted in polls alone, an idle event loop would wait CLOCK_EVERY
     * of its ticks, 1.6 s, for a timer that is due (a peer's address not
     * yet published, pings). */
    if (++tp->polls % CLOCK_EVERY == 0 || woke) {
        uint64_t now = xdev_now_coarse_ms();
        tp->now_ms = now;
        if (now >= tp->next_timer_ms) {
            tp->next_timer_ms = now + OFI_RETRY_MS;
            ofi_timers(tp, now);
        }
    }
}

/* The completion queue's fd (FI_WAIT_FD), if the provider has one. */
static int ofi_wait_fd(xdev_tp_t *tp)
{
    return tp->wait_fd;
}

/* fi_trywait is libfabric's arm step: it fails while completions wait. */
static int ofi_arm(xdev_tp_t *tp)
{
    if (tp->wait_fd < 0)
        return XDEV_OK; /* the core sleeps in short ticks */
    if (tp->service || tp->unposted)
        return XDEV_ERR_BUSY;
    struct fid *f = &tp->cq->fid;
    return fi_trywait(tp->fabric, &f, 1) == FI_SUCCESS ? XDEV_OK : XDEV_ERR_BUSY;
}

static void ofi_watch(xdev_tp_t *tp, int peer)
{
    ofi_peer_t *p = &tp->peers[peer];
    if (p->watched)
        return;
    p->watched = true;
    p->last_heard_ms = xdev_now_ms();
    if (!p->give_up_ms)
        p->give_up_ms = p->last_heard_ms + (uint64_t)tp->peer_timeout_ms;
}

static int ofi_shutdown(xdev_tp_t *tp)
{
    tp->shutting_down = true;
    bool done = true;
    for (int r = 0; r < tp->size; r++) {
        ofi_peer_t *p = &tp->peers[r];
        if (p->failed && p->bye_rx && p->nctl) /* our goodbye to a peer that left */
            done = false;
        if (!tp->serve[r] || p->failed || !p->active)
            continue;
        if (p->txq.head || p->inflight) {
            done = false;
        } else if (!p->bye_sent) {
            p->bye_sent = ofi_send_ctrl(tp, p, K_BYE);
            done = false;
        } else if (!p->bye_done || !p->bye_rx) {
            done = false;
        }
    }
    return done;
}

static void ofi_close(xdev_tp_t *tp)
{
    if (!tp)
        return;
    for (int r = 0; r < tp->size && tp->peers && tp->serve; r++) {
        ofi_peer_t *p = &tp->peers[r];
        if (!tp->serve[r])
            continue;
        p->failed = true; /* sends from inside tx_done now fail at once */
        ofi_tx_fail_all(tp, p);
        ofi_tx_release_held(tp, p);
    }
    if (tp->ep)
        fi_close(&tp->ep->fid); /* first: nothing completes after it */
    tp->ep = NULL;
    ofi_mem_release_all(tp);
    for (int r = 0; r < tp->size && tp->peers; r++) {
        ofi_peer_t *p = &tp->peers[r];
        while (p->inflight)
            ofi_msg_free(tp, p, p->inflight);
        if (p->pidfd >= 0)
            close(p->pidfd);
    }
    xdev_regcache_close(tp->regcache); /* its registrations before the domain */
    ofi_fabric_close(tp);
    ofi_rx_pool_close(tp);
    free(tp->ctxs);
    free(tp->peers);
    free(tp->serve);
    free(tp);
}

/* Receive buffers: a share of the pool budget per peer, within bounds. */
static void size_pools(xdev_tp_t *tp, int npeers)
{
    tp->credits = xdev_credits_window(OFI_POOL_BUDGET / sizeof(ofi_rxbuf_t), npeers,
                                      OFI_CTRL_RESERVE, OFI_CREDITS_MIN, OFI_CREDITS_MAX);
    tp->nrxbufs = (size_t)npeers * (size_t)(tp->credits + OFI_CTRL_RESERVE);
    tp->nctxs = (size_t)npeers * (size_t)(tp->credits + 4) + 64;
}

static int open_ctxs(xdev_tp_t *tp)
{
    tp->ctxs = calloc(tp->nctxs, sizeof *tp->ctxs);
    if (!tp->ctxs)
        return XDEV_ERR_NOMEM;
    for (size_t i = 0; i < tp->nctxs; i++)
        ofi_ctx_put(tp, &tp->ctxs[i]);
    if ((tp->mr_mode & FI_MR_LOCAL) &&
        ofi_mr_local(tp, tp->ctxs, tp->nctxs * sizeof *tp->ctxs, FI_SEND, &tp->ctx_mr) != XDEV_OK)
        return XDEV_ERR_INIT;
    tp->ctx_desc = ofi_mr_desc(tp->ctx_mr);
    return XDEV_OK;
}

static int ofi_open(xdev_t *dev, const xdev_tp_params_t *params, xdev_tp_t **out)
{
    /* An explicit peer table holds tcp addresses, not endpoint names. */
    if (params->peers || xdev_opt_flag(dev, "XDEV_OFI_VERBOSE", &ofi_verbose) != XDEV_OK)
        return XDEV_ERR_INIT;
    xdev_tp_t *tp = calloc(1, sizeof *tp);
    if (!tp)
        return XDEV_ERR_NOMEM;
    tp->dev = dev;
    tp->rank = params->rank;
    tp->size = params->size;
    tp->eager_limit = params->eager_limit;
    tp->peer_timeout_ms = params->peer_timeout_ms;
    tp->wait_fd = -1;
    tp->peers = calloc((size_t)params->size, sizeof *tp->peers);
    tp->serve = calloc((size_t)params->size, sizeof *tp->serve);
    if (!tp->peers || !tp->serve) {
        ofi_close(tp);
        return XDEV_ERR_NOMEM;
    }
    int npeers = 0;
    for (int r = 0; r < params->size; r++) {
        tp->serve[r] = params->serve[r] && r != params->rank;
        npeers += tp->serve[r];
        tp->peers[r].rank = r;
        tp->peers[r].pidfd = -1;
        tp->peers[r].failed = params->gone && params->gone[r]; /* told by K_GONE */
    }
    int rc = XDEV_OK;
    if (npeers) {
        size_pools(tp, npeers);
        for (int r = 0; r < params->size; r++)
            tp->peers[r].cr.avail = tp->credits;
        rc = ofi_fabric_open(tp, params->job_id);
        if (rc == XDEV_OK && (rc = ofi_regcache_open(tp)) != XDEV_OK)
            ofi_say("the registration cache could not open (XDEV_REGCACHE)");
        if (rc == XDEV_OK && (rc = open_ctxs(tp)) != XDEV_OK)
            ofi_say("registering the send contexts failed");
        if (rc == XDEV_OK && (rc = ofi_rx_pool_open(tp)) != XDEV_OK)
            ofi_say("posting %zu receive buffers failed", tp->nrxbufs);
        if (rc == XDEV_OK && (rc = ofi_addr_publish(tp)) != XDEV_OK)
            ofi_say("publishing the endpoint name failed");
    }
    if (rc != XDEV_OK) {
        ofi_close(tp);
        return rc;
    }
    tp->now_ms = xdev_now_coarse_ms();
    *out = tp;
    return XDEV_OK;
}

const xdev_tp_ops_t xdev_ofi_ops = {
    .name = "ofi",
    .open = ofi_open,
    .send = ofi_send,
    .short_max = ofi_short_max,
    .progress = ofi_progress,
    .wait_fd = ofi_wait_fd,
    .arm = ofi_arm,
    .resume = ofi_resume,
    .watch = ofi_watch,
    .rndz_mode = ofi_rndz_mode,
    .mem_expose = ofi_mem_expose,
    .mem_release = ofi_mem_release,
    .rma = ofi_rma,
    .fast_network = ofi_fast_network,
    .info = ofi_info,
    .shutdown = ofi_shutdown,
    .close = ofi_close,
};
