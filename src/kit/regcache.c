/*
 * regcache.c - the registration cache (see regcache.h for why it is built
 * the way it is).
 *
 * Locking: the cache's mutex guards the entries; the transport's
 * callbacks run under it. The event thread must never wait for that
 * mutex: an munmap waits for the thread to read its event, and the
 * munmap may come from inside a free() that runs under the mutex (our own
 * or the transport's). So the thread only notes the unmapped ranges under
 * a lock of their own, and the next get applies them.
 *
 * The kernel lets the munmap return as soon as the event is read, before
 * the thread has noted it. So the thread raises `in_read` before it reads
 * and lowers it once the ranges are noted, and get waits for it to be low:
 * a get that follows an munmap in the application's order then always
 * sees that munmap's range.
 */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "regcache.h"
#include "thread.h"
#include "xdev.h"

#define DEFAULT_MAX 64
#define EV_MAX 64

struct xdev_regcache {
    xdev_regcache_params_t p;
    int mode;
    pthread_mutex_t lock;
    xdev_reg_t *entries;     /* cached, valid */
    xdev_reg_t *dropped;     /* invalidated, not yet deregistered */
    xdev_reg_t *uncached;    /* held for one use each: close ends those a
                              * finalize abandoned (the transport's close
                              * may not leave them registered) */
    unsigned nentries, max;
    uint64_t clock, regs, hits;
    uintptr_t page;
    int uffd;
    int stop_pipe[2];
    pthread_mutex_t ev_lock;  /* the noted ranges; held for nothing else */
    struct { uintptr_t start, end; } ev[EV_MAX];
    unsigned nev;
    int ev_overflow;          /* more than EV_MAX: drop every entry */
    int in_read;              /* atomic: the thread is reading events */
    pthread_t thread;
    int thread_running;
    xdev_regcache_t *next_open; /* on open_caches, for the fork handler */
};

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static xdev_regcache_t *open_caches; /* those that hold a userfaultfd */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* ---- the kernel's side: userfaultfd events ---- */

/* Entries overlapping [start, end) no longer describe the application's
 * memory. Called with the lock held. */
static void invalidate(xdev_regcache_t *c, uintptr_t start, uintptr_t end)
{
    for (xdev_reg_t **pp = &c->entries; *pp;) {
        xdev_reg_t *r = *pp;
        if (r->start < end && start < r->end) {
            *pp = r->next;
            c->nentries--;
            r->valid = 0;
            r->cached = 0;
            r->next = c->dropped;
            c->dropped = r;
        } else {
            pp = &r->next;
        }
    }
}

static void note(xdev_regcache_t *c, uint64_t start, uint64_t end)
{
    if (c->nev == EV_MAX) {
        c->ev_overflow = 1;
        return;
    }
    c->ev[c->nev].start = (uintptr_t)start;
    c->ev[c->nev].end = (uintptr_t)end;
    c->nev++;
}

/* Run as the event thread ends, however it ends: it was the only reader,
 * so from then on an unmap of a watched range would wait for ever, and one
 * may come from the thread's own exit (caught under ASan: its teardown of
 * the thread unmapped a range once registered) or from the deregistrations
 * that close runs next. Closing the uffd ends every such wait. */
static void close_uffd(void *arg)
{
    xdev_regcache_t *c = arg;
    pthread_mutex_lock(&open_lock); /* a fork now must not close it again */
    close(c->uffd);
    c->uffd = -1;
    pthread_mutex_unlock(&open_lock);
}

