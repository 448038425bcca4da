/*
 * ibv_qp.c - one RC queue pair per peer, connected on first use, and
 * noticing that a peer is gone.
 *
 * RC needs each side's QP number, PSN and address (LID, or GID on RoCE)
 * before either may send, and a packet that reaches a QP not yet ready to
 * receive is dropped (the sender's retries then run against a clock). So
 * no rank sends before it knows the peer's QP is ready for it. The
 * exchange goes through the bootstrap, one key per ordered pair: rank r
 * publishes "ibv-<p>" for peer p, first when its QP for p exists ("not
 * ready"), again once that QP is ready to receive from p ("ready").
 *
 *   wanting side:  create QP, publish not-ready, poll for the peer's key
 *   other side:    finds our key by a periodic look (backing off to 20 ms
 *                  while nothing new shows up), creates its QP, brings it
 *                  to ready with our address, publishes ready
 *   wanting side:  finds the peer's key, brings its QP to ready, publishes
 *                  ready; the peer's key already says ready: send
 *   other side:    sends once it sees our key say ready, or once anything
 *                  arrives from us (which proves it)
 *
 * Both wanting at once works the same way: each sees the other's not-ready
 * key, goes ready, republishes, and sends once the other has. No tie-break
 * is needed, as there is exactly one QP per peer on each side.
 *
 * A dead peer: a send to it fails with an error completion (retries
 * exhausted: a few seconds at most with the timeout set below). A peer on
 * this host that dies while we only wait for it is noticed through a pidfd
 * (it published its pid and host identity), so a receive from it fails at
 * once, without any traffic. Its last messages were completed (acked) into
 * our CQ before it exited, so they are delivered before it is declared
 * dead. A peer on another host (or any, with XDEV_IBV_PIDFD=0) that we
 * talked to but hear nothing from gets a keepalive every
 * XDEV_IBV_KEEPALIVE_MS: an 8-byte RDMA write into a slot the peer
 * published, which completes in error once retries to a QP that is gone
 * run out (and, unlike a send, uses none of the peer's receive buffers
 * while the peer is busy elsewhere).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include "ibv.h"

#define KEY_MAX 512
#define SCAN_MIN_MS 1
#define SCAN_MAX_MS 20
#define ACK_TIMEOUT 16  /* 4.096 us * 2^16 = 268 ms per try */
#define RETRY_COUNT 6   /* 7 would be "forever" on rxe, as rnr_retry 7 is everywhere */
#define RNR_RETRY 7     /* "forever"; credits keep the SRQ from running dry */
#define MAX_RD_ATOM 16

/* ---- qpn -> peer ---- */

static uint32_t qpn_slot(uint32_t qpn) { return qpn * 2654435761u; }

static void qpn_add(xdev_tp_t *tp, uint32_t qpn, int peer)
{
    uint32_t i = qpn_slot(qpn) & tp->qpn_mask;
    while (tp->qpn_table[i])
        i = (i + 1) & tp->qpn_mask;
    tp->qpn_table[i] = (uint32_t)peer + 1;
}

int ibv_peer_of_qpn(xdev_tp_t *tp, uint32_t qpn)
{
    for (uint32_t i = qpn_slot(qpn) & tp->qpn_mask; tp->qpn_table[i]; i = (i + 1) & tp->qpn_mask) {
        int peer = (int)tp->qpn_table[i] - 1;
        if (tp->peers[peer].qp && tp->peers[peer].qp->qp_num == qpn)
            return peer;
    }
    return -1;
}

/* ---- the bootstrap exchange ---- */

static void key_name(char *out, size_t cap, int peer)
{
    snprintf(out, cap, "ibv-%d", peer);
}

/* Write our key for the peer. Short of descriptors, we owe it instead,
 * which is no failure of the peer: the timers write it later. */
static int publish(xdev_tp_t *tp, int peer, bool ready)
{
    ibv_peer_t *p = &tp->peers[peer];
    char key[32], v[KEY_MAX], gid[33];
    for (int i = 0; i < 16; i++)
        snprintf(gid + 2 * i, 3, "%02x", tp->d.gid.raw[i]);
    key_name(key, sizeof key, peer);
    snprintf(v, sizeof v, "%" PRIu32 " %" PRIu32 " %u %s %u %u %zu %ld %d %" PRIx64 " %" PRIu32 " %s",
             p->qp->qp_num,
             p->psn, (unsigned)tp->d.lid, gid, (unsigned)tp->d.mtu,
             (unsigned)(tp->d.attr.max_qp_rd_atom < MAX_RD_ATOM ? tp->d.attr.max_qp_rd_atom
                                                                 : MAX_RD_ATOM),
             tp->eager_limit, (long)getpid(), ready ? 1 : 0, (uint64_t)(uintptr_t)&tp->ka_slot,
             tp->ka_mr->rkey, tp->host);
    int rc = xdev_boot_publish(tp->dev, key, v);
    p->publish_owed = rc == XDEV_ERR_NOMEM;
    return p->publish_owed ? XDEV_OK : rc;
}

