/*
 * progress.c - how a waiting caller drives the transports.
 *
 * Busy-polling gives the lowest latency but starves other ranks when a
 * node runs more ranks than cores, so a wait spins for a short while,
 * then yields the core between polls, then sleeps on the transport's file
 * descriptor. The device lock is dropped whenever the waiter yields or
 * sleeps so that other threads can post and complete requests meanwhile,
 * and while it spins it gives threads blocked on the lock a turn.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include "device.h"
#include "../kit/thread.h"

#define SPIN_NS 200000ull       /* pure busy-polling */
#define YIELD_NS 5000000ull     /* then polling with sched_yield between */
#define SLEEP_MS_SINGLE 10      /* then sleeping in poll(); nobody else can */
#define SLEEP_MS_MULTI 1        /* complete our request but the network, */
                                /* unless other threads share the device */
#define TURN_YIELDS 8           /* how long a turn given waits to be taken */
#define NAP_NS 50000ull         /* instead of sleeping on shm, which has no fd */
#define NAP_NS_IDLE 2000000ull  /* the progress thread's longest nap */

uint64_t xdev_clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t xdev_now_ns(void)
{
    return xdev_clock_ns(CLOCK_MONOTONIC);
}

uint64_t xdev_now_ms(void)
{
    return xdev_now_ns() / 1000000ull;
}

uint64_t xdev_now_coarse_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

/* How many polls a spinning wait makes between readings of the clock. A
 * poll of an idle ring costs a few ns and the clock about 20 where it is
 * read in user space (TSC); where it is a system call (a VM's HPET or
 * acpi_pm clock source: 2-3 us under emulation here), an arrival during a
 * reading waits that long to be seen. So the stride grows with what one
 * reading costs, the cheapest of five (test/bench/RESULTS.md, 2026-11-30). */
#define CLOCK_STRIDE_MIN 16
#define CLOCK_STRIDE_MAX 1024
#define CLOCK_NS_PER_STRIDE 64 /* a reading's cost per 16 polls, at most */

unsigned progress_clock_stride(uint64_t reading_ns)
{
    unsigned stride = CLOCK_STRIDE_MIN;
    while (stride < CLOCK_STRIDE_MAX &&
           reading_ns > (uint64_t)CLOCK_NS_PER_STRIDE * (stride / CLOCK_STRIDE_MIN))
        stride *= 2;
    return stride;
}

uint64_t progress_clock_reading_ns(void)
{
    uint64_t cost = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t t0 = xdev_now_ns(), t1 = xdev_now_ns();
        if (t1 - t0 < cost)
            cost = t1 - t0;
    }
    return cost;
}

void xdev_core_moved(xdev_t *d)
{
    d->moved++;
}

bool xdev_core_lock_wanted(const xdev_t *d)
{
    return __atomic_load_n(&d->lock_waiters, __ATOMIC_RELAXED) != 0;
}

XDEV_HOT void progress_once(xdev_t *d)
{
    bool woke = d->tps_armed;
    d->tps_armed = false;
    for (int i = 0; i < d->ntps; i++)
        d->tps[i].ops->progress(d->tps[i].tp, woke);
    if (d->loop_armed)
        event_loop_poke(d); /* another thread moved what the loop sleeps on */
}

/* Sleep until a transport has work, xdev_wakeup is called, or ms pass,
 * unless a transport has work already (it says so when armed). A
 * transport with nothing to sleep on can only be polled: then nap for
 * nap_ns (still woken by xdev_wakeup) and come back, which bounds the
 * extra latency after a long idle wait while an idle rank (or the progress
 * thread) leaves the core to others. */
