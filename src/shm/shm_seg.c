/*
 * shm_seg.c - segments and the processes behind them.
 *
 * Layout of the segment "/xdev-<job id>-<rank>" (mode 0600):
 *   [0, ctl_off)          shm_seg_hdr_t, then senders[nrings]
 *   [ctl_off, data_off)   nrings shm_ring_ctl_t
 *   [data_off, total)     nrings data areas of ring_bytes each
 * All offsets are page multiples. The owner fills everything in, then
 * publishes `magic`; a mapper that finds no magic yet tries again later.
 * Everything a mapper reads from a segment is checked before it is used:
 * another process wrote it.
 *
 * Liveness: each peer's pid comes from its segment; its pidfd (see
 * core/liveness.c) is asked together with the others' in one poll().
 *
 * Single copy: process_vm_readv reads a peer's buffer directly. Whether
 * the kernel lets us (ptrace access mode: Yama, containers, seccomp) is
 * learnt by reading the peer's segment header out of its address space
 * the first time it matters, and remembered.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "shm.h"

#define PAGE 4096
#define MAX_IO_BYTES ((size_t)1 << 30) /* the kernel caps one call near 2 GiB */
#define TAKE_PIECE ((uint64_t)256 << 10) /* a few tens of microseconds of tmpfs work */

static uint64_t round_page(uint64_t n) { return (n + PAGE - 1) & ~(uint64_t)(PAGE - 1); }

/* Fault in a ring area now, writable, rather than page by page during the
 * first lap of traffic (a fault costs as much as hundreds of messages).
 * Only called on areas nothing has been written to yet, where storing a
 * zero changes nothing. */
static void prefault(void *addr, size_t len)
{
#ifdef MADV_POPULATE_WRITE
    if (madvise(addr, len, MADV_POPULATE_WRITE) == 0)
        return;
#endif
    for (size_t off = 0; off < len; off += PAGE)
        atomic_store_explicit((_Atomic uint8_t *)((uint8_t *)addr + off), 0, memory_order_relaxed);
}

/* A segment of our name exists already: a leftover of a dead process with
 * the same job id may be replaced; one whose owner lives, or that is still
 * being set up (no owner named yet), may not. */
static bool stale(const char *name)
{
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd < 0)
        return errno == ENOENT;
    struct stat st;
    bool dead = false;
    if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(shm_seg_hdr_t)) {
        shm_seg_hdr_t *h = mmap(NULL, sizeof *h, PROT_READ, MAP_SHARED, fd, 0);
        if (h != MAP_FAILED) {
            dead = h->owner_pid > 0 && xdev_process_gone(h->owner_pid);
            munmap(h, sizeof *h);
        }
    }
    close(fd);
    return dead;
}

static int create_fd(const char *name)
{
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno == EEXIST) {
        if (!stale(name)) {
            errno = EEXIST; /* stale() may have changed it */
            return -1;
        }
        shm_unlink(name);
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    }
    return fd;
}

/* The last of the nlocal ranks to map a segment removes its name, and its
 * bell's (every mapper opened the bell first). */
static void count_mapping(xdev_tp_t *tp, shm_seg_hdr_t *h, const char *name, const char *job_id)
{
    if (atomic_fetch_add_explicit(&h->mapped, 1, memory_order_acq_rel) + 1 >= h->nlocal) {
        char bell[160];
        shm_unlink(name);
        if (shm_bell_path(tp->dev, job_id, h->owner_rank, bell, sizeof bell) == XDEV_OK)
            unlink(bell);
    }
}

/* Take the segment's pages, then size it. /dev/shm hands pages out on
 * first touch, and one too small for them (a container's 64 MiB) would
 * kill with SIGBUS whoever touched one first, us or a peer that mapped
 * the segment as soon as fstat showed its size. Piece by piece, each
 * tried again when a signal cuts it short (some kernels' tmpfs then gives
 * back what the call took, so one call for all could fail for ever under
 * a profiler's timer). Returns 0 or an errno. */
static int take_pages_and_size(int fd, uint64_t total)
{
    for (uint64_t off = 0; off < total;) {
        uint64_t len = total - off < TAKE_PIECE ? total - off : TAKE_PIECE;
        if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
            off += len;
        else if (errno == EOPNOTSUPP)
            break; /* no reserving here: pages come on first touch */
        else if (errno != EINTR)
            return errno;
    }
    return ftruncate(fd, (off_t)total) == 0 ? 0 : errno;
}

