/*
 * shm_bell.c - the doorbell that lets a rank sleep while its peers write
 * to it through shared memory.
 *
 * Rings are polled: a producer publishes a record with one store and the
 * consumer finds it by looking. A process that wants to sleep instead (the
 * core after a long idle wait, a caller's event loop through xdev_fd)
 * arms: it sets `armed` in its segment header, and from then on a peer
 * that publishes a record to it, or releases room it may be waiting for,
 * writes a byte to its bell, a FIFO "/dev/shm/xdev-<job id>-<rank>-bell"
 * that the sleeper polls. Peers look at `armed` after every such step; a
 * line only the sleeper writes, and only when it arms or wakes, costs them
 * a load that stays in cache. The next progress call disarms.
 *
 * No wakeup may be lost between the sleeper's last look at its rings and
 * a peer's look at `armed`: each side stores, then loads what the other
 * stored, which x86 and every other CPU may reorder unless a full fence
 * stands between. Rather than a fence on every send, the sleeper forces
 * one on every running process of ours with membarrier (GLOBAL_EXPEDITED:
 * an interrupt to the CPUs running them, a few hundred ns here) when it
 * arms; a process that could not register for that fences after every
 * publish instead.
 *
 * A FIFO needs no fd passing and no ptrace rights (which eventfd handed
 * over with pidfd_getfd would); its name is removed with the segment's by
 * the last rank to map it, or by xdevrun's cleanup.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "shm.h"

static bool membarrier_cmd(int cmd)
{
    return syscall(SYS_membarrier, cmd, 0, 0) == 0;
}

bool shm_bell_fence_free(void)
{
    int cmds = (int)syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    return cmds > 0 && (cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED);
}

int shm_bell_path(xdev_t *dev, const char *job_id, int rank, char *out, size_t cap)
{
    char name[128];
    int rc = xdev_job_name(dev, job_id, rank, "-bell", name, sizeof name);
    if (rc != XDEV_OK)
        return rc;
    int n = snprintf(out, cap, "/dev/shm/%s", name);
    return n > 0 && (size_t)n < cap ? XDEV_OK : XDEV_ERR_INIT;
}

/* Our own bell, made before our segment is published so that every peer
 * that maps the segment finds it. Without one we never sleep on shm (the
 * core naps instead), and nothing else changes. */
void shm_bell_create(xdev_tp_t *tp, const char *job_id)
{
    tp->fence_free = membarrier_cmd(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);
    if (shm_bell_path(tp->dev, job_id, tp->rank, tp->bell_path, sizeof tp->bell_path) != XDEV_OK)
        return;
    unlink(tp->bell_path); /* a dead namesake's: our segment name is ours now */
    if (mkfifo(tp->bell_path, 0600) != 0)
        return;
    /* Read and write: open never blocks, and the FIFO never reports EOF
     * when a peer closes its end. */
    tp->bell_fd = open(tp->bell_path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
}

/* Open p's bell for ringing; called while mapping its segment, before we
 * count ourselves as a mapper (the last mapper removes the name). A peer
 * whose bell we cannot open never arms (it has none) or is gone. Opened
 * for reading too, so that a bell whose owner has exited never raises
 * SIGPIPE: a ring then lands in a pipe nobody reads, harmlessly. */
void shm_bell_open_peer(xdev_tp_t *tp, shm_peer_t *p, const char *job_id)
{
    char path[160];
    if (shm_bell_path(tp->dev, job_id, p->rank, path, sizeof path) == XDEV_OK)
        p->bell_fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
}

/* The fd the core sleeps on: our bell and the peers' pidfds in one epoll
 * set. Called once every peer is mapped. */
void shm_bell_watch(xdev_tp_t *tp)
{
    if (tp->bell_fd < 0 || (tp->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
        return;
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = tp->bell_fd };
    bool ok = epoll_ctl(tp->epfd, EPOLL_CTL_ADD, tp->bell_fd, &ev) == 0;
    for (int i = 0; ok && i < tp->npeers; i++) {
        shm_peer_t *p = &tp->peers[i];
        ev.data.fd = p->pidfd;
        if (!p->gone && p->pidfd >= 0)
            ok = epoll_ctl(tp->epfd, EPOLL_CTL_ADD, p->pidfd, &ev) == 0;
    }
    if (!ok) {
        close(tp->epfd);
        tp->epfd = -1;
    }
}

/* p is gone: its pidfd, readable for good now, must not keep waking us. */
void shm_bell_forget(xdev_tp_t *tp, shm_peer_t *p)
{
    if (tp->epfd >= 0 && p->pidfd >= 0)
        epoll_ctl(tp->epfd, EPOLL_CTL_DEL, p->pidfd, NULL);
}

void shm_bell_ring(shm_peer_t *p)
{
    uint8_t b = 1;
    if (p->bell_fd >= 0 && write(p->bell_fd, &b, 1) < 0) {
        /* EAGAIN: the FIFO is full, so the sleeper is awake already */
    }
}

void shm_bell_disarm(xdev_tp_t *tp)
{
    tp->armed = false;
    atomic_store_explicit(&tp->own.hdr->armed, 0, memory_order_relaxed);
}

/* Would progress find something to do now? */
static bool has_work(xdev_tp_t *tp)
{
    for (int i = 0; i < tp->npeers; i++) {
        shm_peer_t *p = &tp->peers[i];
        if (p->failed)
            continue;
        if (p->gone) { /* to be settled once it is read to the end */
            if (p->in.state == XDEV_RXMSG_IDLE || p->in.state == XDEV_RXMSG_PAYLOAD)
                return true;
            continue;
        }
        if (p->in.state == XDEV_RXMSG_RESUMED ||
            (p->in.state != XDEV_RXMSG_DEFERRED && shm_rx_peek(&p->rx)))
            return true;
        xdev_txop_t *op = p->txq.head;
        if (op && (op->sent < (size_t)op->head_len + op->payload_len
                       ? shm_tx_room(&p->tx, SHM_LINE * 2) != 0
                       : atomic_load_explicit(&p->tx.ctl->seen, memory_order_acquire) != 0))
            return true;
    }
    return false;
}

int shm_arm(xdev_tp_t *tp)
{
    if (tp->copies)
        return XDEV_ERR_BUSY;
    shm_rx_publish_all(tp);
    if (tp->epfd < 0)
        return XDEV_OK; /* no bell: the core naps and polls */
    uint8_t junk[64];
    while (read(tp->bell_fd, junk, sizeof junk) > 0) {
    }
    shm_seg_find_gone(tp); /* an exited peer's pidfd stays readable */
    if (has_work(tp))
        return XDEV_ERR_BUSY;
    atomic_store_explicit(&tp->own.hdr->armed, 1, memory_order_relaxed);
    tp->armed = true;
    shm_fence_peers();
    return has_work(tp) ? XDEV_ERR_BUSY : XDEV_OK;
}

void shm_fence_peers(void)
{
    if (!membarrier_cmd(MEMBARRIER_CMD_GLOBAL_EXPEDITED))
        atomic_thread_fence(memory_order_seq_cst);
}
