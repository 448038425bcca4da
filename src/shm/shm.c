/*
 * shm.c - the shared-memory transport: its ops table, open and close,
 * the progress loop, and what happens when a peer goes. See shm.h.
 *
 * Tuning (environment):
 *   XDEV_SHM_RING     data bytes of each ring (k/m suffixes; a power of two
 *                     is taken below it). Default: 2 MiB, less when more
 *                     than 5 ranks share the host (see ring_bytes_for).
 *   XDEV_SHM_CMA_MIN  smallest message the receiver fetches with
 *                     process_vm_readv instead of the pipelined double copy
 *                     (k/m/g suffixes, or "never"). 0 forces it always;
 *                     under the eager limit it moves eager messages too
 *                     (copy_once_from).
 *                     From SHM_MID_MIN up it is also used where the
 *                     receiver times it faster (shm_middle.c), from
 *                     SHM_ADAPT_MIN up while long streams are slow or long
 *                     messages go both ways (shm_rndz_mode); never stops
 *                     both.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>
#include "shm.h"

/* Measured with 4 MiB messages (2 ranks, EPYC with 1 MiB L2 per core and
 * a 32 MiB L3): 512 KiB rings reach about 12 GB/s, 1 MiB rings 25-30 in
 * the VM's slow mode; in its fast mode 1 MiB rings reach 50-54 GB/s and
 * 2 MiB rings, with the long fragments they allow (shm_ring.c), 2-4%
 * more. A deeper pipeline lets each side copy while the other does. */
#define RING_MAX_BYTES (2048u * 1024)
#define RING_MIN_BYTES (64u * 1024)
#define RING_BUDGET (8u * 1024 * 1024) /* rings into one rank, in all */
/* Where process_vm_readv takes over from the ring. Measured on the same
 * machine: the single copy moves 10-12 GB/s up to 4 MiB and 4-8 GB/s
 * beyond; the double copy through a 1 MiB ring 25-30 GB/s up to 4 MiB,
 * 13-18 at 8 MiB, 6-12 at 16 MiB, as little as 2-4 GB/s at any size when
 * the two processes run on cores far apart (another CCD), while the single
 * copy barely notices where the cores are. From 16 MiB on, source and
 * destination no longer fit in the L3 together, the ring's cache advantage
 * is gone, and the single copy wins on what is left: half the work, no
 * exposure to core placement, and a sender that need not progress for
 * its data to move. */
#define CMA_MIN_DEFAULT ((size_t)16 << 20)

/* What XDEV_SHM_RING asked (0: nothing), rounded down to a power of two.
 * Unasked, rings in one segment share a budget, so that a host full of
 * ranks does not fill /dev/shm: a ring is only touched (and its pages
 * allocated) by traffic, but all-to-all traffic touches every ring. */
static size_t ring_bytes_for(size_t asked, int npeers)
{
    size_t r = 4096;
    if (asked) {
        while (r * 2 <= asked)
            r *= 2;
        return r;
    }
    size_t want = RING_BUDGET / (size_t)(npeers > 0 ? npeers : 1);
    r = RING_MAX_BYTES;
    while (r > want && r > RING_MIN_BYTES)
        r /= 2;
    return r;
}

static int read_options(xdev_tp_t *tp, size_t *ring)
{
    size_t asked = 0;
    int push = 0;
    tp->cma_min = CMA_MIN_DEFAULT;
    if (xdev_opt_size(tp->dev, "XDEV_SHM_RING", &asked) != XDEV_OK ||
        xdev_opt_size(tp->dev, "XDEV_SHM_CMA_MIN", &tp->cma_min) != XDEV_OK ||
        xdev_opt_choice(tp->dev, "XDEV_SHM_CMA_MODE", &push) != XDEV_OK)
        return XDEV_ERR_INIT;
    *ring = ring_bytes_for(asked, tp->npeers);
    tp->cma_mode = push ? XDEV_RNDZ_WRITE : XDEV_RNDZ_READ;
    /* Middle sizes are chosen by timing both ways, which takes a reader
     * that makes the single copies (write mode: the sender) and ranks
     * that run at once; a threshold set under the eager limit chooses
     * for them (copy_once_from). */
    tp->mid_adapts = push == 0 && tp->cpus_enough && tp->cma_min != SIZE_MAX &&
                     tp->cma_min > tp->eager_limit;
    return XDEV_OK;
}

/* Tell a peer we stopped, through the flags it watches: `closed` on its
 * ring to us (it fails what it still queues for us), `eof` on ours to it
 * (it reads what we wrote, then lets us go). */