int shm_seg_create(xdev_tp_t *tp, const xdev_tp_params_t *p, size_t ring_bytes)
{
    uint64_t nrings = (uint64_t)tp->npeers;
    uint64_t ctl_off = round_page(sizeof(shm_seg_hdr_t) + nrings * sizeof(int32_t));
    uint64_t data_off = ctl_off + round_page(nrings * sizeof(shm_ring_ctl_t));
    uint64_t total = data_off + nrings * ring_bytes;
    int fd = create_fd(tp->own_name);
    if (fd < 0)
        return errno == EEXIST ? XDEV_ERR_INIT : XDEV_ERR_SYSTEM;
    int err = take_pages_and_size(fd, total);
    uint8_t *base = MAP_FAILED;
    if (err == 0)
        base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        shm_unlink(tp->own_name);
        return err == ENOSPC || err == ENOMEM ? XDEV_ERR_NOMEM : XDEV_ERR_SYSTEM;
    }
    shm_seg_hdr_t *h = (shm_seg_hdr_t *)(void *)base;
    tp->own.hdr = h;
    tp->own.bytes = total;
    h->version = SHM_VERSION;
    h->owner_rank = p->rank;
    h->owner_pid = (int32_t)getpid();
    h->nrings = (uint32_t)nrings;
    h->nlocal = (uint32_t)nrings + 1;
    h->total_bytes = total;
    h->ring_bytes = ring_bytes;
    h->ctl_off = ctl_off;
    h->data_off = data_off;
    h->self_addr = (uint64_t)(uintptr_t)h;
    for (int i = 0; i < tp->npeers; i++) {
        shm_peer_t *q = &tp->peers[i];
        h->senders[i] = q->rank;
        q->rx.ctl = (shm_ring_ctl_t *)(void *)(base + ctl_off) + i;
        q->rx.data = base + data_off + (uint64_t)i * ring_bytes;
        q->rx.size = ring_bytes;
        q->rx.mask = ring_bytes - 1;
        q->rx.publish_every = shm_rx_publish_every(ring_bytes);
    }
    prefault(base + ctl_off, total - ctl_off);
    shm_bell_create(tp, p->job_id);
    atomic_store_explicit(&h->magic, SHM_MAGIC, memory_order_release);
    /* ours; also unlinks at once if nobody else comes */
    count_mapping(tp, h, tp->own_name, p->job_id);
    return XDEV_OK;
}

static bool pow2(uint64_t n) { return n && !(n & (n - 1)); }

/* Does the header describe a segment that fits in `bytes`? */
bool shm_seg_header_sane(const shm_seg_hdr_t *h, size_t bytes, int owner)
{
    uint64_t n = h->nrings;
    return h->version == SHM_VERSION && h->owner_rank == owner && h->total_bytes == bytes &&
           n > 0 && n < (1u << 20) && h->nlocal == n + 1 && pow2(h->ring_bytes) &&
           h->ring_bytes >= PAGE && h->ring_bytes <= ((uint64_t)1 << 32) &&
           h->ctl_off >= sizeof *h + n * sizeof(int32_t) && h->ctl_off <= h->data_off &&
           /* a difference, not a sum: a peer's ctl_off near 2^64 must not
            * wrap past data_off and put control blocks before the mapping */
           (h->data_off - h->ctl_off) / sizeof(shm_ring_ctl_t) >= n && h->data_off % PAGE == 0 &&
           h->ctl_off % SHM_SPLIT == 0 && h->data_off <= bytes &&
           (bytes - h->data_off) / h->ring_bytes >= n;
}

/* Map p's segment: 1 when done, 0 when it is not (fully) there yet, an
 * XDEV_ERR_* when it never will be usable. */