/* 1: the peer's key for us is there (in a); 0: not yet; <0: unusable. */
static int lookup(xdev_tp_t *tp, int peer, ibv_addr_t *a)
{
    char key[32], v[KEY_MAX], gid[33];
    key_name(key, sizeof key, tp->rank);
    int rc = xdev_boot_lookup(tp->dev, peer, key, v, sizeof v);
    if (rc <= 0)
        return rc == XDEV_ERR_NOMEM ? 0 : rc;
    int ready;
    if (sscanf(v, "%" SCNu32 " %" SCNu32 " %hu %32s %u %u %" SCNu64 " %ld %d %" SCNx64 " %" SCNu32
                  " %127s", &a->qpn, &a->psn, &a->lid, gid, &a->mtu, &a->rd_atom, &a->eager_limit,
               &a->pid, &ready, &a->ka_addr, &a->ka_rkey, a->host) != 12 || strlen(gid) != 32)
        return XDEV_ERR_PEER;
    for (int i = 0; i < 16; i++) {
        unsigned b;
        if (sscanf(gid + 2 * i, "%2x", &b) != 1)
            return XDEV_ERR_PEER;
        a->gid.raw[i] = (uint8_t)b;
    }
    a->ready = ready == 1;
    return 1;
}

/* ---- QP states ---- */

static int qp_create(xdev_tp_t *tp, int peer)
{
    ibv_peer_t *p = &tp->peers[peer];
    struct ibv_qp_init_attr ia = {
        .send_cq = tp->cq,
        .recv_cq = tp->cq,
        .srq = tp->srq,
        .cap = { .max_send_wr = tp->sq_depth, .max_send_sge = 2,
                 .max_inline_data = tp->max_inline },
        .qp_type = IBV_QPT_RC,
        .sq_sig_all = 0,
    };
    p->qp = ibv_create_qp(tp->pd, &ia);
    if (!p->qp)
        return XDEV_ERR_SYSTEM;
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_INIT,
        .pkey_index = 0,
        .port_num = tp->d.port,
        .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ,
    };
    if (ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                     IBV_QP_ACCESS_FLAGS)) {
        ibv_destroy_qp(p->qp);
        p->qp = NULL;
        return XDEV_ERR_SYSTEM;
    }
    p->psn = (uint32_t)(xdev_auth_nonce() & 0xffffff);
    p->cr = (xdev_credits_t){ .avail = tp->credits };
    qpn_add(tp, p->qp->qp_num, peer);
    return XDEV_OK;
}

static int qp_ready(xdev_tp_t *tp, ibv_peer_t *p, const ibv_addr_t *r)
{
    unsigned my_rd = tp->d.attr.max_qp_rd_atom < MAX_RD_ATOM ? (unsigned)tp->d.attr.max_qp_rd_atom
                                                             : MAX_RD_ATOM;
    struct ibv_qp_attr a = {
        .qp_state = IBV_QPS_RTR,
        .path_mtu = r->mtu < (unsigned)tp->d.mtu ? (enum ibv_mtu)r->mtu : tp->d.mtu,
        .dest_qp_num = r->qpn,
        .rq_psn = r->psn,
        .max_dest_rd_atomic = (uint8_t)my_rd,
        .min_rnr_timer = 12,
        .ah_attr = { .dlid = r->lid, .sl = 0, .port_num = tp->d.port },
    };
    if (tp->d.roce || !r->lid) {
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = r->gid;
        a.ah_attr.grh.sgid_index = (uint8_t)tp->d.gid_index;
        a.ah_attr.grh.hop_limit = 64;
    }
    if (ibv_modify_qp(p->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                     IBV_QP_MIN_RNR_TIMER))
        return XDEV_ERR_PEER;
    unsigned init_rd = (unsigned)tp->d.attr.max_qp_init_rd_atom;
    p->rd_max = init_rd < r->rd_atom ? init_rd : r->rd_atom;
    if (!p->rd_max)
        p->rd_max = 1;
    struct ibv_qp_attr s = {
        .qp_state = IBV_QPS_RTS,
        .timeout = ACK_TIMEOUT,
        .retry_cnt = RETRY_COUNT,
        .rnr_retry = RNR_RETRY,
        .sq_psn = p->psn,
        .max_rd_atomic = (uint8_t)p->rd_max,
    };
    if (ibv_modify_qp(p->qp, &s, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
        return XDEV_ERR_PEER;
    return XDEV_OK;
}

/* Watch the peer's process if it runs on this host. */
static int watch_pid(xdev_tp_t *tp, int peer, const ibv_addr_t *r)
{
    ibv_peer_t *p = &tp->peers[peer];
    if (!tp->use_pidfd || strcmp(r->host, tp->host) || r->pid <= 0 || p->pidfd >= 0)
        return XDEV_OK;
    int fd = xdev_pidfd_open((int)r->pid);
    if (fd < 0) /* no pidfds: errors and keepalives only */
        return xdev_process_gone((int)r->pid) ? XDEV_ERR_PEER : XDEV_OK;
    struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)peer + 1 };
    epoll_ctl(tp->epfd, EPOLL_CTL_ADD, fd, &ev);
    p->pidfd = fd;
    return XDEV_OK;
}

