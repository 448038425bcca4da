/*
 * harness.h - the small shared harness of the conformance suite.
 *
 * Every case runs as every rank of a job started by
 *   xdevrun -n NP --transport T xdev-conformance CASE
 * and uses only the public API (include/xdev.h). The harness gives it:
 *  - one device (h_dev) started from the environment, with h_rank/h_size,
 *  - a barrier made of xdev messages on a context no test uses,
 *  - CHECK macros that print rank, file:line and a message and exit(1),
 *  - deterministic data patterns (byte = f(seed, sender, index)) and a
 *    verifier that reports the first bad offset,
 *  - a watchdog that names the phase a hung rank was in.
 */
#ifndef XDEV_CONFORMANCE_HARNESS_H
#define XDEV_CONFORMANCE_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "xdev.h"

/* Contexts the harness keeps for itself; test traffic never uses them. */
#define H_CTX_BARRIER 0x7fff0000
#define H_CTX_CONTROL 0x7fff0001

#define KiB ((size_t)1024)
#define MiB ((size_t)1024 * 1024)
#define GiB ((size_t)1024 * 1024 * 1024)

extern xdev_t *h_dev;
extern int h_rank, h_size;
extern size_t h_eager;    /* the eager/rendezvous switch this job runs with */
extern unsigned h_flags;  /* XDEV_FLAG_* the device was started with */
extern const char *h_case;

void h_init(const char *casename);
void h_finalize(void); /* barrier, then xdev_finalize must return XDEV_OK */
extern void (*h_after_finalize)(void); /* a case's checks once finalized */
void h_barrier(void);

/* Ring neighbours: every rank sends to h_next() and receives from h_prev(). */
static inline int h_next(void) { return (h_rank + 1) % h_size; }
static inline int h_prev(void) { return (h_rank + h_size - 1) % h_size; }

/* What the rank is doing now, printed if a CHECK fails or the watchdog fires. */
void h_phase(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

double h_now(void); /* CLOCK_MONOTONIC seconds, comparable between processes */
void h_sleep_ms(int ms);
void *h_malloc(size_t n); /* never NULL: a failed allocation fails the test */

/* Small control messages on H_CTX_CONTROL (seeds, timestamps). */
void h_send_u64(int dst, int tag, uint64_t v);
uint64_t h_recv_u64(int src, int tag);

/* --- failures ------------------------------------------------------------ */

__attribute__((noreturn, format(printf, 4, 5))) void
h_fail(const char *file, int line, const char *cond, const char *fmt, ...);

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond))                                                         \
            h_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                  \
    } while (0)

/* An xdev call that must return XDEV_OK. */
#define CHECK_RC(call)                                                       \
    do {                                                                     \
        int h_rc_ = (call);                                                  \
        if (h_rc_ != XDEV_OK)                                                \
            h_fail(__FILE__, __LINE__, #call, "returned %d (%s)", h_rc_,     \
                   xdev_strerror(h_rc_));                                    \
    } while (0)

/* Every field of a receive's (or probe's) status. */
void h_check_status(const char *file, int line, const xdev_status_t *st, int src,
                    int tag, int ctx, int error, size_t count, const char *what);
#define CHECK_STATUS(st, src, tag, ctx, error, count, what)                  \
    h_check_status(__FILE__, __LINE__, (st), (src), (tag), (ctx), (error),   \
                   (count), (what))

/* A send's status: error XDEV_OK and count == bytes sent. */
void h_check_send_status(const char *file, int line, const xdev_status_t *st,
                         size_t count, const char *what);
#define CHECK_SEND_STATUS(st, count, what)                                   \
    h_check_send_status(__FILE__, __LINE__, (st), (count), (what))

/* xdev_wait on a send, then CHECK_SEND_STATUS. */
#define WAIT_SEND(req, count, what)                                          \
    do {                                                                     \
        xdev_status_t h_st_;                                                 \
        CHECK_RC(xdev_wait((req), &h_st_));                                  \
        CHECK_SEND_STATUS(&h_st_, (count), (what));                          \
    } while (0)

/* --- data patterns ------------------------------------------------------- */

#define H_GOOD ((size_t)-1)

uint8_t h_pattern_byte(uint64_t seed, int sender, size_t i);
void h_fill(void *buf, size_t len, uint64_t seed, int sender);
/* Offset of the first byte that differs from the pattern, or H_GOOD. */
size_t h_verify(const void *buf, size_t len, uint64_t seed, int sender);
void h_check_data(const char *file, int line, const void *buf, size_t len,
                  uint64_t seed, int sender, const char *what);
#define CHECK_DATA(buf, len, seed, sender, what)                             \
    h_check_data(__FILE__, __LINE__, (buf), (len), (seed), (sender), (what))

/* Bytes that must stay untouched around a receive buffer. */
#define H_GUARD_BYTE 0xA5
size_t h_verify_const(const void *buf, size_t len, uint8_t value);

/* A seeded generator (splitmix64) for shuffles and random plans. */
typedef struct { uint64_t s; } h_rng_t;
uint64_t h_rand(h_rng_t *r);
static inline uint64_t h_rand_below(h_rng_t *r, uint64_t n) { return h_rand(r) % n; }
void h_shuffle(int *v, size_t n, h_rng_t *r);

#endif