static int map_peer(xdev_tp_t *tp, shm_peer_t *p, const char *job_id)
{
    char name[128];
    if (xdev_job_name(tp->dev, job_id, p->rank, "", name, sizeof name) != XDEV_OK)
        return XDEV_ERR_INIT;
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0)
        return errno == ENOENT ? 0 : XDEV_ERR_SYSTEM;
    struct stat st;
    void *base = MAP_FAILED;
    bool known = fstat(fd, &st) == 0;
    if (known && st.st_uid != geteuid()) {
        close(fd);
        return XDEV_ERR_INIT; /* another user's: our peer could not have made it */
    }
    if (known && (size_t)st.st_size >= sizeof(shm_seg_hdr_t))
        base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED)
        return 0; /* being created: not yet sized */
    size_t bytes = (size_t)st.st_size;
    shm_seg_hdr_t *h = base;
    int rc = 0;
    int ring = -1;
    if (atomic_load_explicit(&h->magic, memory_order_acquire) != SHM_MAGIC ||
        xdev_process_gone(h->owner_pid)) {
        rc = 0; /* not ready yet, or a dead process's leftover about to be replaced */
    } else if (!shm_seg_header_sane(h, bytes, p->rank)) {
        rc = XDEV_ERR_INIT;
    } else {
        for (uint32_t i = 0; i < h->nrings && ring < 0; i++)
            if (h->senders[i] == tp->rank)
                ring = (int)i;
        rc = ring < 0 ? XDEV_ERR_INIT : 1; /* it does not expect us */
    }
    if (rc != 1) {
        munmap(base, bytes);
        return rc;
    }
    uint8_t *b = base;
    p->seg.hdr = h;
    p->seg.bytes = bytes;
    p->tx.ctl = (shm_ring_ctl_t *)(void *)(b + h->ctl_off) + ring;
    p->tx.ctl->eager_limit = tp->eager_limit;
    atomic_store_explicit(&p->tx.ctl->producer, (int32_t)getpid(), memory_order_release);
    p->tx.data = b + h->data_off + (uint64_t)ring * h->ring_bytes;
    p->tx.size = h->ring_bytes;
    p->tx.mask = h->ring_bytes - 1;
    p->tx.zeroed = h->ring_bytes; /* a new segment is all zeros */
    prefault(p->tx.data, h->ring_bytes);
    shm_ring_set_frags(&p->tx);
    p->tx.start_over_behind = tp->cpus_enough;
    p->pid = h->owner_pid;
    p->pidfd = xdev_pidfd_open(p->pid);
    p->cma_probe = h->self_addr;
    shm_bell_open_peer(tp, p, job_id);
    count_mapping(tp, h, name, job_id);
    return 1;
}

/* Has p come and gone already? It mapped our segment, and so could send
 * to us, then left and took its own segment's name with it before we
 * looked: a rank with nothing to do runs through xdev_init and
 * xdev_finalize while another naps between two looks for its segment. It
 * is gone, but what it wrote to us is still read; waiting for its segment
 * would only wait out the timeout. Its goodbye on our ring says so too:
 * its process may live on, in a device started after this one. */
static bool came_and_went(const shm_peer_t *p)
{
    int32_t pid = atomic_load_explicit(&p->rx.ctl->producer, memory_order_acquire);
    return pid > 0 && (atomic_load_explicit(&p->rx.ctl->eof, memory_order_acquire) ||
                       xdev_process_gone(pid));
}

/* The local ranks start at about the same time: wait for each peer's
 * segment, up to timeout_ms in all; a peer that does not come is gone. */
int shm_seg_map_peers(xdev_tp_t *tp, const char *job_id, int timeout_ms)
{
    uint64_t deadline = xdev_now_ms() + (uint64_t)timeout_ms;
    int missing = tp->npeers;
    bool *done = calloc((size_t)tp->npeers, sizeof *done);
    if (!done)
        return XDEV_ERR_NOMEM;
    for (;;) {
        for (int i = 0; i < tp->npeers; i++) {
            if (done[i])
                continue;
            int rc = map_peer(tp, &tp->peers[i], job_id);
            if (rc == 0 && came_and_went(&tp->peers[i]))
                rc = XDEV_ERR_PEER;
            if (rc < 0)
                tp->peers[i].gone = true;
            if (rc != 0) {
                done[i] = true;
                missing--;
            }
        }
        if (!missing || xdev_now_ms() >= deadline)
            break;
        nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
    }
    for (int i = 0; i < tp->npeers; i++)
        if (!done[i])
            tp->peers[i].gone = true;
    free(done);
    return XDEV_OK;
}

