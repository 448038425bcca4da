/*
 * coll.h - libxdev_coll's insides: the group, the per-call request batch,
 * algorithm selection and the reduction kernels. Only include/xdev.h is
 * used underneath.
 */
#ifndef XDEV_COLL_INTERNAL_H
#define XDEV_COLL_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "xdev_coll.h"

/* Families of collectives whose algorithm is chosen per call. */
enum coll_family {
    F_BARRIER,
    F_BCAST,
    F_GATHER,
    F_SCATTER,
    F_ALLGATHER,
    F_ALLTOALL,
    F_REDUCE,
    F_ALLREDUCE,
    F_REDUCE_SCATTER,
    F_SCAN,
    F_COUNT
};

/* Algorithm numbers, per family; index 0 is the short-message choice and
 * index 1 the long-message one (the barrier's are chosen by group size
 * instead, in barrier.c); a direct (one-round) algorithm for short
 * messages in small groups, where a family has one, comes after them (see
 * config.c for their names). */
enum { BARRIER_DISSEMINATION, BARRIER_LINEAR };
enum { BCAST_BINOMIAL, BCAST_SCATTER_RING, BCAST_DIRECT };
enum { GATHER_BINOMIAL, GATHER_LINEAR };
enum { SCATTER_BINOMIAL, SCATTER_LINEAR };
enum { ALLGATHER_GATHER_BCAST, ALLGATHER_RING, ALLGATHER_DIRECT };
enum { ALLTOALL_LINEAR, ALLTOALL_PAIRWISE };
enum { REDUCE_BINOMIAL, REDUCE_RING_GATHER };
enum { ALLREDUCE_RECURSIVE_DOUBLING, ALLREDUCE_RING, ALLREDUCE_REDUCE_BCAST, ALLREDUCE_DIRECT };
enum { REDUCE_SCATTER_REDUCE_SCATTERV, REDUCE_SCATTER_RING };
enum { SCAN_RECURSIVE_DOUBLING, SCAN_LINEAR };

#define COLL_AUTO (-1)

typedef struct coll_config {
    int forced[F_COUNT];      /* an algorithm number, or COLL_AUTO */
    size_t long_min[F_COUNT]; /* bytes from which the long algorithm is used */
    size_t crowded_max[F_COUNT]; /* long ones up to this many bytes in a crowd */
    size_t direct_max[F_COUNT]; /* a direct algorithm up to this many bytes ... */
    int direct_members[F_COUNT]; /* ... in groups of at most this many */
    long spin_ns;             /* busy-poll this long before yielding the CPU */
    long yield_ns;            /* then yield this long before napping */
} coll_config_t;

struct xdev_coll_group {
    xdev_t *dev;
    int ctx;
    int size, rank;     /* in the group */
    int *ranks;         /* group rank -> device rank */
    int broken;         /* XDEV_OK, or the error that broke the group */
    coll_config_t cfg;
    xdev_request_t watch; /* the failure-notice receive (size > 1) */
    int watch_done;
    int watch_due;      /* the running call has not looked at it yet */
    uint32_t calls;     /* collectives begun, the running one included */
    uint32_t failed_call; /* the earliest later call a notice named ... */
    int failed_ahead;     /* ... if one did (see watch_fired) */
    /* A notice carries the number of the call that failed at its sender
     * (calls there), little-endian: members count the same calls. */
    unsigned char notice[4];
    /* The running collective's requests; never moved while active. */
    xdev_request_t *reqs;
    struct coll_expect {
        size_t bytes;   /* a receive must deliver this many; SIZE_MAX for sends */
        int tag;        /* and carry this tag, if posted for any (else -1) */
    } *expect;
    int nreq, cap;
    void *spare[2];     /* scratch blocks kept for the next calls, or NULL */
    struct xdev_coll_group *next_live; /* group.c's list of the groups that exist */
};

/* config.c */
int coll_config_load(coll_config_t *cfg, xdev_t *dev, int group_size);
/* The algorithm for a call of `family` moving `bytes` (the size the
 * thresholds are compared with); `long_ok` is 0 when the long algorithm
 * cannot serve this call. */
int coll_pick(const xdev_coll_group_t *g, enum coll_family family, size_t bytes, int long_ok);

/* p2p.c: every collective is coll_begin, posts and waits, coll_end. */
int coll_begin(xdev_coll_group_t *g);
int coll_end(xdev_coll_group_t *g, int rc);
/* A size mismatch a rank sees in its own arguments: the collective fails
 * with XDEV_ERR_TRUNCATE and the others are told, as for one seen later. */
int coll_mismatch(xdev_coll_group_t *g);
/* (Re)post the failure-notice receive; watch_done is set if that fails. */
int coll_post_watch(xdev_coll_group_t *g);
int coll_isend(xdev_coll_group_t *g, const void *buf, size_t len, int peer, int phase);
int coll_irecv(xdev_coll_group_t *g, void *buf, size_t len, int peer, int phase);
/* A receive of any tag from peer that fails the collective (a mismatch)
 * unless its message carries tag; see coll_ring_reduce_scatter. */
int coll_irecv_tagged(xdev_coll_group_t *g, void *buf, size_t len, int peer, int tag);
/* Wait for every posted request of the call, or a failure notice. */
int coll_waitall(xdev_coll_group_t *g);
/* The same where this member waits on every other one: each sends to it
 * (an exchange), or each must arrive before it is let go (a barrier).
 * See p2p.c. */
