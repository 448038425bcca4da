/*
 * ofi_addr.c - finding peers and noticing when they go.
 *
 * Each rank publishes "ofi" = "<eager limit> <pid> <endpoint name in hex>"
 * through the device's bootstrap (fi_getname at open). A peer's entry is
 * looked up, and inserted into the address vector, on first use: the first
 * send to it, or the first frame from it. Until it is published, sends
 * wait; a peer that stays unpublished for the peer timeout is dead.
 *
 * Death: an error completion for anything sent to a peer fails it (ofi.c).
 * But a provider may say nothing at all: shm never notices a dead peer,
 * and tcp;ofi_rxm keeps a send to one queued while it redials. So a peer
 * whose pids we share (same kernel boot and PID namespace, published
 * beside the address) is watched by its pid; any other peer we talk to or
 * wait on gets a PING after OFI_PING_MS of silence, and is dead when the
 * ping fails or is not complete within the peer timeout. (A ping needs no
 * progress from the peer's process, only from its provider and NIC.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ofi.h"

int ofi_addr_publish(xdev_tp_t *tp)
{
    uint8_t name[OFI_ADDR_MAX];
    size_t len = sizeof name;
    if (fi_getname(&tp->ep->fid, name, &len) != 0)
        return XDEV_ERR_INIT;
    /* Peers in the same pid space are watched by pid whatever the provider. */
    xdev_host_token(tp->pid_space, sizeof tp->pid_space, (const char *const[]){ "pid" }, 1);
    char s[2 * OFI_ADDR_MAX + 200];
    int n = snprintf(s, sizeof s, "%zu %d %s ", tp->eager_limit, (int)getpid(), tp->pid_space);
    for (size_t i = 0; i < len; i++)
        n += snprintf(s + n, sizeof s - (size_t)n, "%02x", name[i]);
    return xdev_boot_publish(tp->dev, "ofi", s);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* 1: resolved, 0: not published yet, XDEV_ERR_PEER: an unusable entry, or
 * a process that has exited, or is being killed, before it sent us
 * anything (heard: it has).
 *
 * libfabric's shm provider tries CMA once per endpoint, by writing into the
 * first peer it maps that has not tried yet, and the answer spreads to each
 * process that maps either (v1.17 smr_cma_check). Written into a dead or
 * dying process, that fails: CMA is then off for all of them, an RMA read
 * waits for its target's answer, and as answers are taken in order, one
 * owed by a dead rank holds back every later one. So a dead peer is not
 * mapped. One that has sent us a frame has mapped us, so has tried, and is
 * not written. */
int ofi_resolve(xdev_tp_t *tp, ofi_peer_t *p, bool heard)
{
    if (p->resolved)
        return 1;
    char s[2 * OFI_ADDR_MAX + 200], space[sizeof tp->pid_space];
    int rc = xdev_boot_lookup(tp->dev, p->rank, "ofi", s, sizeof s);
    if (rc <= 0) /* not published yet, or no descriptor free: try again later */
        return rc < 0 && rc != XDEV_ERR_NOMEM ? XDEV_ERR_PEER : 0;
    unsigned long long limit;
    int pid, off = 0;
    if (sscanf(s, "%llu %d %127s %n", &limit, &pid, space, &off) != 3 || !off)
        return XDEV_ERR_PEER;
    const char *hex = s + off;
    size_t hexlen = strcspn(hex, " \n");
    uint8_t name[OFI_ADDR_MAX];
    if (!hexlen || hexlen % 2 || hexlen / 2 > sizeof name)
        return XDEV_ERR_PEER;
    for (size_t i = 0; i < hexlen / 2; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return XDEV_ERR_PEER;
        name[i] = (uint8_t)(hi << 4 | lo);
    }
    p->pid = pid;
    p->same_pids = tp->local_only || !strcmp(space, tp->pid_space);
    if (p->same_pids && p->pidfd < 0)
        p->pidfd = xdev_pidfd_open(pid);
    if (p->same_pids && !heard &&
        (xdev_process_exited(p->pidfd, pid) || xdev_process_leaving(pid)))
        return XDEV_ERR_PEER;
    if (fi_av_insert(tp->av, name, 1, &p->addr, 0, NULL) != 1)
        return XDEV_ERR_PEER;
    p->eager_limit = (size_t)limit;
    p->resolved = true;
    ofi_service_later(tp, p); /* sends may wait for the address */
    return 1;
}

