/*
 * vector.c - case "vector": xdev_isendv, xdev_irecvv, xdev_sendv and
 * xdev_recvv.
 *
 *  - Bad vectors (NULL, 0 or XDEV_IOV_MAX + 1 pieces, a NULL piece with
 *    bytes, a total past SIZE_MAX) get XDEV_ERR_ARG and change nothing.
 *  - Messages of 0 bytes to past the eager limit (rendezvous), split into
 *    1 to XDEV_IOV_MAX pieces of random lengths (zero-length ones too)
 *    scattered through memory with gaps: vector to vector, vector to one
 *    buffer and one buffer to vector, to the ring neighbour and to
 *    oneself, with the receive posted before the message arrives and
 *    after (the unexpected path), nonblocking and blocking. Every byte
 *    arrives in order and no gap between pieces is written.
 *  - A vector receive shorter than the message, cut inside a piece:
 *    XDEV_ERR_TRUNCATE, count = the vector's total, msg_len the message's,
 *    and nothing written past the cut.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

enum { CTX_VEC = 98, TAG_VEC = 1, GAP = 16 };

/* A vector over an arena: its pieces with GAP guard bytes between them. */
typedef struct {
    xdev_iov_t iov[XDEV_IOV_MAX];
    int n;
    size_t total;
    unsigned char *arena;
    size_t arena_len;
} vec_t;

/* Split total bytes into n pieces of random lengths (some empty). */
static void vec_make(vec_t *v, size_t total, int n, h_rng_t *rng)
{
    v->n = n;
    v->total = total;
    v->arena_len = total + (size_t)(n + 1) * GAP;
    v->arena = h_malloc(v->arena_len);
    memset(v->arena, H_GUARD_BYTE, v->arena_len);
    size_t left = total, at = GAP;
    for (int i = 0; i < n; i++) {
        size_t len = i == n - 1 ? left : h_rand_below(rng, 4) == 0 ? 0 : h_rand_below(rng, left + 1);
        if (i < n - 1 && len > left / 2 + 1)
            len = left / 2 + 1 < left ? left / 2 + 1 : left; /* keep bytes for later pieces */
        v->iov[i] = (xdev_iov_t){ .base = len ? v->arena + at : NULL, .len = len };
        at += len + GAP;
        left -= len;
    }
}

/* Copy the pattern into the pieces, or the pieces out into one buffer. */
static void vec_fill(vec_t *v, uint64_t seed, int sender)
{
    unsigned char *flat = h_malloc(v->total + 1);
    h_fill(flat, v->total, seed, sender);
    for (int i = 0, off = 0; i < v->n; off += (int)v->iov[i].len, i++)
        if (v->iov[i].len)
            memcpy(v->iov[i].base, flat + off, v->iov[i].len);
    free(flat);
}

/* The first `want` bytes of the pieces hold the pattern; nothing outside
 * the pieces' first `want` bytes was written. */
static void vec_check(const vec_t *v, size_t want, uint64_t seed, int sender, const char *what)
{
    unsigned char *flat = h_malloc(v->total + 1);
    size_t off = 0;
    for (int i = 0; i < v->n; i++) {
        if (v->iov[i].len)
            memcpy(flat + off, v->iov[i].base, v->iov[i].len);
        off += v->iov[i].len;
    }
    CHECK_DATA(flat, want, seed, sender, what);
    CHECK(h_verify_const(flat + want, v->total - want, H_GUARD_BYTE) == H_GOOD,
          "%s: written past the %zu bytes delivered", what, want);
    free(flat);
    unsigned char *a = v->arena;
    size_t at = 0;
    for (int i = 0; i < v->n; i++) {
        size_t piece_at = v->iov[i].len ? (size_t)((unsigned char *)v->iov[i].base - a) : at + GAP;
        CHECK(h_verify_const(a + at, piece_at - at, H_GUARD_BYTE) == H_GOOD,
              "%s: a gap before piece %d was written", what, i);
        at = piece_at + v->iov[i].len;
    }
    CHECK(h_verify_const(a + at, v->arena_len - at, H_GUARD_BYTE) == H_GOOD,
          "%s: the gap after the last piece was written", what);
}