int coll_waitall_from_all(xdev_coll_group_t *g);
/* Copy this member's own block, polling between pieces while it has
 * transfers posted. See p2p.c. */
void coll_copy_polling(xdev_coll_group_t *g, void *dst, const void *src, size_t n);
int coll_sendrecv(xdev_coll_group_t *g, const void *sbuf, size_t slen, int dst, void *rbuf,
                  size_t rlen, int src, int phase);
/* One round of the direct algorithms: len bytes of sbuf to every other
 * member, member q's len bytes into rbuf + q * len; then wait for all. */
int coll_exchange_all(xdev_coll_group_t *g, const void *sbuf, size_t len, void *rbuf, int phase);

/* Keep memory that holds requests xdev still owns (a failed collective's,
 * whose buffers xdev may still fill) for the life of the process. */
void coll_bury(void *block);

/* group.c: a collective's scratch memory. coll_alloc hands out a block the
 * group kept from an earlier call when one is big enough (never NULL for
 * n == 0); coll_free keeps the block for later calls, or buries it while
 * requests the call posted are still active (a failed collective): they
 * may still read or write it until xdev_finalize. */
void *coll_alloc(xdev_coll_group_t *g, size_t n);
void coll_free(xdev_coll_group_t *g, void *block);

/* ops.c */
/* The element size and the bytes of `count` elements of op; 0 if op is bad
 * or the bytes overflow. */
int coll_op_bytes(const xdev_coll_op_t *op, size_t count, size_t *esz, size_t *bytes);
/* The argument checks and coll_begin of a call in which every member
 * reduces `count` elements from sbuf into rbuf (allreduce, scan). */
int coll_begin_reduction(xdev_coll_group_t *g, const void *sbuf, const void *rbuf, size_t count,
                         const xdev_coll_op_t *op, size_t *esz, size_t *bytes);
/* inout[i] = in[i] op inout[i] */
void coll_op_apply(const xdev_coll_op_t *op, const void *in, void *inout, size_t count);

/* Argument checks shared by the families. */
static inline int coll_buf_ok(const void *buf, size_t len) { return buf != NULL || len == 0; }
static inline int coll_root_ok(const xdev_coll_group_t *g, int root)
{
    return root >= 0 && root < g->size;
}
/* Element count * element size, or 0 with *ok = 0 on overflow. */
static inline size_t coll_bytes(size_t count, size_t elem, int *ok)
{
    if (elem && count > SIZE_MAX / elem) {
        *ok = 0;
        return 0;
    }
    return count * elem;
}

/* Copies that tolerate zero lengths (and so NULL) and in-place calls. */
static inline void coll_copy(void *dst, const void *src, size_t n)
{
    if (n && dst != src) memcpy(dst, src, n);
}
static inline void *coll_at(void *p, size_t off) { return off ? (char *)p + off : p; }
static inline const void *coll_cat(const void *p, size_t off)
{
    return off ? (const char *)p + off : p;
}

/* Block i of a v-form algorithm: counts[i] bytes at displs[i]. The plain
 * calls pass no arrays, and then every block is len bytes at i * len, so
 * that they build none per call. */
static inline size_t coll_count_of(const size_t *counts, size_t len, int i)
{
    return counts ? counts[i] : len;
}
static inline size_t coll_displ_of(const size_t *displs, size_t len, int i)
{
    return displs ? displs[i] : (size_t)i * len;
}

/* Group-relative rank arithmetic. */
static inline int coll_rel(const xdev_coll_group_t *g, int root)
{
    return (g->rank - root + g->size) % g->size;
}
static inline int coll_abs(const xdev_coll_group_t *g, int vr, int root)
{
    return (vr + root) % g->size;
}

/* Block i of `count` elements split into `p` nearly equal blocks. */
static inline size_t coll_block_start(size_t count, int p, int i)
{
    size_t base = count / (size_t)p, extra = count % (size_t)p;
    return (size_t)i * base + ((size_t)i < extra ? (size_t)i : extra);
}
static inline size_t coll_block_len(size_t count, int p, int i)
{
    return count / (size_t)p + ((size_t)i < count % (size_t)p);
}

/* Algorithms shared between families (each in its family's file). */
int coll_bcast_binomial(xdev_coll_group_t *g, void *buf, size_t len, int root, int phase);
int coll_gather_binomial(xdev_coll_group_t *g, const void *sbuf, size_t len, void *rbuf,
                         int root, int phase);
int coll_reduce_binomial(xdev_coll_group_t *g, const void *sbuf, void *rbuf, size_t count,
                         const xdev_coll_op_t *op, size_t esz, int root, int phase);
/* Ring reduce-scatter over blocks (element offsets/lengths per rank) of
 * this rank's full contribution sbuf into work (which may be sbuf); on
 * return block `rank` of work is fully reduced, and the others hold
 * partial results, except block rank - 1, which is left as it was. */
int coll_ring_reduce_scatter(xdev_coll_group_t *g, const void *sbuf, void *work,
                             const size_t *start, const size_t *len, const xdev_coll_op_t *op,
                             size_t esz, int phase);
/* Starts and lengths (elements) of p near-equal blocks of count, in one
 * malloc'd array: starts at [0, p), lengths at [p, 2p). NULL if out of memory. */
size_t *coll_equal_blocks(size_t count, int p);

#endif