static void *event_thread(void *arg)
{
    xdev_regcache_t *c = arg;
    struct pollfd pf[2] = { { .fd = c->uffd, .events = POLLIN },
                            { .fd = c->stop_pipe[0], .events = POLLIN } };
    pthread_cleanup_push(close_uffd, c);
    for (;;) {
        if (poll(pf, 2, -1) < 0) /* EINTR or ENOMEM: both pass */
            continue;
        if (pf[1].revents) {
            /* Taken, not only seen: reading what close wrote orders its
             * earlier uses of c->uffd before close_uffd's (as TSan sees). */
            char stop;
            ssize_t got = read(c->stop_pipe[0], &stop, 1);
            (void)got;
            break;
        }
        struct uffd_msg m[16];
        __atomic_store_n(&c->in_read, 1, __ATOMIC_SEQ_CST);
        ssize_t n = read(c->uffd, m, sizeof m);
        pthread_mutex_lock(&c->ev_lock);
        for (ssize_t i = 0; i < n / (ssize_t)sizeof m[0]; i++) {
            if (m[i].event == UFFD_EVENT_UNMAP || m[i].event == UFFD_EVENT_REMOVE)
                note(c, m[i].arg.remove.start, m[i].arg.remove.end);
            else if (m[i].event == UFFD_EVENT_REMAP)
                note(c, m[i].arg.remap.from, m[i].arg.remap.from + m[i].arg.remap.len);
        }
        pthread_mutex_unlock(&c->ev_lock);
        __atomic_store_n(&c->in_read, 0, __ATOMIC_SEQ_CST);
    }
    pthread_cleanup_pop(1);
    return NULL;
}

/* Apply the ranges the thread noted. With the lock held. */
static void apply_events(xdev_regcache_t *c)
{
    if (c->uffd < 0)
        return;
    while (__atomic_load_n(&c->in_read, __ATOMIC_SEQ_CST))
        sched_yield();
    pthread_mutex_lock(&c->ev_lock);
    if (c->ev_overflow)
        invalidate(c, 0, UINTPTR_MAX);
    for (unsigned i = 0; i < c->nev; i++)
        invalidate(c, c->ev[i].start, c->ev[i].end);
    c->nev = 0;
    c->ev_overflow = 0;
    pthread_mutex_unlock(&c->ev_lock);
}

static int uffd_open(void)
{
    /* Unprivileged processes may have userfaultfd only for user-mode
     * faults (vm.unprivileged_userfaultfd=0, the default): all we need. */
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (fd < 0)
        fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct uffdio_api api = {
        .api = UFFD_API,
        .features = UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE |
                    UFFD_FEATURE_EVENT_REMAP | UFFD_FEATURE_PAGEFAULT_FLAG_WP,
    };
    if (ioctl(fd, UFFDIO_API, &api) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A child forked without exec would keep its copy of the userfaultfd, and
 * while it does, closing ours releases nothing: the parent's unmaps of
 * watched ranges, at close and after it, would wait for a reader that is
 * gone. Nor may the child's copy of a cache stop the parent's thread
 * through the pipe they share. So the child lets go of both at once; it
 * has no event thread, and its copies of the caches do nothing more. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&open_lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&open_lock);
}

static void fork_child(void)
{
    for (xdev_regcache_t *c = open_caches; c; c = c->next_open) {
        if (c->uffd >= 0)
            close(c->uffd);
        for (int i = 0; i < 2; i++)
            if (c->stop_pipe[i] >= 0)
                close(c->stop_pipe[i]);
        c->uffd = c->stop_pipe[0] = c->stop_pipe[1] = -1;
        c->thread_running = 0;
    }
    pthread_mutex_unlock(&open_lock);
}

