/*
 * progress.c - how a waiting caller drives the transports.
 *
 * Busy-polling gives the lowest latency but starves other ranks when a
 * node runs more ranks than cores, so a wait spins for a short while,
 * then yields the core between polls, then sleeps on the transport's file
 * descriptor. The device lock is dropped whenever the waiter yields or
 * sleeps so that other threads can post and complete requests meanwhile.
 */
#include <poll.h>
#include <sched.h>
#include <time.h>
#include "device.h"

#define SPIN_NS 200000ull       /* pure busy-polling */
#define YIELD_NS 5000000ull     /* then polling with sched_yield between */
#define SLEEP_MS_SINGLE 10      /* then sleeping in poll(); nobody else can */
#define SLEEP_MS_MULTI 1        /* complete our request but the network, */
                                /* unless other threads share the device */
#define NAP_NS 50000ull         /* instead of sleeping on shm, which has no fd */
#define NAP_NS_IDLE 2000000ull  /* the progress thread's longest nap */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t xdev_now_ms(void)
{
    return now_ns() / 1000000ull;
}

uint64_t xdev_now_coarse_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

void progress_once(xdev_t *d)
{
    for (int i = 0; i < d->ntps; i++)
        d->tps[i].ops->progress(d->tps[i].tp, 0);
}

/* Sleep until a transport has work or ms pass. A transport with nothing to
 * sleep on (shared memory) can only be polled: then nap for nap_ns and come
 * back, which bounds the extra latency after a long idle wait while an
 * idle rank (or the progress thread) leaves the core to others. */
static void sleep_on_transports(xdev_t *d, int ms, uint64_t nap_ns)
{
    struct pollfd p[XDEV_MAX_TRANSPORTS];
    bool pollable = true;
    for (int i = 0; i < d->ntps; i++) {
        p[i] = (struct pollfd){ .fd = d->tps[i].ops->wait_fd(d->tps[i].tp), .events = POLLIN };
        pollable &= p[i].fd >= 0;
    }
    dev_unlock(d);
    if (pollable)
        poll(p, (nfds_t)d->ntps, ms);
    else
        nanosleep(&(struct timespec){ .tv_nsec = (long)nap_ns }, NULL);
    dev_lock(d);
}

/* The backoff clock restarts whenever traffic moves, so a long transfer
 * is busy-polled throughout and only an idle wait backs off. */
void progress_until(xdev_t *d, bool (*done)(xdev_t *, void *), void *arg)
{
    bool multi = !(d->flags & XDEV_FLAG_SINGLE_THREAD);
    uint64_t start = 0, seen = d->activity;
    bool yielding = false;
    for (unsigned spins = 0; !done(d, arg); spins++) {
        progress_once(d);
        if (done(d, arg))
            return;
        if (d->activity != seen) {
            seen = d->activity;
            spins = 0;
            start = 0;
            yielding = false;
        }
        /* While spinning, read the clock only every 16th poll: a poll of
         * an idle ring costs a few nanoseconds, the clock about twenty. */
        if (spins < 64 || (!yielding && spins % 16))
            continue;
        uint64_t waited = start ? now_ns() - start : (start = now_ns(), 0);
        if (waited < SPIN_NS) {
            if (multi) {
                dev_unlock(d); /* let other threads in now and then */
                dev_lock(d);
            }
        } else if (waited < YIELD_NS) {
            yielding = true;
            dev_unlock(d);
            sched_yield();
            dev_lock(d);
        } else {
            sleep_on_transports(d, multi ? SLEEP_MS_MULTI : SLEEP_MS_SINGLE, NAP_NS);
            progress_once(d);
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
        dev_unlock(d);
    }
    return NULL;
}

int progress_thread_start(xdev_t *d)
{
    if (pthread_create(&d->progress_thread, NULL, progress_main, d) != 0)
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