static void sleep_on_transports(xdev_t *d, int ms, uint64_t nap_ns)
{
    if (arm_transports(d) != XDEV_OK)
        return;
    struct pollfd p[XDEV_MAX_TRANSPORTS + 1];
    bool pollable = true;
    for (int i = 0; i < d->ntps; i++) {
        p[i] = (struct pollfd){ .fd = d->tps[i].ops->wait_fd(d->tps[i].tp), .events = POLLIN };
        pollable &= p[i].fd >= 0;
    }
    struct pollfd *wake = &p[pollable ? d->ntps : 0];
    *wake = (struct pollfd){ .fd = d->wake_fd, .events = POLLIN };
    nfds_t n = pollable ? (nfds_t)d->ntps + 1 : 1;
    dev_unlock(d);
    if (pollable)
        poll(p, n, ms);
    else
        ppoll(wake, 1, &(struct timespec){ .tv_nsec = (long)nap_ns }, NULL);
    if (wake->revents & POLLIN) {
        uint64_t v;
        ssize_t r = read(d->wake_fd, &v, sizeof v); /* others see the count */
        (void)r;
    }
    dev_lock(d);
}

int arm_transports(xdev_t *d)
{
    d->tps_armed = true; /* even if one says busy: its arm may have taken in work */
    for (int i = 0; i < d->ntps; i++) {
        int rc = d->tps[i].ops->arm(d->tps[i].tp);
        if (rc != XDEV_OK)
            return rc;
    }
    return XDEV_OK;
}

unsigned wake_mark(const xdev_t *d)
{
    return d ? __atomic_load_n(&d->wakeups, __ATOMIC_ACQUIRE) : 0;
}

void xdev_wakeup_signal(xdev_t *d)
{
    int saved = errno; /* callable from a signal handler */
    __atomic_add_fetch(&d->wakeups, 1, __ATOMIC_RELEASE);
    uint64_t one = 1;
    if (d->wake_fd >= 0 && write(d->wake_fd, &one, sizeof one) < 0) {
        /* the counter is full: a wakeup is pending anyway */
    }
    errno = saved;
}

static unsigned lock_turns(const xdev_t *d)
{
    return __atomic_load_n(&d->lock_turns, __ATOMIC_RELAXED);
}

/* We let go of the lock (it was at `turns` then): give threads blocked on
 * it a turn before we take it back. A mutex gives none while its holder
 * takes it back at once, so wait, a few yields at most, until one of them
 * got in. */
static void await_turn(xdev_t *d, unsigned turns)
{
    for (int i = 0; i < TURN_YIELDS && lock_turns(d) == turns &&
                    __atomic_load_n(&d->lock_waiters, __ATOMIC_RELAXED);
         i++)
        sched_yield();
}

/* A waiter gives turns only once it has kept threads blocked for as long
 * as an idle spin lasts (SPIN_NS): only a waiter that never lets go by
 * itself (its traffic keeps moving, or its transport stays busy) gives
 * them, and then rarely, for threads that all wait and pass the lock
 * round at every chance get nothing done (eight such threads per rank
 * were 25 times slower). */
static void give_turn(xdev_t *d)
{
    unsigned turns = lock_turns(d);
    dev_unlock(d);
    await_turn(d, turns);
    dev_lock(d);
}

/* The backoff clock restarts whenever a message arrives, a send finishes
 * or a transport moves part of a long message (xdev_core_moved), so
 * traffic is busy-polled throughout and only an idle wait backs off.
 * Counting arrivals and finished sends alone, a 4 MiB tcp message (1 ms)
 * counted as idle after SPIN_NS, and yielding between its polls cost a
 * stream of them 8%. The deadline is looked at with the clock, never in
 * the first polls: the fast path pays nothing for it. But it is looked at
 * under traffic too, every 4 * clock_stride polls and after each turn
 * given (which may take a while), and wakeups (a load) at every poll:
 * arrivals for other threads keep the backoff clock at its start, and a
 * waiter that looked at both only once idle missed a wakeup for 2 s and
 * its deadline by 360 ms while another thread received a stream. */
