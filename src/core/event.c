/*
 * event.c - xdev in a caller's event loop: one progress pass on demand,
 * and one file descriptor to sleep on with an arm step before each sleep,
 * as UCT's iface_event_arm and libfabric's fi_trywait.
 *
 * The descriptor is an epoll set of every transport's wait_fd (tcp's own
 * epoll set, shm's doorbell and pidfds, the ibv completion channel, the
 * libfabric CQ's fd) and of a timerfd: transports run timers from their
 * progress (connection retries, keepalives, a stopped peer's timeout), so
 * an armed device also wakes after a tick, XDEV_TICK_MS, to let them run.
 * A transport without a wait_fd shortens the tick to XDEV_TICK_MS_POLLED,
 * which is how such a transport is waited for at all.
 *
 * Another thread that drives progress (the progress thread, or a worker
 * blocked in a receive or polling a probe beside the loop) reads the
 * transports' fds itself, so what it receives or completes leaves them
 * quiet: the caller's loop would sleep through it until the tick. So
 * xdev_arm says XDEV_ERR_BUSY when anything moved since the caller's last
 * xdev_progress, and while armed every progress pass that moves something,
 * and every completion (a cancel, or a receive that a post matches with a
 * message already in, completes outside progress), fires the tick at once
 * (event_loop_poke).
 */
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "device.h"

#define XDEV_TICK_MS 100
#define XDEV_TICK_MS_POLLED 1

int xdev_progress(xdev_t *d)
{
    if (!d)
        return XDEV_ERR_ARG;
    dev_lock(d);
    d->loop_armed = false; /* the loop is awake: nothing to poke */
    uint64_t activity = d->activity, completions = d->completions;
    progress_once(d);
    int moved = d->activity != activity || d->completions != completions;
    d->loop_seen = d->activity + d->completions;
    dev_unlock(d);
    return moved;
}

static int set_tick(xdev_t *d, long ns)
{
    struct itimerspec when = { .it_value = { .tv_sec = ns / 1000000000L,
                                             .tv_nsec = ns % 1000000000L } };
    return timerfd_settime(d->tick_fd, 0, &when, NULL);
}

/* Called with the lock held. */
static bool loop_missed_something(const xdev_t *d)
{
    return d->activity + d->completions != d->loop_seen;
}

void event_loop_poke(xdev_t *d)
{
    if (d->loop_armed && loop_missed_something(d)) {
        d->loop_armed = false;
        set_tick(d, 1);
    }
}

static int make_event_fd(xdev_t *d)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int tick = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct epoll_event ev = { .events = EPOLLIN };
    bool ok = ep >= 0 && tick >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, tick, &ev) == 0;
    for (int i = 0; ok && i < d->ntps; i++) {
        int fd = d->tps[i].ops->wait_fd(d->tps[i].tp);
        if (fd >= 0)
            ok = epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0;
    }
    if (!ok) {
        if (ep >= 0)
            close(ep);
        if (tick >= 0)
            close(tick);
        return XDEV_ERR_SYSTEM;
    }
    d->event_fd = ep;
    d->tick_fd = tick;
    return XDEV_OK;
}

int xdev_fd(xdev_t *d)
{
    if (!d)
        return XDEV_ERR_ARG;
    dev_lock(d);
    int rc = d->event_fd >= 0 ? XDEV_OK : make_event_fd(d);
    int fd = d->event_fd;
    dev_unlock(d);
    return rc == XDEV_OK ? fd : rc;
}

static int tick_ms(xdev_t *d)
{
    for (int i = 0; i < d->ntps; i++)
        if (d->tps[i].ops->wait_fd(d->tps[i].tp) < 0)
            return XDEV_TICK_MS_POLLED;
    return XDEV_TICK_MS;
}

int xdev_arm(xdev_t *d)
{
    if (!d)
        return XDEV_ERR_ARG;
    dev_lock(d);
    int rc = d->event_fd < 0                ? XDEV_ERR_ARG
             : loop_missed_something(d) ? XDEV_ERR_BUSY
                                        : arm_transports(d);
    if (rc == XDEV_OK) {
        uint64_t expirations;
        ssize_t r = read(d->tick_fd, &expirations, sizeof expirations); /* consume the last tick */
        (void)r;
        if (set_tick(d, tick_ms(d) * 1000000L) != 0)
            rc = XDEV_ERR_SYSTEM;
        d->loop_armed = true;
    }
    dev_unlock(d);
    return rc;
}