static void watch_forks(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static int uffd_start(xdev_regcache_t *c)
{
    pthread_once(&fork_once, watch_forks);
    pthread_mutex_lock(&open_lock); /* a fork sees the fds it must close */
    c->next_open = open_caches;
    open_caches = c;
    c->uffd = uffd_open();
    bool opened = c->uffd >= 0 && pipe2(c->stop_pipe, O_CLOEXEC) == 0;
    pthread_mutex_unlock(&open_lock);
    return opened ? XDEV_OK : XDEV_ERR_SYSTEM;
}

/* Ask for the range's unmap events. False if userfaultfd cannot watch it
 * (a file mapping, or another userfaultfd has it, or a forked child's
 * cache, whose uffd is closed) or no thread could start to read them:
 * then it is not cached.
 *
 * The event thread starts with the first range: until a range is watched
 * no event can come, and a process of one thread keeps glibc's
 * single-threaded shortcuts: 3-5% of ibv's 8-byte latency in the VM
 * (test/bench/RESULTS.md, "One thread until the first registration"). */
static int uffd_watch(xdev_regcache_t *c, uintptr_t start, uintptr_t end)
{
    if (c->uffd < 0)
        return 0;
    if (!c->thread_running) {
        if (xdev_thread_start(&c->thread, event_thread, c) != 0)
            return 0;
        c->thread_running = 1;
    }
    struct uffdio_register reg = { .range = { .start = start, .len = end - start },
                                   .mode = UFFDIO_REGISTER_MODE_WP };
    return ioctl(c->uffd, UFFDIO_REGISTER, &reg) == 0;
}

/* ---- the cache ---- */

int xdev_regcache_open(const xdev_regcache_params_t *p, xdev_regcache_t **out)
{
    xdev_regcache_t *c = calloc(1, sizeof *c);
    if (!c)
        return XDEV_ERR_NOMEM;
    c->p = *p;
    c->uffd = -1;
    c->stop_pipe[0] = c->stop_pipe[1] = -1;
    c->page = (uintptr_t)sysconf(_SC_PAGESIZE);
    c->max = p->max_entries;
    if (!c->max)
        c->max = DEFAULT_MAX;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->ev_lock, NULL);
    c->mode = p->mode;
    if (c->mode != XDEV_REGCACHE_OFF && uffd_start(c) != XDEV_OK) {
        if (c->mode == XDEV_REGCACHE_UFFD) {
            xdev_regcache_close(c);
            return XDEV_ERR_INIT; /* asked for outright: say it cannot be had */
        }
        c->mode = XDEV_REGCACHE_OFF;
    } else if (c->mode == XDEV_REGCACHE_AUTO) {
        c->mode = XDEV_REGCACHE_UFFD;
    }
    *out = c;
    return XDEV_OK;
}

int xdev_regcache_mode(const xdev_regcache_t *c)
{
    return c->mode;
}

static void drop(xdev_regcache_t *c, xdev_reg_t *r)
{
    c->p.dereg(c->p.ctx, r);
    free(r);
}

/* Deregister what the event thread invalidated, unless still in use. */
static void reap_dropped(xdev_regcache_t *c)
{
    for (xdev_reg_t **pp = &c->dropped; *pp;) {
        xdev_reg_t *r = *pp;
        if (r->refs) {
            pp = &r->next;
            continue;
        }
        *pp = r->next;
        drop(c, r);
    }
}

static void evict_lru(xdev_regcache_t *c)
{
    xdev_reg_t **victim = NULL;
    for (xdev_reg_t **pp = &c->entries; *pp; pp = &(*pp)->next)
        if (!(*pp)->refs && (!victim || (*pp)->last_use < (*victim)->last_use))
            victim = pp;
    if (!victim)
        return;
    xdev_reg_t *r = *victim;
    *victim = r->next;
    c->nentries--;
    /* Its range stays watched: unwatching could blind us to an entry
     * that shares a page with it, and a spare event costs nothing. */
    drop(c, r);
}

