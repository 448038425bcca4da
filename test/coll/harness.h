/*
 * harness.h - the small harness of the libxdev_coll tests.
 *
 * One program, xdev-coll-test CASE, runs as every rank of a job started by
 * xdevrun (any size from 1). It gives each case the device, the world
 * group's helpers, CHECK macros that name rank and phase and exit(1),
 * deterministic data patterns, and a watchdog (alarm) that names the phase
 * a hung rank was in.
 */
#ifndef XDEV_COLL_TEST_HARNESS_H
#define XDEV_COLL_TEST_HARNESS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "xdev.h"
#include "xdev_coll.h"

#define KiB ((size_t)1024)
#define MiB ((size_t)1024 * 1024)

extern xdev_t *t_dev;
extern int t_rank, t_size;

void t_init(const char *casename);
void t_finalize(void);
void t_phase(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
double t_now(void);
void *t_malloc(size_t n); /* never NULL */

__attribute__((noreturn, format(printf, 4, 5))) void
t_fail(const char *file, int line, const char *cond, const char *fmt, ...);
#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) t_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);         \
    } while (0)
#define CHECK_RC(call)                                                       \
    do {                                                                     \
        int t_rc_ = (call);                                                  \
        if (t_rc_ != XDEV_OK)                                                \
            t_fail(__FILE__, __LINE__, #call, "returned %d (%s)", t_rc_,     \
                   xdev_strerror(t_rc_));                                    \
    } while (0)

/* Byte i of the data member `who` contributes under `seed`. */
static inline uint8_t t_byte(uint64_t seed, int who, size_t i)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + (uint64_t)who * 0xBF58476D1CE4E5B9ull + i;
    x ^= x >> 29;
    x *= 0x94D049BB133111EBull;
    return (uint8_t)(x >> 56);
}
void t_fill(void *buf, size_t len, uint64_t seed, int who);
/* First offset that differs from the pattern, or (size_t)-1. */
size_t t_verify(const void *buf, size_t len, uint64_t seed, int who);
#define CHECK_DATA(buf, len, seed, who, ...)                                 \
    do {                                                                     \
        size_t t_at_ = t_verify((buf), (len), (seed), (who));                \
        if (t_at_ != (size_t)-1) {                                           \
            fprintf(stderr, "[rank %d] bad byte at offset %zu of %zu\n",    \
                    t_rank, t_at_, (size_t)(len));                           \
            t_fail(__FILE__, __LINE__, "data", __VA_ARGS__);                 \
        }                                                                    \
    } while (0)

/* A group of all ranks, with algorithms forced by setting the variable
 * (e.g. "XDEV_COLL_BCAST") to alg, or NULL for automatic choice, on a fresh
 * context. */
xdev_coll_group_t *t_world(const char *var, const char *alg);
int t_next_ctx(void);

/* Cases. */
int case_data(void);    /* bcast, gather(v), scatter(v), allgather(v), alltoall(v) */
int case_reduce(void);  /* barrier, reduce, allreduce, reduce_scatter, scan */
int case_groups(void);  /* subgroups, two contexts, point-to-point interleaved */
int case_args(void);    /* bad arguments change nothing */
int case_mismatch(void); /* a rank's own v-count off: TRUNCATE there, told to all; finalizes */
int case_wildcard(void); /* XDEV_WILDCARD_FAILS: a non-member's finalize breaks no group */
int case_kill(const char *family, const char *alg, const char *when); /* a member dies mid-collective */

/* Sizes the sweep uses for this process count (bytes), ending with (size_t)-1. */
const size_t *t_sizes(void);

#endif