static void settle(xdev_tp_t *tp, ibv_peer_t *p)
{
    if (!p->settled && (p->state == PEER_DEAD ||
                        (p->state == PEER_UP && p->remote_ready && !p->publish_owed))) {
        p->settled = true;
        tp->unsettled--;
    }
}

/* The peer's QP accepts our sends (its key says so, or it sent to us). */
void ibv_peer_remote_ready(xdev_tp_t *tp, ibv_peer_t *p)
{
    p->remote_ready = true;
    settle(tp, p);
    ibv_tx_kick(tp, p);
}

static void set_state(xdev_tp_t *tp, ibv_peer_t *p, int state)
{
    if (p->state == PEER_CONNECTING)
        tp->nconnecting--;
    if (p->state == PEER_UP)
        tp->nup--;
    p->state = (uint8_t)state;
    if (state == PEER_CONNECTING)
        tp->nconnecting++;
    if (state == PEER_UP)
        tp->nup++;
    settle(tp, p);
}

/* We know the peer's address: ready our QP and say so. */
static void peer_up(xdev_tp_t *tp, int peer, const ibv_addr_t *r)
{
    ibv_peer_t *p = &tp->peers[peer];
    int rc = p->qp ? XDEV_OK : qp_create(tp, peer);
    if (rc == XDEV_OK && (rc = qp_ready(tp, p, r)) != XDEV_OK)
        IBV_TRACE(tp, "peer %d: cannot ready our QP: %s", peer, strerror(errno));
    if (rc == XDEV_OK)
        rc = watch_pid(tp, peer, r);
    if (rc == XDEV_OK)
        rc = publish(tp, peer, true);
    IBV_TRACE(tp, "peer %d: qpn %u -> its qpn %u, lid %u, pid %ld%s: %s", peer,
              p->qp ? p->qp->qp_num : 0, r->qpn, r->lid, r->pid, r->ready ? " (ready)" : "",
              rc == XDEV_OK ? "ready" : "failed");
    if (rc != XDEV_OK) {
        ibv_peer_fail(tp, peer);
        return;
    }
    xdev_core_peer_eager_limit(tp->dev, peer, (size_t)r->eager_limit);
    p->ka_addr = r->ka_addr;
    p->ka_rkey = r->ka_rkey;
    set_state(tp, p, PEER_UP);
    if (r->ready)
        ibv_peer_remote_ready(tp, p);
}

void ibv_want_peer(xdev_tp_t *tp, int peer)
{
    ibv_peer_t *p = &tp->peers[peer];
    if (p->wanted || p->state == PEER_DEAD)
        return;
    p->wanted = true;
    p->give_up_ms = xdev_now_coarse_ms() + (uint64_t)tp->peer_timeout_ms;
    if (p->state != PEER_IDLE)
        return;
    /* Failures surface from the next progress call, never from here. */
    if (qp_create(tp, peer) == XDEV_OK && publish(tp, peer, false) == XDEV_OK)
        set_state(tp, p, PEER_CONNECTING);
    else
        p->give_up_ms = 0;
    IBV_TRACE(tp, "peer %d: wanted, qpn %u published", peer, p->qp ? p->qp->qp_num : 0);
    tp->next_scan_ms = 0;
    tp->scan_ms = SCAN_MIN_MS;
    tp->next_timer_ms = 0; /* within the coarse clock's tick too */
    tp->timer_due = true;
}

