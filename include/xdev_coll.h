/*
 * xdev_coll.h - collectives on top of xdev (libxdev_coll).
 *
 * An optional companion library built only on the public xdev API
 * (include/xdev.h). It offers the collectives an MPI or MPJ library needs:
 *
 *   xdev_coll_barrier    xdev_coll_bcast
 *   xdev_coll_gather     xdev_coll_gatherv    xdev_coll_scatter   xdev_coll_scatterv
 *   xdev_coll_allgather  xdev_coll_allgatherv xdev_coll_alltoall  xdev_coll_alltoallv
 *   xdev_coll_reduce     xdev_coll_allreduce  xdev_coll_reduce_scatter  xdev_coll_scan
 *
 * on groups (xdev_coll_group_create): an ordered list of device ranks and a
 * context id, what an MPI communicator needs underneath.
 *
 * Conventions that hold for every call:
 *  - Every call returns XDEV_OK or a negative XDEV_ERR_* code of xdev.h.
 *    XDEV_ERR_ARG means a bad argument was found before anything was sent:
 *    nothing was changed and the group is still usable. The call did not
 *    take place on this rank, so the members that made it wait for this
 *    rank's: make it again with good arguments (going on to the next
 *    collective instead puts the members out of step).
 *  - Buffers are bytes (a pointer and a size_t count); a NULL pointer is
 *    accepted only where the count is 0. Reductions count elements of the
 *    operation's type instead (see xdev_coll_op_t).
 *  - Every member of a group calls the same collectives in the same order
 *    with matching sizes and the same root, as in MPI. Sizes that do not
 *    match fail the collective with XDEV_ERR_TRUNCATE on the rank that
 *    noticed it, and the failure spreads as below, as long as the members
 *    run the same algorithm. Each member picks it from its own sizes (see
 *    "Algorithms are picked" below), so sizes on two sides of a threshold
 *    can set members on different algorithms whose messages never meet:
 *    nobody notices, and they wait for each other for ever, as an MPI does
 *    with such a program (a debugging run can force each family's algorithm
 *    with XDEV_COLL_* to take the thresholds away). Mismatches noticed
 *    include a rank's own count in a v-variant that differs from its own
 *    buffer's size (the root's counts[root] against len in gatherv and
 *    scatterv, counts[rank] in allgatherv, scounts[rank] against
 *    rcounts[rank] in alltoallv). So do counts that differ only in where
 *    blocks lie, each message keeping its size (reduce_scatter's rcounts,
 *    or a reduction's count, in the ring algorithm): every member fails,
 *    none returns XDEV_OK with a sum of blocks taken from different places.
 *  - Roots and ranks in arguments are group ranks (0 .. group size - 1).
 *  - A group is used by one thread at a time; different groups may be used
 *    from different threads of a device made for multi-threaded use.
 *
 * Contexts and matching. A group owns its context: libxdev_coll sends and
 * receives on it, and the application must not use that context for its own
 * point-to-point traffic; another group of the same device cannot have it
 * while this one exists (xdev_coll_group_create refuses it). Collectives on
 * groups with different contexts never match each other's messages, and user
 * traffic on other contexts never matches a collective's. (An MPI library
 * gives each communicator two contexts: one for its point-to-point traffic,
 * one for its group.) Within the context, a tag names a phase of a collective
 * (below 2^30; the ring adds a hash of its block lengths, and receives with
 * XDEV_ANY_TAG from its neighbour to compare them); the members call the
 * group's collectives in the same order, and since messages between two ranks
 * on one tag never overtake each other and each collective receives every
 * message it sends, successive collectives match in order. The tag 0x7fffffff
 * is the failure notice below.
 *
 * Failures. A collective that fails on one rank (a dead peer, mismatched
 * sizes, no memory) must not leave the others waiting for it. The failing
 * rank sends a failure notice (tag 0x7fffffff on the group's context; 4
 * bytes, little-endian: the failed call's number, counting from 1 the
 * group's collectives that took place) to every other member, and each
 * member keeps a receive for that notice posted while the group exists;
 * waiting inside a collective watches it beside the collective's own
 * requests. A notice fails the call it names: a member still inside an
 * earlier call, which the failing rank has finished, completes that one as
 * if no notice had come, and fails the named call as it begins. So every
 * rank whose result depends, directly or through others, on the failed or
 * dead rank returns XDEV_ERR_PEER instead of hanging; in barrier,
 * allgather(v), alltoall(v), allreduce and reduce_scatter that is every
 * member, except one that the dead rank's data had already reached (through
 * a completed exchange) before it died: its result is complete and correct,
 * and it may return XDEV_OK, as may a member whose part never needed the
 * dead rank (a broadcast outside the dead rank's subtree). Such a member
 * learns of the failure in its next collective that receives a notice or
 * needs the dead rank. After a collective has failed the group is broken:
 * every later collective on it returns the same error at once,
 * and the only thing left to do is xdev_coll_group_free. Notices may still
 * arrive on its context afterwards, so that context is not to be given to
 * a new group. Requests the failed collective had posted may still read
 * the caller's buffers of that call and complete into them until
 * xdev_finalize, so keep those buffers until then; the requests' storage
 * and the library's own scratch buffers of that call are kept by the
 * library (xdev_finalize then reports the requests as abandoned with
 * XDEV_ERR_CANCELED).
 *
 * Requests of the library's own. Every request libxdev_coll posts (a
 * collective's, the notice receive, the notices) carries
 * user == XDEV_COLL_REQUEST. The library reaps its own, but xdev_peek may
 * hand one out first (to another thread peeking during a collective), and
 * those a failed collective left, and notices to a dead member, complete
 * later with nobody to reap them: an application that takes completions
 * with xdev_peek skips requests whose user is XDEV_COLL_REQUEST.
 *
 * XDEV_FLAG_WILDCARD_FAILS. The notice receive takes any source, so a
 * death or finalize anywhere fails it with XDEV_ERR_PEER_PENDING; the
 * library posts it again. A group is broken only by a notice or by a
 * collective whose own requests (which name their sources) fail.
 *
 * Algorithms are picked per call from the message size and the group size
 * and can be forced or re-tuned with XDEV_COLL_* environment variables, read
 * when a group is created (see the README's libxdev_coll section; an empty
 * value counts as unset, and a malformed one makes xdev_coll_group_create
 * fail with XDEV_ERR_INIT):
 *   bcast        binomial tree (short); binomial scatter + ring allgather (long)
 *   gather/scatter  binomial tree (short); linear, all nonblocking (long)
 *   allgather    direct, every member to every other in one round (short,
 *                groups of up to 8); gather + bcast on binomial trees (other
 *                short); ring (long)
 *   alltoall     linear, all at once (short); pairwise exchange (long)
 *   reduce       binomial tree (short); ring reduce-scatter + gather (long)
 *   allreduce    direct, every member to every other in one round (short,
 *                groups of up to 8); recursive doubling (other short, any
 *                group size: the ranks above the largest power of two fold
 *                in first); ring reduce-scatter + ring allgather (long);
 *                reduce + bcast (forced only)
 *   reduce_scatter  ring (long); reduce + scatterv (short)
 *   scan         linear chain; recursive doubling
 *   barrier      linear: all to member 0, which then releases all (groups
 *                of 3 to 8); dissemination (other groups)
 * Every algorithm posts its sends and receives as nonblocking xdev requests
 * so that a step's transfers overlap.
 *
 * Reductions. The built-in operations are commutative; the result of a
 * floating-point sum or product may differ in its last bits from one
 * algorithm to another, but every rank of an allreduce receives the same
 * bits. User operations (XDEV_COLL_USER) must be associative and
 * commutative: the tree, ring and doubling algorithms combine contributions
 * in an order that depends on the group size and root. Only scan keeps rank
 * order for any operation (each rank's result is op(r0, r1, ..., r_self) in
 * rank order), so a non-commutative but associative operation is correct in
 * scan.
 */