XDEV_HOT int progress_until(xdev_t *d, bool (*done)(xdev_t *, void *), void *arg, int timeout_ms,
                            unsigned woken)
{
    bool multi = !(d->flags & XDEV_FLAG_SINGLE_THREAD);
    uint64_t start = 0, seen = d->activity + d->moved;
    uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : xdev_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    bool yielding = false;
    uint64_t blocking_since = 0; /* others blocked on our lock since then, */
    unsigned turns_seen = 0;     /* ...none of them got in since */
    if (done(d, arg))
        return XDEV_OK;
    for (unsigned spins = 0, polls = 1;; spins++, polls++) {
        progress_once(d);
        if (done(d, arg))
            return XDEV_OK;
        if (wake_mark(d) != woken)
            return XDEV_ERR_WOKEN;
        /* (a poll may be long: a piece of a single copy) */
        if (!multi || !__atomic_load_n(&d->lock_waiters, __ATOMIC_RELAXED)) {
            blocking_since = 0;
        } else if (!blocking_since || lock_turns(d) != turns_seen) {
            blocking_since = xdev_now_ns();
            turns_seen = lock_turns(d);
        } else if (xdev_now_ns() - blocking_since >= SPIN_NS) {
            give_turn(d);
            blocking_since = 0;
            polls = 0; /* look at the clock below */
        }
        if (d->activity + d->moved != seen) {
            seen = d->activity + d->moved;
            spins = 0;
            start = 0;
            yielding = false;
        }
        /* While spinning, read the clock only every clock_stride-th poll
         * (a power of two; progress_clock_stride). */
        bool idle = spins >= 4 * d->clock_stride &&
                    (yielding || !(spins & (d->clock_stride - 1)));
        if (!idle && (polls & (4 * d->clock_stride - 1)))
            continue;
        uint64_t now = xdev_now_ns();
        if (now >= deadline)
            return XDEV_ERR_TIMEOUT;
        if (!idle)
            continue; /* traffic: spin on */
        uint64_t waited = start ? now - start : (start = now, 0);
        if (waited < SPIN_NS)
            continue;
        if (waited < YIELD_NS) {
            yielding = true;
            dev_unlock(d);
            sched_yield();
            dev_lock(d);
        } else {
            uint64_t left = deadline - now; /* > 0 */
            int ms = multi ? SLEEP_MS_MULTI : SLEEP_MS_SINGLE;
            if (left < (uint64_t)ms * 1000000ull)
                ms = (int)(left / 1000000ull) + 1;
            sleep_on_transports(d, ms, left < NAP_NS ? left : NAP_NS);
        }
    }
}

/* The thread naps longer the longer nothing moves (where it cannot sleep
 * on a file descriptor), so that idle it costs next to no CPU; any traffic
 * brings it back to short naps. */
static void *progress_main(void *arg)
{
    xdev_t *d = arg;
    uint64_t seen = 0, nap = NAP_NS;
    while (!__atomic_load_n(&d->progress_thread_stop, __ATOMIC_ACQUIRE)) {
        dev_lock(d);
        progress_once(d);
        nap = d->activity != seen ? NAP_NS : nap * 2 < NAP_NS_IDLE ? nap * 2 : NAP_NS_IDLE;
        seen = d->activity;
        sleep_on_transports(d, 10, nap);
        unsigned turns = lock_turns(d);
        dev_unlock(d);
        await_turn(d, turns); /* else it takes the lock back at once */
    }
    return NULL;
}

int progress_thread_start(xdev_t *d)
{
    if (xdev_thread_start(&d->progress_thread, progress_main, d) != 0)
        return XDEV_ERR_SYSTEM;
    d->progress_thread_running = true;
    return XDEV_OK;
}

void progress_thread_stop(xdev_t *d)
{
    if (!d->progress_thread_running)
        return;
    __atomic_store_n(&d->progress_thread_stop, true, __ATOMIC_RELEASE);
    pthread_join(d->progress_thread, NULL);
    d->progress_thread_running = false;
}