/* Something waits on this peer: its address, or a sign of life. */
static bool wanted(const ofi_peer_t *p)
{
    return p->txq.head || p->rmaq_head || p->watched;
}

/* Has the provider had its chance to finish what failed p's messages
 * still hold (ofi_tx_fail_all)? A peer whose process has exited sends
 * nothing more, and what it sent is on this host: read within a few
 * passes of our progress. One that may live on (stopped, cut off, on
 * another host) may still answer a read, for a peer timeout. */
static bool provider_had_time(const xdev_tp_t *tp, ofi_peer_t *p, uint64_t now)
{
    if (!p->exited && p->same_pids)
        p->exited = xdev_process_exited(p->pidfd, p->pid);
    if (p->exited)
        return now >= p->failed_ms + OFI_DRAIN_MS && tp->polls - p->failed_polls >= OFI_DRAIN_POLLS;
    return now >= p->failed_ms + (uint64_t)tp->peer_timeout_ms;
}

/* A provider may complete a send after the receiver has taken it whole
 * and said goodbye (libfabric's shm does), and leaving would fail it with
 * the peer. So our sends get a peer timeout from the goodbye (its last
 * frame) to complete before it has left. */
static bool bye_awaits_sends(const xdev_tp_t *tp, const ofi_peer_t *p, uint64_t now)
{
    return p->inflight && now < p->last_heard_ms + (uint64_t)tp->peer_timeout_ms;
}

void ofi_timers(xdev_tp_t *tp, uint64_t now)
{
    for (int r = 0; r < tp->size; r++) {
        ofi_peer_t *p = &tp->peers[r];
        if (p->held && provider_had_time(tp, p, now))
            ofi_peer_released(tp, p);
        if (!tp->serve[r] || p->failed)
            continue;
        if (p->send_failed && now >= p->failed_ms + OFI_DRAIN_MS &&
            tp->polls - p->failed_polls >= OFI_DRAIN_POLLS) {
            ofi_peer_fail(tp, p);
            continue;
        }
        if (p->nearly && now >= p->gap_ms + (uint64_t)tp->peer_timeout_ms) {
            /* A reliable provider completes a frame late, not never; one
             * that lost it (udp;ofi_rxd can fail a receive as truncated,
             * and which peer's frame it held is unknown) would leave this
             * peer's later frames, and our credits, waiting for good. */
            ofi_say("rank %d: frame %u of rank %d never came; failing it", tp->rank,
                    (unsigned)p->rx_seq, r);
            ofi_peer_reject(tp, p);
            continue;
        }
        if (!p->resolved) {
            if (!wanted(p))
                continue;
            int rc = ofi_resolve(tp, p, false);
            if (rc < 0 || (rc == 0 && now >= p->give_up_ms)) {
                ofi_peer_fail(tp, p);
                continue;
            }
            if (rc == 1) {
                ofi_tx_flush(tp, p);
                ofi_rma_flush(tp, p);
            }
            continue;
        }
        if (p->bye_rx) { /* it said goodbye: it left once all it sent is in */
            if (!p->backlog_head && p->in.state == XDEV_RXMSG_IDLE && !bye_awaits_sends(tp, p, now))
                ofi_peer_left(tp, p);
            continue;
        }
        if (p->same_pids) {
            if (xdev_process_exited(p->pidfd, p->pid))
                ofi_peer_fail(tp, p);
        } else if (p->ping_out) {
            /* an unreachable peer's provider may retry forever */
            if (now >= p->ping_ms + (uint64_t)tp->peer_timeout_ms)
                ofi_peer_fail(tp, p);
        } else if ((p->watched || p->active) && p->cr.avail > 0 &&
                   now >= p->last_heard_ms + OFI_PING_MS) {
            p->ping_out = ofi_send_ctrl(tp, p, K_PING);
            p->ping_ms = now;
        }
    }
}
