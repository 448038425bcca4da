/*
 * fault_util.h - the little every fault test shares: failure reporting that
 * keeps going (CHECK) or stops (REQUIRE), a watchdog that turns a hang into a
 * failure, byte patterns, a monotonic clock, and a barrier made of ordinary
 * xdev messages on a reserved context so the tests need nothing but xdev.h.
 */
#ifndef FAULT_UTIL_H
#define FAULT_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "xdev.h"

/* Context reserved for fault_barrier; tests use their own small contexts. */
#define FAULT_BARRIER_CTX 0x7fff0001

/* Number of failed checks so far in this process. */
extern int fault_failures;

/* Name the test (for messages) and arm a watchdog: if the process is still
 * running after watchdog_s seconds it prints where it was and exits 3. */
void fault_setup(const char *name, int watchdog_s);
/* Record what the process is doing, shown if the watchdog fires. */
void fault_step(const char *what);
/* Rank shown in messages; fault_setup takes it from XDEV_RANK. */
void fault_set_rank(int rank);

void fault_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* As fault_fail, naming the failed condition `what` first. */
void fault_fail_cond(const char *file, int line, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Print a line prefixed with the test name and rank. */
void fault_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print PASS/FAIL and return the process exit status (0 or 1). */
int fault_finish(void);

/* CHECK(cond, fmt, ...): count a failure and go on; REQUIRE also exits. */
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) fault_fail_cond(__FILE__, __LINE__, #cond, __VA_ARGS__);   \
    } while (0)

#define REQUIRE(cond, ...)                                                     \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fault_fail_cond(__FILE__, __LINE__, #cond, __VA_ARGS__);           \
            fault_abort();                                                     \
        }                                                                      \
    } while (0)

/* Expect `call` to return exactly `want`. */
#define CHECK_RC(call, want)                                                   \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ != (want))                                                     \
            fault_fail(__FILE__, __LINE__, "%s returned %d (%s), want %d (%s)", \
                       #call, rc_, xdev_strerror(rc_), (int)(want),            \
                       xdev_strerror(want));                                   \
    } while (0)

#define REQUIRE_RC(call, want)                                                 \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ != (want)) {                                                   \
            fault_fail(__FILE__, __LINE__, "%s returned %d (%s), want %d (%s)", \
                       #call, rc_, xdev_strerror(rc_), (int)(want),            \
                       xdev_strerror(want));                                   \
            fault_abort();                                                     \
        }                                                                      \
    } while (0)

/* Exit 1 now, after printing FAIL. */
void fault_abort(void) __attribute__((noreturn));

/* Seconds on CLOCK_MONOTONIC (shared by every process on the host). */
double fault_now(void);
void fault_sleep_ms(int ms);
/* Stop this process (SIGSTOP); a child it forks continues it after
 * `seconds`. */
void fault_stop_self(double seconds);
/* Start a device, in a job that must have `size` ranks; returns the
 * caller's rank, which messages then show. */
int fault_start(xdev_t **dev, int size);
/* Start a device in a job of `size` ranks in which rank `victim` leaves
 * without a word (no message, no finalize) `after_s` seconds later;
 * returns the caller's rank, never on the victim. */
int fault_start_with_silent(xdev_t **dev, int size, int victim, double after_s);

/* Deterministic bytes derived from seed; verify returns the index of the
 * first wrong byte, or (size_t)-1 if all are right. */
void fault_fill(void *buf, size_t len, uint32_t seed);
size_t fault_verify(const void *buf, size_t len, uint32_t seed);

/* The randomized tests' bytes: a message's content is a function of one
 * 64-bit key (itself a hash of who sent it, to whom and which it is), so
 * a receiver checks every byte from the key alone. fault_mix is the
 * splitmix64 finalizer the keys are made with. */
uint64_t fault_mix(uint64_t x);
void fault_fill_keyed(void *buf, size_t len, uint64_t key);
/* Index of the first wrong byte, or (size_t)-1. */
size_t fault_verify_keyed(const void *buf, size_t len, uint64_t key);

/* Barrier over xdev messages rooted at rank 0. fault_barrier_skip leaves
 * out one rank (a dead one), rooted at rank 1 when that is rank 0; skip =
 * -1 leaves out nobody. Returns the first xdev error, XDEV_OK otherwise. */
int fault_barrier(xdev_t *dev);
int fault_barrier_skip(xdev_t *dev, int skip);

/* Poll req with xdev_test until it completes or timeout_s passes. Returns
 * xdev_test's error, or XDEV_OK with *done = 0 on timeout (the request is
 * then still active). */
int fault_wait_for(xdev_request_t *req, xdev_status_t *st, double timeout_s, int *done);

/* Write text to $XDEV_TEST_OUT/rank.<rank>; returns 0 on success. */
int fault_write_result(int rank, const char *text);
/* Write text to $XDEV_TEST_OUT/name, if XDEV_TEST_OUT is set: what a
 * driver script reads besides the verdict (a victim's rank, a kill time). */
void fault_write_out(const char *name, const char *text);
/* A time (fault_now seconds) another process writes to $XDEV_TEST_OUT/name,
 * such as when it killed a rank: waits up to 5 s for it, -1 if none. */
double fault_read_time(const char *name);

#endif