static void say_goodbye(shm_peer_t *p)
{
    atomic_store_explicit(&p->rx.ctl->closed, 1, memory_order_release);
    if (p->tx.ctl)
        atomic_store_explicit(&p->tx.ctl->eof, 1, memory_order_release);
    shm_bell_ring(p); /* it may be asleep */
}

/* After our goodbye and a shm_fence_peers: wait until p is out of any
 * single copy with our memory (shm_seg_copy) that it began before it could
 * see the goodbye, since the buffers it touches are the caller's again once
 * we return. Bounded by the peer timeout, in case p stopped inside one. */
static void wait_out_copy(const xdev_tp_t *tp, const shm_peer_t *p)
{
    uint64_t deadline = xdev_now_ms() + (uint64_t)tp->peer_timeout_ms;
    while (atomic_load_explicit(&p->rx.ctl->copying, memory_order_acquire) &&
           !xdev_process_exited(p->pidfd, p->pid) && xdev_now_ms() < deadline)
        sched_yield();
}

/* p left: what we still queue for it can never be read. */
void shm_peer_gone(xdev_tp_t *tp, shm_peer_t *p)
{
    if (p->gone)
        return;
    p->gone = true;
    shm_bell_forget(tp, p);
    shm_tx_gone(tp, p);
}

/* Hand back p's single copies not finished, failed. */
static void fail_copies(xdev_tp_t *tp, shm_peer_t *p)
{
    while (p->copies) {
        xdev_rmaop_t *op = p->copies;
        p->copies = op->next;
        tp->copies--;
        xdev_core_rma_done(tp->dev, op, XDEV_ERR_PEER);
    }
    p->copies_tail = NULL;
    p->copied = 0;
}

/* Drop p: hand back its queues, abandon what we were reading from it, stop
 * reading its ring, then tell the core. */
void shm_peer_fail(xdev_tp_t *tp, shm_peer_t *p)
{
    if (p->failed)
        return;
    p->gone = true;
    p->failed = true;
    say_goodbye(p);
    shm_fence_peers();
    wait_out_copy(tp, p);
    shm_fail_queue(tp, p);
    fail_copies(tp, p);
    p->in.state = XDEV_RXMSG_IDLE;
    xdev_core_peer_failed(tp->dev, p->rank);
}

/* A gone peer is failed once nothing it wrote is left to read. A message
 * the core deferred waits for its resume first, as a paused socket does. */
static void settle(xdev_tp_t *tp, shm_peer_t *p)
{
    bool waits = p->in.state == XDEV_RXMSG_DEFERRED || p->in.state == XDEV_RXMSG_RESUMED;
    if (!waits && !shm_rx_peek(&p->rx))
        shm_peer_fail(tp, p);
}

/* A read longer than this is timed for the verdict; a shorter one is too
 * short to time well beside a system call. */
#define COPY_TIMED_MIN ((size_t)1 << 20)

/* Whether a single copy of len bytes would be timed for the verdict. */
static bool single_copy_timed(const xdev_tp_t *tp, size_t len)
{
    return len > COPY_TIMED_MIN && tp->cma_mode == XDEV_RNDZ_READ;
}

/* Copy n bytes of op from offset at, with p. What reading from p costs
 * is half of the verdict on its streams. */
static int copy_part(xdev_tp_t *tp, shm_peer_t *p, xdev_rmaop_t *op, size_t at, size_t n)
{
    bool middle = !op->write && shm_mid_size(op->len);
    uint64_t t0 = middle ? shm_mid_arrives(tp, p, 0)
                         : !op->write && n > COPY_TIMED_MIN ? xdev_now_ns() : 0;
    int rc = shm_seg_copy(tp, p->rank, (char *)op->local + at, n, op->remote_addr + at, op->write);
    if (t0 && rc == XDEV_OK && middle)
        shm_mid_read(p, n, t0);
    else if (t0 && rc == XDEV_OK)
        shm_rate_single(tp, p, n, xdev_now_ns() - t0);
    return rc;
}

/* The next piece of the first single copy with each peer. */
static void copy_pieces(xdev_tp_t *tp)
{
    for (int i = 0; i < tp->npeers && tp->copies; i++) {
        shm_peer_t *p = &tp->peers[i];
        xdev_rmaop_t *op = p->copies;
        if (!op)
            continue;
        size_t left = op->len - p->copied;
        size_t n = left < XDEV_TP_PASS_BYTES ? left : XDEV_TP_PASS_BYTES;
        int rc = copy_part(tp, p, op, p->copied, n);
        xdev_core_moved(tp->dev); /* a waiter keeps polling: this is no idle wait */
        if (rc == XDEV_OK && (p->copied += n) < op->len)
            continue;
        if (rc == XDEV_OK && !op->write)
            shm_copied_once(p);
        p->copies = op->next;
        if (!p->copies)
            p->copies_tail = NULL;
        p->copied = 0;
        tp->copies--;
        xdev_core_rma_done(tp->dev, op, rc);
    }
}