int xdev_regcache_get(xdev_regcache_t *c, void *addr, size_t len, xdev_reg_t **out)
{
    uintptr_t start = (uintptr_t)addr & ~(c->page - 1);
    uintptr_t end = ((uintptr_t)addr + len + c->page - 1) & ~(c->page - 1);
    pthread_mutex_lock(&c->lock);
    apply_events(c);
    reap_dropped(c);
    c->clock++;
    for (xdev_reg_t *r = c->entries; r; r = r->next) {
        if (r->start <= start && end <= r->end) {
            r->refs++;
            r->last_use = c->clock;
            c->hits++;
            pthread_mutex_unlock(&c->lock);
            *out = r;
            return XDEV_OK;
        }
    }
    xdev_reg_t *r = calloc(1, sizeof *r);
    int rc = r ? XDEV_OK : XDEV_ERR_NOMEM;
    if (rc == XDEV_OK) {
        r->start = start;
        r->end = end;
        r->refs = 1;
        r->last_use = c->clock;
        r->valid = 1;
        /* Watch first: an unmap that races with the registration then
         * still finds the entry. */
        if (c->mode == XDEV_REGCACHE_UFFD && uffd_watch(c, start, end)) {
            if (c->nentries >= c->max)
                evict_lru(c);
            r->cached = 1;
            r->next = c->entries;
            c->entries = r;
            c->nentries++;
        }
        rc = c->p.reg(c->p.ctx, (void *)start, end - start, r);
        c->regs++;
        if (rc == XDEV_OK && !r->cached) {
            r->next = c->uncached;
            c->uncached = r;
        }
        if (rc != XDEV_OK) {
            if (r->cached)
                invalidate(c, start, end); /* moves it to dropped ... */
            for (xdev_reg_t **pp = &c->dropped; *pp; pp = &(*pp)->next)
                if (*pp == r) { /* ... from which it leaves unregistered */
                    *pp = r->next;
                    break;
                }
            free(r);
            r = NULL;
        }
    }
    pthread_mutex_unlock(&c->lock);
    *out = r;
    return rc;
}

void xdev_regcache_put(xdev_regcache_t *c, xdev_reg_t *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&c->lock);
    r->refs--;
    if (!r->refs && !r->cached && r->valid) {
        xdev_reg_t **pp = &c->uncached; /* a few: the rendezvous under way */
        while (*pp != r)
            pp = &(*pp)->next;
        *pp = r->next;
        drop(c, r); /* never cached: a registration for one use */
    } else {
        reap_dropped(c);
    }
    pthread_mutex_unlock(&c->lock);
}

void xdev_regcache_revoke(xdev_regcache_t *c, xdev_reg_t *r)
{
    pthread_mutex_lock(&c->lock);
    if (r->cached)
        invalidate(c, r->start, r->end); /* (and what overlaps it: registered again if used) */
    pthread_mutex_unlock(&c->lock);
}

void xdev_regcache_stats(xdev_regcache_t *c, uint64_t *regs, uint64_t *hits)
{
    pthread_mutex_lock(&c->lock);
    *regs = c->regs;
    *hits = c->hits;
    pthread_mutex_unlock(&c->lock);
}

void xdev_regcache_close(xdev_regcache_t *c)
{
    if (!c)
        return;
    if (c->thread_running) {
        if (write(c->stop_pipe[1], "x", 1) != 1)
            pthread_cancel(c->thread);
        pthread_join(c->thread, NULL); /* it closed the uffd */
    } else if (c->uffd >= 0) {
        close(c->uffd);
    }
    while (c->entries) {
        xdev_reg_t *r = c->entries;
        c->entries = r->next;
        drop(c, r);
    }
    while (c->dropped) {
        xdev_reg_t *r = c->dropped;
        c->dropped = r->next;
        drop(c, r);
    }
    while (c->uncached) {
        xdev_reg_t *r = c->uncached;
        c->uncached = r->next;
        drop(c, r);
    }
    pthread_mutex_lock(&open_lock);
    for (xdev_regcache_t **pp = &open_caches; *pp; pp = &(*pp)->next_open)
        if (*pp == c) {
            *pp = c->next_open;
            break;
        }
    pthread_mutex_unlock(&open_lock);
    for (int i = 0; i < 2; i++)
        if (c->stop_pipe[i] >= 0)
            close(c->stop_pipe[i]);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->ev_lock);
    free(c);
}