void shm_seg_unmap(shm_seg_t *seg)
{
    if (seg->hdr)
        munmap(seg->hdr, seg->bytes);
    seg->hdr = NULL;
}

/* Mark every peer that has left since the last look. Their pidfds are
 * asked in one poll(): for 64 peers it takes 3 us, where a poll() each
 * takes 80, and this runs every SHM_CHECK_MS inside a progress call. A
 * poll() a signal cut short leaves every revents 0, which says nothing. */
void shm_seg_find_gone(xdev_tp_t *tp)
{
    bool any_fd = false;
    for (int i = 0; i < tp->npeers; i++) {
        shm_peer_t *p = &tp->peers[i];
        tp->pidfds[i].fd = p->gone ? -1 : p->pidfd;
        tp->pidfds[i].events = POLLIN;
        tp->pidfds[i].revents = 0;
        any_fd |= tp->pidfds[i].fd >= 0;
    }
    if (any_fd)
        poll(tp->pidfds, (nfds_t)tp->npeers, 0);
    for (int i = 0; i < tp->npeers; i++) {
        shm_peer_t *p = &tp->peers[i];
        if (p->gone)
            continue;
        bool exited = p->pidfd >= 0 ? tp->pidfds[i].revents != 0 : xdev_process_gone(p->pid);
        if (exited || atomic_load_explicit(&p->rx.ctl->eof, memory_order_acquire) ||
            atomic_load_explicit(&p->tx.ctl->closed, memory_order_acquire))
            shm_peer_gone(tp, p);
    }
}

/* One cross-memory copy with the peer: from its memory into ours, or
 * (write) from ours into its. */
static ssize_t copy_peer(int pid, void *local_buf, size_t len, uint64_t addr, bool write)
{
    struct iovec local = { .iov_base = local_buf, .iov_len = len };
    struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
    ssize_t n;
    do
        n = write ? process_vm_writev(pid, &local, 1, &remote, 1, 0)
                  : process_vm_readv(pid, &local, 1, &remote, 1, 0);
    while (n < 0 && errno == EINTR);
    return n;
}

bool shm_seg_cma_works(xdev_tp_t *tp, shm_peer_t *p)
{
    (void)tp;
    if (p->cma == CMA_UNTESTED) {
        uint64_t magic = 0;
        bool ok = copy_peer(p->pid, &magic, sizeof magic, p->cma_probe, false) == (ssize_t)sizeof magic &&
                  magic == SHM_MAGIC;
        p->cma = ok ? CMA_WORKS : CMA_BROKEN;
    }
    return p->cma == CMA_WORKS;
}

/* Once p said goodbye, the memory we would copy to or from may be in use
 * for something else (a buffer its xdev_finalize abandoned). So we say that
 * we copy, then look for a goodbye; p says goodbye, then waits while we
 * copy (wait_out_copy in shm.c). */
int shm_seg_copy(xdev_tp_t *tp, int peer, void *local, size_t len, uint64_t remote_addr,
                 bool write)
{
    shm_peer_t *p = tp->by_rank[peer];
    if (p->gone)
        return XDEV_ERR_PEER;
    if (p->cma == CMA_BROKEN)
        return XDEV_ERR_SYSTEM;
    atomic_store_explicit(&p->tx.ctl->copying, 1, memory_order_relaxed);
    shm_fence_cheap(tp);
    int rc = XDEV_OK;
    if (atomic_load_explicit(&p->tx.ctl->closed, memory_order_relaxed))
        rc = XDEV_ERR_PEER;
    for (size_t done = 0; rc == XDEV_OK && done < len;) {
        size_t want = len - done < MAX_IO_BYTES ? len - done : MAX_IO_BYTES;
        ssize_t n = copy_peer(p->pid, (char *)local + done, want, remote_addr + done, write);
        if (n <= 0) {
            if (n < 0 && (errno == EPERM || errno == ENOSYS))
                p->cma = CMA_BROKEN; /* the data path it is, from now on */
            rc = n < 0 && errno == ESRCH ? XDEV_ERR_PEER : XDEV_ERR_SYSTEM;
        }
        done += n > 0 ? (size_t)n : 0;
    }
    atomic_store_explicit(&p->tx.ctl->copying, 0, memory_order_release);
    return rc;
}
