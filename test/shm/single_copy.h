/*
 * single_copy.h - for the shm tests that tell a single copy from a stream
 * by whether a receive completes while its sender sleeps: the clock, the
 * nap, and whether this user may read a peer process at all.
 */
#ifndef XDEV_TEST_SINGLE_COPY_H
#define XDEV_TEST_SINGLE_COPY_H

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static inline double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void sleep_ms(long ms)
{
    nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000 }, NULL);
}

/* Yama's ptrace_scope 1 or more lets only root (CAP_SYS_PTRACE) read a
 * process that is not its descendant. */
static inline int single_copy_allowed(void)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int scope = 0;
    if (f) {
        if (fscanf(f, "%d", &scope) != 1) scope = 0;
        fclose(f);
    }
    return scope == 0 || geteuid() == 0;
}

#endif