static void shm_progress(xdev_tp_t *tp, bool woke)
{
    (void)woke; /* a pidfd that woke us is looked at by the next arm */
    if (tp->armed)
        shm_bell_disarm(tp);
    for (int i = 0; i < tp->npeers; i++) {
        shm_peer_t *p = &tp->peers[i];
        if (p->failed)
            continue;
        if (p->txq.head && !p->gone)
            shm_flush(tp, p);
        if (p->in.state != XDEV_RXMSG_IDLE || shm_rx_peek(&p->rx))
            shm_rx_poll(tp, p);
        if (p->gone && !p->failed)
            settle(tp, p);
    }
    if (tp->copies)
        copy_pieces(tp);
    /* A coarse clock (a few ns, no system call) decides when the peers'
     * liveness is worth a poll() again; read every SHM_CLOCK_EVERY calls
     * only, since a waiter spins through here and every ns of the loop
     * delays noticing an arrival. */
    if (++tp->polls % SHM_CLOCK_EVERY == 0) {
        uint64_t now = xdev_now_coarse_ms();
        if (now >= tp->next_check_ms) {
            tp->next_check_ms = now + SHM_CHECK_MS;
            shm_seg_find_gone(tp);
        }
    }
}

static int shm_wait_fd(xdev_tp_t *tp)
{
    return tp->epfd;
}

/* Every peer's death is noticed anyway: one poll() covers them all. */
static void shm_watch(xdev_tp_t *tp, int peer)
{
    (void)tp;
    (void)peer;
}

/* Large messages move with one copy, process_vm_readv by the receiver (or
 * process_vm_writev by the sender), where the kernel lets us; so do
 * long ones while the receiver finds them slow through the ring
 * (shm_verdict.c). Other long ones are offered for reading all the same,
 * for a receiver that is sending long messages to us too (enum shm_offer). */
static int shm_rndz_mode(xdev_tp_t *tp, int peer, size_t len)
{
    shm_peer_t *p = tp->by_rank[peer];
    if (p->gone) /* (its segment may not even be mapped) */
        return XDEV_RNDZ_SEND;
    shm_mid_follow(tp, p, len);
    bool single = len >= tp->cma_min ||
                  (shm_mid_size(len) && p->mid_follows && len >= p->mid_follows);
    bool adapts = !single && len >= SHM_ADAPT_MIN && tp->cma_min != SIZE_MAX;
    if (adapts)
        single = shm_copy_once_next(p, len, single_copy_timed(tp, len), tp->polls);
    bool offered = single || (adapts && tp->cma_mode == XDEV_RNDZ_READ);
    if (!offered || !shm_seg_cma_works(tp, p))
        return XDEV_RNDZ_SEND;
    p->offer = single ? SHM_OFFER_READ : SHM_OFFER_IF_BOTH_WAYS; /* (shm_mem_expose) */
    return single ? tp->cma_mode : XDEV_RNDZ_READ;
}

/* A peer process reaches our memory by its address: nothing to register.
 * An offer to be read (the core exposes right after shm_rndz_mode chose
 * it) carries its kind in the key and stays counted until released. */
static int shm_mem_expose(xdev_tp_t *tp, int peer, void *buf, size_t len, bool remote_write,
                          xdev_mem_t *mem)
{
    shm_peer_t *p = tp->by_rank[peer];
    (void)len;
    if (p->gone || !shm_seg_cma_works(tp, p))
        return XDEV_ERR_SYSTEM;
    if (remote_write) { /* p is about to write our message */
        shm_copied_once(p);
        *mem = (xdev_mem_t){ .addr = (uint64_t)(uintptr_t)buf };
        return XDEV_OK;
    }
    p->offers_open++;
    *mem = (xdev_mem_t){ .addr = (uint64_t)(uintptr_t)buf, .key = p->offer, .handle = p };
    return XDEV_OK;
}

static void shm_mem_release(xdev_tp_t *tp, xdev_mem_t *mem)
{
    (void)tp;
    shm_peer_t *p = mem->handle;
    if (p)
        p->offers_open--;
}