#ifndef XDEV_COLL_H
#define XDEV_COLL_H

#include <stddef.h>

#include "xdev.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An opaque group: the members of a collective and its context. */
typedef struct xdev_coll_group xdev_coll_group_t;

/* The tag of a failure notice on a group's context (see "Failures"). */
#define XDEV_COLL_NOTICE_TAG 0x7fffffff

/* The `user` of every request libxdev_coll posts (see "Requests of the
 * library's own"): a unique address, compared, never dereferenced. */
XDEV_API extern const char xdev_coll_request_mark;
#define XDEV_COLL_REQUEST ((void *)&xdev_coll_request_mark)

/* Element types of reductions. */
enum {
    XDEV_COLL_INT32 = 1,
    XDEV_COLL_INT64,
    XDEV_COLL_UINT8,
    XDEV_COLL_FLOAT,
    XDEV_COLL_DOUBLE,
};

/* Reduction operations. The bitwise ones exist for the integer types only. */
enum {
    XDEV_COLL_SUM = 1,
    XDEV_COLL_PROD,
    XDEV_COLL_MIN,
    XDEV_COLL_MAX,
    XDEV_COLL_BAND,
    XDEV_COLL_BOR,
    XDEV_COLL_BXOR,
    XDEV_COLL_USER, /* the function in xdev_coll_op_t.fn */
};