static void bad_vectors(void)
{
    h_phase("vector: bad vectors");
    unsigned char b[8];
    xdev_iov_t ok = { b, sizeof b }, many[XDEV_IOV_MAX + 1], null_piece = { NULL, 4 };
    xdev_iov_t huge[2] = { { b, SIZE_MAX }, { b, 2 } };
    for (int i = 0; i <= XDEV_IOV_MAX; i++)
        many[i] = ok;
    xdev_request_t r;
    memset(&r, 0, sizeof r);
    struct {
        const xdev_iov_t *iov;
        int n;
        const char *what;
    } bad[] = { { NULL, 1, "NULL iov" },         { &ok, 0, "0 pieces" },
                { many, XDEV_IOV_MAX + 1, "XDEV_IOV_MAX + 1 pieces" },
                { &null_piece, 1, "a NULL piece with bytes" }, { huge, 2, "a total past SIZE_MAX" } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(xdev_isendv(h_dev, bad[i].iov, bad[i].n, h_next(), TAG_VEC, CTX_VEC, &r) ==
                  XDEV_ERR_ARG, "isendv with %s", bad[i].what);
        CHECK(xdev_irecvv(h_dev, bad[i].iov, bad[i].n, h_prev(), TAG_VEC, CTX_VEC, &r) ==
                  XDEV_ERR_ARG, "irecvv with %s", bad[i].what);
        CHECK(xdev_sendv(h_dev, bad[i].iov, bad[i].n, h_next(), TAG_VEC, CTX_VEC) == XDEV_ERR_ARG,
              "sendv with %s", bad[i].what);
        CHECK(xdev_recvv(h_dev, bad[i].iov, bad[i].n, h_prev(), TAG_VEC, CTX_VEC, NULL) ==
                  XDEV_ERR_ARG, "recvv with %s", bad[i].what);
    }
    /* nothing was posted: a plain exchange still matches first */
    CHECK(xdev_isendv(h_dev, many, XDEV_IOV_MAX, h_next(), TAG_VEC, CTX_VEC, &r) == XDEV_OK,
          "XDEV_IOV_MAX pieces refused");
    unsigned char in[8 * XDEV_IOV_MAX];
    xdev_status_t st;
    CHECK_RC(xdev_recv(h_dev, in, sizeof in, h_prev(), TAG_VEC, CTX_VEC, &st));
    CHECK_STATUS(&st, h_prev(), TAG_VEC, CTX_VEC, XDEV_OK, sizeof in, "64 pieces of 8 bytes");
    CHECK_RC(xdev_wait(&r, NULL));
    h_barrier();
}

enum shape { VEC_TO_VEC, VEC_TO_FLAT, FLAT_TO_VEC };

/* Post the receive of the exchange (one buffer or the vector). */
static void post_receive(const vec_t *r, enum shape shape, int from, xdev_request_t *req)
{
    if (shape == VEC_TO_FLAT)
        CHECK_RC(xdev_irecv(h_dev, r->iov[0].base, r->total, from, TAG_VEC, CTX_VEC, req));
    else
        CHECK_RC(xdev_irecvv(h_dev, r->iov, r->n, from, TAG_VEC, CTX_VEC, req));
}

/* One message from each rank to `to`, received from `from`. A blocking
 * send only where it cannot wait for the receiver (eager, not to
 * oneself), since every rank sends before it receives. */