static int shm_rma(xdev_tp_t *tp, int peer, xdev_rmaop_t *op)
{
    shm_peer_t *p = tp->by_rank[peer];
    if (!op->write && op->remote_key == SHM_OFFER_IF_BOTH_WAYS && !p->offers_open)
        return XDEV_ERR_BUSY; /* declined: the core has it streamed */
    /* What one progress call may move is copied at once, when matched;
     * a longer copy goes a piece a call (copy_pieces). */
    if (op->len <= XDEV_TP_PASS_BYTES) {
        int rc = copy_part(tp, p, op, 0, op->len);
        if (rc == XDEV_OK && !op->write)
            shm_copied_once(p);
        return rc == XDEV_OK ? 1 : rc;
    }
    if (p->gone)
        return XDEV_ERR_PEER;
    op->next = NULL;
    if (p->copies_tail)
        p->copies_tail->next = op;
    else
        p->copies = op;
    p->copies_tail = op;
    tp->copies++;
    return 0;
}

/* xdev-info: what shm finds here, with the environment's options (a
 * device's own options may differ). */
static void shm_info(FILE *out)
{
    size_t asked = 0, cma_min = CMA_MIN_DEFAULT;
    int push = 0;
    if (xdev_opt_size(NULL, "XDEV_SHM_RING", &asked) != XDEV_OK ||
        xdev_opt_size(NULL, "XDEV_SHM_CMA_MIN", &cma_min) != XDEV_OK ||
        xdev_opt_choice(NULL, "XDEV_SHM_CMA_MODE", &push) != XDEV_OK)
        fprintf(out, "  an XDEV_SHM_* variable has a value shm refuses: its xdev_init fails\n");
    struct statvfs v;
    if (statvfs("/dev/shm", &v) == 0)
        fprintf(out, "  /dev/shm: %.1f GiB free; rings of %zu KiB%s\n",
                (double)v.f_bavail * (double)v.f_frsize / (1 << 30),
                ring_bytes_for(asked, 1) / 1024,
                asked ? " (XDEV_SHM_RING)" : " with 1-4 local peers (8 MiB per rank in all)");
    else
        fprintf(out, "  /dev/shm: %s: shm cannot work here\n", strerror(errno));
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int scope = 0;
    if (f) {
        if (fscanf(f, "%d", &scope) != 1)
            scope = 0;
        fclose(f);
    }
    bool mib = cma_min >= ((size_t)1 << 20) && !(cma_min & (((size_t)1 << 20) - 1));
    fprintf(out, "  single copy (process_vm_%s)", push ? "writev" : "readv");
    if (cma_min == SIZE_MAX)
        fprintf(out, " never (XDEV_SHM_CMA_MIN)");
    else
        fprintf(out, " from %zu %s", cma_min >> (mib ? 20 : 10), mib ? "MiB" : "KiB");
    if (cma_min != SIZE_MAX && cma_min > SHM_ADAPT_MIN && !push)
        fprintf(out, ", from %zu KiB while streams are slow or go both ways", SHM_ADAPT_MIN >> 10);
    fprintf(out, ": %s\n",
            scope <= 0 ? "allowed between a user's processes (yama ptrace_scope 0 or none)"
                       : "restricted by yama ptrace_scope; falls back to the ring");
    fprintf(out, "  doorbell for sleeping ranks: FIFO in /dev/shm, membarrier %s\n",
            shm_bell_fence_free() ? "available (no fence on the send path)"
                                  : "missing (a fence per send while peers sleep)");
}

/* Done once nothing is queued for a peer that is still there. Rings need
 * no goodbye handshake: what we wrote stays readable after we are gone. */
static int shm_shutdown(xdev_tp_t *tp)
{
    for (int i = 0; i < tp->npeers; i++)
        if ((tp->peers[i].txq.head || tp->peers[i].copies) && !tp->peers[i].gone)
            return 0;
    return 1;
}

static void shm_close(xdev_tp_t *tp)
{
    if (!tp)
        return;
    for (int i = 0; i < tp->npeers; i++)
        if (tp->peers[i].rx.ctl)
            say_goodbye(&tp->peers[i]);
    shm_fence_peers();
    for (int i = 0; i < tp->npeers; i++) {
        shm_peer_t *p = &tp->peers[i];
        p->gone = true; /* sends from inside tx_done now fail at once */
        if (p->rx.ctl)
            wait_out_copy(tp, p);
        shm_fail_queue(tp, p);
        shm_seg_unmap(&p->seg);
        if (p->pidfd >= 0)
            close(p->pidfd);
        if (p->bell_fd >= 0)
            close(p->bell_fd);
    }
    if (tp->epfd >= 0)
        close(tp->epfd);
    if (tp->bell_fd >= 0) {
        close(tp->bell_fd);
        unlink(tp->bell_path); /* usually gone already, as the segment's name */
    }
    if (tp->own.hdr) {
        shm_unlink(tp->own_name); /* usually gone already: the last mapper unlinks */
        shm_seg_unmap(&tp->own);
    }
    free(tp->pidfds);
    free(tp->peers);
    free(tp->by_rank);
    free(tp);
}