/*
 * A user reduction: combine `count` elements of `in` into `inout`, element
 * by element: inout[i] = in[i] (op) inout[i]. `in` and `inout` never
 * overlap. `arg` is xdev_coll_op_t.arg, passed through untouched.
 */
typedef void xdev_coll_user_fn(const void *in, void *inout, size_t count, void *arg);

/*
 * A reduction: for a built-in one set type and op (e.g. {XDEV_COLL_DOUBLE,
 * XDEV_COLL_SUM}); for a user one set op = XDEV_COLL_USER, fn, elem_size
 * (bytes per element, > 0) and arg (type is then ignored).
 */
typedef struct xdev_coll_op {
    int type;
    int op;
    xdev_coll_user_fn *fn;
    size_t elem_size;
    void *arg;
} xdev_coll_op_t;

/* ---- groups --------------------------------------------------------------- */

/*
 * Make a group of `n` members on dev: member i is device rank ranks[i]
 * (ranks == NULL means member i = rank i, ranks 0 .. n-1: with n the
 * device's size, every rank). The
 * calling rank must be a member; a device rank may appear only once. ctx
 * (>= 0) becomes the group's context: see "Contexts and matching". Every
 * member must create the group with the same ranks, in the same order, and
 * the same ctx. The call is local (no communication); ranks is copied.
 * XDEV_COLL_* variables of the environment are read now.
 * Errors: XDEV_ERR_ARG (NULL dev or grp, n < 1 or > device size, a rank out
 * of range or repeated, caller not a member, ctx < 0, ctx the context of a
 * group of dev that has not been freed), XDEV_ERR_INIT (an
 * XDEV_COLL_* variable is malformed), XDEV_ERR_NOMEM, or the error of
 * posting the failure-notice receive.
 */
XDEV_API int xdev_coll_group_create(xdev_t *dev, const int *ranks, int n, int ctx,
                           xdev_coll_group_t **grp);

/*
 * Free a group (NULL is accepted). Cancels the group's own failure-notice
 * receive (xdev_cancel), so it must be called before xdev_finalize. Not to
 * be called while a collective on the group runs. Returns XDEV_OK, or the
 * error of reaping that receive. A group keeps the scratch memory of its
 * collectives between calls (its two biggest blocks, up to 16 MiB each:
 * reused memory is much faster to fill than new), and gives it back here.
 */
XDEV_API int xdev_coll_group_free(xdev_coll_group_t *grp);

/* This process's rank in the group, and the number of members; XDEV_ERR_ARG
 * for NULL. */
XDEV_API int xdev_coll_group_rank(const xdev_coll_group_t *grp);
XDEV_API int xdev_coll_group_size(const xdev_coll_group_t *grp);

/* ---- collectives ----------------------------------------------------------
 * Errors common to every call below: XDEV_ERR_ARG (NULL group, a NULL
 * buffer with a non-zero size where the buffer is used, root out of range, a
 * bad type/op combination, counts whose byte size overflows), the group's
 * error if it is broken, XDEV_ERR_PEER (a member died or failed this
 * collective: see "Failures"), XDEV_ERR_TRUNCATE (sizes that do not match
 * between members), XDEV_ERR_NOMEM (a temporary buffer). Arguments marked
 * "root only" are read only at the root and may be anything elsewhere.
 */

/* Return once every member has entered the barrier. */
XDEV_API int xdev_coll_barrier(xdev_coll_group_t *grp);