static void exchange(size_t len, int spieces, int rpieces, enum shape shape, bool post_first,
                     bool blocking, int to, int from, uint64_t seed, h_rng_t *rng)
{
    h_phase("vector: %zu bytes, %d -> %d pieces, shape %d, %s, %s, to %d", len, spieces, rpieces,
            (int)shape, post_first ? "posted first" : "unexpected",
            blocking ? "blocking" : "nonblocking", to);
    vec_t s, r;
    vec_make(&s, len, shape == FLAT_TO_VEC ? 1 : spieces, rng);
    vec_make(&r, len, shape == VEC_TO_FLAT ? 1 : rpieces, rng);
    vec_fill(&s, seed, h_rank);
    xdev_request_t sreq, rreq;
    xdev_status_t st;
    bool blocking_send = blocking && shape != FLAT_TO_VEC && to != h_rank && len <= h_eager;
    bool blocking_recv = blocking && shape != VEC_TO_FLAT && !post_first;
    if (post_first)
        post_receive(&r, shape, from, &rreq);
    h_barrier();
    if (blocking_send)
        CHECK_RC(xdev_sendv(h_dev, s.iov, s.n, to, TAG_VEC, CTX_VEC));
    else if (shape == FLAT_TO_VEC)
        CHECK_RC(xdev_isend(h_dev, s.iov[0].base, len, to, TAG_VEC, CTX_VEC, &sreq));
    else
        CHECK_RC(xdev_isendv(h_dev, s.iov, s.n, to, TAG_VEC, CTX_VEC, &sreq));
    if (!post_first)
        h_barrier(); /* the message waits as unexpected (or deferred) */
    if (blocking_recv) {
        CHECK_RC(xdev_recvv(h_dev, r.iov, r.n, from, TAG_VEC, CTX_VEC, &st));
    } else {
        if (!post_first)
            post_receive(&r, shape, from, &rreq);
        CHECK_RC(xdev_wait(&rreq, &st));
    }
    if (!blocking_send)
        CHECK_RC(xdev_wait(&sreq, NULL));
    CHECK_STATUS(&st, from, TAG_VEC, CTX_VEC, XDEV_OK, len, "vector receive");
    vec_check(&r, len, seed, from, "vector receive");
    free(s.arena);
    free(r.arena);
    h_barrier();
}

static void truncated(size_t len, int rpieces, h_rng_t *rng)
{
    h_phase("vector: %zu bytes into %d pieces holding less", len, rpieces);
    vec_t s, r;
    size_t cut = len / 2 + 1; /* the vector holds this much; rarely on a piece boundary */
    vec_make(&s, len, 3, rng);
    vec_make(&r, cut, rpieces, rng);
    vec_fill(&s, 77, h_rank);
    xdev_request_t sreq, rreq;
    xdev_status_t st;
    CHECK_RC(xdev_irecvv(h_dev, r.iov, r.n, h_prev(), TAG_VEC, CTX_VEC, &rreq));
    h_barrier();
    CHECK_RC(xdev_isendv(h_dev, s.iov, s.n, h_next(), TAG_VEC, CTX_VEC, &sreq));
    CHECK_RC(xdev_wait(&rreq, &st));
    CHECK_RC(xdev_wait(&sreq, NULL));
    CHECK_STATUS(&st, h_prev(), TAG_VEC, CTX_VEC, XDEV_ERR_TRUNCATE, cut, "truncated vector");
    CHECK(st.msg_len == len, "truncated vector: msg_len %zu, want %zu", st.msg_len, len);
    vec_check(&r, cut, 77, h_prev(), "truncated vector");
    free(s.arena);
    free(r.arena);
    h_barrier();
}

void case_vector(void)
{
    bad_vectors();
    h_rng_t rng = { 0x5eed }; /* the same plan on every rank */
    size_t sizes[] = { 0, 1, 100, 4096 + 3, h_eager, h_eager + 1, ((size_t)3 << 20) + 5 };
    int pieces[] = { 1, 2, 7, XDEV_IOV_MAX };
    uint64_t seed = 1;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (size_t k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
            int sp = pieces[k], rp = pieces[(k + 1) % 4];
            for (int shape = VEC_TO_VEC; shape <= FLAT_TO_VEC; shape++) {
                bool post_first = (k + (size_t)shape) % 2 == 0;
                bool blocking = (i + k) % 3 == 0;
                exchange(sizes[i], sp, rp, (enum shape)shape, post_first, blocking, h_next(),
                         h_prev(), seed++, &rng);
            }
            exchange(sizes[i], sp, rp, VEC_TO_VEC, k % 2 == 0, false, h_rank, h_rank, seed++, &rng);
        }
    }
    int cuts[] = { 1, 5, XDEV_IOV_MAX };
    for (size_t i = 0; i < 3; i++) {
        truncated(1000, cuts[i], &rng);
        truncated(h_eager * 2 + 17, cuts[i], &rng);
    }
}