/* A single-copy threshold under the eager limit moves eager messages too:
 * the core sends them to each peer whose memory we can reach as offers to
 * be read (or written), and reads one in as it arrives. */
static void copy_once_from(xdev_tp_t *tp)
{
    if (tp->cma_min > tp->eager_limit)
        return;
    for (int i = 0; i < tp->npeers; i++) {
        shm_peer_t *p = &tp->peers[i];
        if (!p->gone && shm_seg_cma_works(tp, p))
            xdev_core_peer_rndz_from(tp->dev, p->rank, tp->cma_min ? tp->cma_min : 1);
    }
}

static int shm_open_tp(xdev_t *dev, const xdev_tp_params_t *params, xdev_tp_t **out)
{
    if (params->size < 1 || params->rank < 0 || params->rank >= params->size)
        return XDEV_ERR_ARG;
    xdev_tp_t *tp = calloc(1, sizeof *tp);
    if (!tp)
        return XDEV_ERR_NOMEM;
    tp->dev = dev;
    tp->peer_timeout_ms = params->peer_timeout_ms;
    tp->bell_fd = tp->epfd = -1;
    tp->rank = params->rank;
    tp->size = params->size;
    tp->eager_limit = params->eager_limit;
    for (int r = 0; r < params->size; r++)
        tp->npeers += params->serve[r] && r != params->rank;
    tp->cpus_enough = tp->npeers < sysconf(_SC_NPROCESSORS_ONLN);
    tp->by_rank = calloc((size_t)(unsigned)params->size, sizeof *tp->by_rank);
    tp->peers = calloc((size_t)tp->npeers + 1, sizeof *tp->peers);
    tp->pidfds = calloc((size_t)tp->npeers + 1, sizeof *tp->pidfds);
    int rc = tp->by_rank && tp->peers && tp->pidfds ? XDEV_OK : XDEV_ERR_NOMEM;
    for (int r = 0, i = 0; rc == XDEV_OK && r < params->size; r++) {
        if (!params->serve[r] || r == params->rank)
            continue;
        tp->peers[i].rank = r;
        tp->peers[i].pidfd = tp->peers[i].bell_fd = -1;
        tp->by_rank[r] = &tp->peers[i++];
    }
    size_t ring = 0;
    if (rc == XDEV_OK)
        rc = read_options(tp, &ring);
    if (rc == XDEV_OK && tp->npeers) {
        rc = xdev_job_name(dev, params->job_id, params->rank, "", tp->own_name,
                           sizeof tp->own_name);
        if (rc == XDEV_OK)
            rc = shm_seg_create(tp, params, ring);
        if (rc == XDEV_OK)
            rc = shm_seg_map_peers(tp, params->job_id, params->peer_timeout_ms);
        if (rc == XDEV_OK)
            shm_bell_watch(tp);
    }
    if (rc != XDEV_OK) {
        shm_close(tp);
        return rc;
    }
    copy_once_from(tp);
    tp->next_check_ms = xdev_now_coarse_ms() + SHM_CHECK_MS;
    *out = tp;
    return XDEV_OK;
}

/* The short tier is one ring record (shm_ring_push_whole). */
static size_t shm_short_max(xdev_tp_t *tp)
{
    size_t max = 0;
    for (int i = 0; i < tp->npeers; i++)
        if (tp->peers[i].tx.frag_max > max)
            max = tp->peers[i].tx.frag_max;
    return max;
}

const xdev_tp_ops_t xdev_shm_ops = {
    .name = "shm",
    .open = shm_open_tp,
    .send = shm_send,
    .short_max = shm_short_max,
    .progress = shm_progress,
    .wait_fd = shm_wait_fd,
    .arm = shm_arm,
    .info = shm_info,
    .resume = shm_resume,
    .watch = shm_watch,
    .rndz_mode = shm_rndz_mode,
    .mem_expose = shm_mem_expose,
    .mem_release = shm_mem_release,
    .rma = shm_rma,
    .shutdown = shm_shutdown,
    .close = shm_close,
};