/* Move every connection along: ours that wait for the peer, and peers
 * that want us (found by looking for their keys, with a backoff). */
void ibv_connect_timers(xdev_tp_t *tp, uint64_t now)
{
    bool scan_idle = now >= tp->next_scan_ms;
    bool found = false;
    for (int peer = 0; peer < tp->size; peer++) {
        ibv_peer_t *p = &tp->peers[peer];
        if (peer == tp->rank || p->settled || (p->state == PEER_IDLE && !scan_idle && !p->wanted))
            continue;
        if (p->publish_owed) {
            if (publish(tp, peer, p->state == PEER_UP) != XDEV_OK) {
                ibv_peer_fail(tp, peer);
                continue;
            }
            settle(tp, p);
            if (p->settled)
                continue;
        }
        ibv_addr_t r;
        int rc = lookup(tp, peer, &r);
        if (rc < 0) {
            ibv_peer_fail(tp, peer);
            continue;
        }
        if (rc == 1 && p->state != PEER_UP) {
            found = true;
            peer_up(tp, peer, &r);
        } else if (rc == 1 && r.ready) {
            ibv_peer_remote_ready(tp, p);
        } else if (p->wanted && now >= p->give_up_ms) {
            IBV_TRACE(tp, "peer %d: no answer in time (state %d)", peer, p->state);
            ibv_peer_fail(tp, peer);
        }
    }
    if (scan_idle) {
        tp->scan_ms = found ? SCAN_MIN_MS : tp->scan_ms * 2 > SCAN_MAX_MS ? SCAN_MAX_MS
                                                                          : tp->scan_ms * 2;
        tp->next_scan_ms = now + tp->scan_ms;
    }
}

/* The peer can no longer be reached: stop its QP (outstanding work
 * requests complete as flushed, which returns their buffers), hand back
 * its queue, then tell the core, once the device has let go of every
 * buffer a transfer of ours gave it (ibv_rma_fail_peer). */
void ibv_peer_fail(xdev_tp_t *tp, int peer)
{
    ibv_peer_t *p = &tp->peers[peer];
    if (p->state == PEER_DEAD)
        return;
    IBV_TRACE(tp, "peer %d: failed (state %d%s)", peer, p->state, p->exited ? ", exited" : "");
    set_state(tp, p, PEER_DEAD);
    p->wanted = false;
    if (p->qp) {
        struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
        ibv_modify_qp(p->qp, &a, IBV_QP_STATE);
    }
    ibv_rx_drop_held(tp, p);
    ibv_fail_queue(tp, peer);
    p->held = ibv_rma_fail_peer(tp, p);
    if (!p->held)
        xdev_core_peer_failed(tp->dev, peer);
}

/* Peers whose exit we saw but have not yet judged. */
bool ibv_exits_unjudged(const xdev_tp_t *tp)
{
    for (int peer = 0; peer < tp->size; peer++)
        if (tp->peers[peer].exited && tp->peers[peer].state != PEER_DEAD)
            return true;
    return false;
}

/* Processes that exited: once what they sent us has been delivered
 * (nothing held back for the core), they are gone. */
void ibv_check_exits(xdev_tp_t *tp)
{
    for (int peer = 0; peer < tp->size; peer++) {
        ibv_peer_t *p = &tp->peers[peer];
        if (p->exited && p->state != PEER_DEAD && p->in.state != XDEV_RXMSG_DEFERRED && !p->pend_head)
            ibv_peer_fail(tp, peer);
    }
}

/* Peers whose death no pidfd would tell us of, that we talked to, have
 * nothing in flight that would fail, and sent us nothing lately. */
void ibv_keepalive(xdev_tp_t *tp, uint64_t now)
{
    if (!tp->keepalive_ms || now < tp->next_keepalive_ms)
        return;
    tp->next_keepalive_ms = now + tp->keepalive_ms;
    for (int peer = 0; peer < tp->size; peer++) {
        ibv_peer_t *p = &tp->peers[peer];
        if (p->state == PEER_UP && p->remote_ready && p->wanted && p->pidfd < 0 &&
            !p->sq_inflight && !p->heard) {
            IBV_TRACE(tp, "peer %d: keepalive", peer);
            ibv_tx_keepalive(tp, p);
        }
        p->heard = false;
    }
}

void ibv_peer_close(xdev_tp_t *tp, ibv_peer_t *p)
{
    (void)tp;
    if (p->qp)
        ibv_destroy_qp(p->qp);
    p->qp = NULL;
    if (p->pidfd >= 0)
        close(p->pidfd);
    p->pidfd = -1;
}