/* Copy len bytes of buf at root into buf at every member. */
XDEV_API int xdev_coll_bcast(xdev_coll_group_t *grp, void *buf, size_t len, int root);

/* Member i's len bytes of sendbuf go to recvbuf + i * len at root.
 * recvbuf (size * len bytes) is root only. */
XDEV_API int xdev_coll_gather(xdev_coll_group_t *grp, const void *sendbuf, size_t len, void *recvbuf,
                     int root);

/* Member i's len bytes go to recvbuf + displs[i] at root, where counts[i]
 * must equal member i's len. recvbuf, counts and displs (bytes) are root
 * only; the root's regions must not overlap. */
XDEV_API int xdev_coll_gatherv(xdev_coll_group_t *grp, const void *sendbuf, size_t len, void *recvbuf,
                      const size_t *counts, const size_t *displs, int root);

/* Bytes sendbuf + i * len .. + len at root go to member i's recvbuf.
 * sendbuf (size * len bytes) is root only. */
XDEV_API int xdev_coll_scatter(xdev_coll_group_t *grp, const void *sendbuf, void *recvbuf, size_t len,
                      int root);

/* counts[i] bytes at sendbuf + displs[i] at root go to member i's recvbuf,
 * whose len must equal counts[i]. sendbuf, counts, displs are root only. */
XDEV_API int xdev_coll_scatterv(xdev_coll_group_t *grp, const void *sendbuf, const size_t *counts,
                       const size_t *displs, void *recvbuf, size_t len, int root);

/* Every member's len bytes go to recvbuf + i * len at every member
 * (recvbuf holds size * len bytes). */
XDEV_API int xdev_coll_allgather(xdev_coll_group_t *grp, const void *sendbuf, size_t len, void *recvbuf);

/* Member i's len bytes (== counts[i]) go to recvbuf + displs[i] at every
 * member; counts and displs are in bytes and the same at every member. */
XDEV_API int xdev_coll_allgatherv(xdev_coll_group_t *grp, const void *sendbuf, size_t len, void *recvbuf,
                         const size_t *counts, const size_t *displs);

/* sendbuf + j * len at member i goes to recvbuf + i * len at member j
 * (both buffers hold size * len bytes and must not overlap). */
XDEV_API int xdev_coll_alltoall(xdev_coll_group_t *grp, const void *sendbuf, size_t len, void *recvbuf);

/* scounts[j] bytes at sendbuf + sdispls[j] of member i go to recvbuf +
 * rdispls[i] of member j, where rcounts[i] of member j must equal
 * scounts[j] of member i. All in bytes. */
XDEV_API int xdev_coll_alltoallv(xdev_coll_group_t *grp, const void *sendbuf, const size_t *scounts,
                        const size_t *sdispls, void *recvbuf, const size_t *rcounts,
                        const size_t *rdispls);

/* Combine `count` elements of every member's sendbuf with op into recvbuf
 * at root (root only). sendbuf may equal recvbuf at the root. */
XDEV_API int xdev_coll_reduce(xdev_coll_group_t *grp, const void *sendbuf, void *recvbuf, size_t count,
                     const xdev_coll_op_t *op, int root);

/* As reduce, with the result in recvbuf at every member. sendbuf may equal
 * recvbuf (in place). */
XDEV_API int xdev_coll_allreduce(xdev_coll_group_t *grp, const void *sendbuf, void *recvbuf, size_t count,
                        const xdev_coll_op_t *op);

/* Combine the sum(rcounts) elements of every member's sendbuf with op and
 * give member i the rcounts[i] elements that start at element
 * rcounts[0] + ... + rcounts[i-1] of the result, in its recvbuf. rcounts is
 * the same at every member. sendbuf and recvbuf must not overlap. */
XDEV_API int xdev_coll_reduce_scatter(xdev_coll_group_t *grp, const void *sendbuf, void *recvbuf,
                             const size_t *rcounts, const xdev_coll_op_t *op);

/* Inclusive prefix reduction: member i's recvbuf gets op over the sendbufs
 * of members 0..i, in rank order. sendbuf may equal recvbuf. */
XDEV_API int xdev_coll_scan(xdev_coll_group_t *grp, const void *sendbuf, void *recvbuf, size_t count,
                   const xdev_coll_op_t *op);

#ifdef __cplusplus
}
#endif
#endif /* XDEV_COLL_H */
