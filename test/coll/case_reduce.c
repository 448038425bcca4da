/*
 * case_reduce.c - barrier and the reductions against local references:
 * every built-in type x operation at a small count, then the size sweep
 * with every algorithm (and every root for reduce), user operations, and a
 * non-commutative user operation (2x2 matrix product) in scan, whose result
 * must be in rank order. Values are chosen so that every result is exact
 * (small integers in float and double), so any summation order must give
 * the reference bit for bit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static const size_t type_size[] = {0, 4, 8, 1, sizeof(float), sizeof(double)};
static const char *type_name[] = {"?", "int32", "int64", "uint8", "float", "double"};
static const char *op_name[] = {"?", "sum", "prod", "min", "max", "band", "bor", "bxor", "user"};

static int is_fp(int type) { return type == XDEV_COLL_FLOAT || type == XDEV_COLL_DOUBLE; }

/* Element i of member `who`'s contribution. */
static void gen(int type, int op, void *buf, size_t count, uint64_t seed, int who)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t h = 0;
        for (int b = 0; b < 8; b++) h = h << 8 | t_byte(seed, who, i * 8 + (size_t)b);
        double fp = op == XDEV_COLL_PROD ? (double[]){1, -1, 2, -2, 0.5}[h % 5]
                                         : (double)((int)(h % 9) - 4);
        switch (type) {
        case XDEV_COLL_INT32: ((int32_t *)buf)[i] = (int32_t)(uint32_t)h; break;
        case XDEV_COLL_INT64: ((int64_t *)buf)[i] = (int64_t)h; break;
        case XDEV_COLL_UINT8: ((uint8_t *)buf)[i] = (uint8_t)h; break;
        case XDEV_COLL_FLOAT: ((float *)buf)[i] = (float)fp; break;
        case XDEV_COLL_DOUBLE: ((double *)buf)[i] = fp; break;
        }
    }
}

#define REF_INT(T, U)                                                                  \
    do {                                                                               \
        const T *a = in;                                                               \
        T *b = io;                                                                     \
        for (size_t i = 0; i < n; i++) {                                               \
            T x = a[i], y = b[i];                                                      \
            switch (op) {                                                              \
            case XDEV_COLL_SUM: b[i] = (T)((U)x + (U)y); break;                        \
            case XDEV_COLL_PROD: b[i] = (T)((U)x * (U)y); break;                       \
            case XDEV_COLL_MIN: b[i] = x < y ? x : y; break;                           \
            case XDEV_COLL_MAX: b[i] = x > y ? x : y; break;                           \
            case XDEV_COLL_BAND: b[i] = (T)(x & y); break;                             \
            case XDEV_COLL_BOR: b[i] = (T)(x | y); break;                              \
            case XDEV_COLL_BXOR: b[i] = (T)(x ^ y); break;                             \
            }                                                                          \
        }                                                                              \
    } while (0)
#define REF_FP(T)                                                                      \
    do {                                                                               \
        const T *a = in;                                                               \
        T *b = io;                                                                     \
        for (size_t i = 0; i < n; i++) {                                               \
            T x = a[i], y = b[i];                                                      \
            b[i] = op == XDEV_COLL_SUM ? x + y : op == XDEV_COLL_PROD ? x * y              \
                 : op == XDEV_COLL_MIN ? (x < y ? x : y) : (x > y ? x : y);             \
        }                                                                              \
    } while (0)

static void ref_apply(int type, int op, const void *in, void *io, size_t n)
{
    switch (type) {
    case XDEV_COLL_INT32: REF_INT(int32_t, uint32_t); break;
    case XDEV_COLL_INT64: REF_INT(int64_t, uint64_t); break;
    case XDEV_COLL_UINT8: REF_INT(uint8_t, uint32_t); break;
    case XDEV_COLL_FLOAT: REF_FP(float); break;
    case XDEV_COLL_DOUBLE: REF_FP(double); break;
    }
}

/* A commutative user operation: wrapping 64-bit addition. */
static void user_add(const void *in, void *inout, size_t n, void *arg)
{
    const uint64_t *a = in;
    uint64_t *b = inout;
    CHECK(arg == (void *)&user_add, "user op got arg %p", arg);
    for (size_t i = 0; i < n; i++) b[i] += a[i];
}

/* A non-commutative one: inout = in x inout, 2x2 matrices mod 2^32. */
static void user_matmul(const void *in, void *inout, size_t n, void *arg)
{
    (void)arg;
    const uint32_t *a = in;
    uint32_t *b = inout;
    for (size_t k = 0; k < n; k++, a += 4, b += 4) {
        uint32_t r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                         a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
        memcpy(b, r, sizeof r);
    }
}

/* The op, its element size, and member `who`'s data. */
struct red {
    xdev_coll_op_t op;
    size_t esz;
    int type, code; /* code: XDEV_COLL_* op or XDEV_COLL_USER */
    int matmul;
};

static void red_gen(const struct red *r, void *buf, size_t count, uint64_t seed, int who)
{
    if (r->code != XDEV_COLL_USER) gen(r->type, r->code, buf, count, seed, who);
    else t_fill(buf, count * r->esz, seed, who);
}

static void red_apply(const struct red *r, const void *in, void *io, size_t n)
{
    if (r->code != XDEV_COLL_USER) ref_apply(r->type, r->code, in, io, n);
    else r->op.fn(in, io, n, r->op.arg);
}

/* Reference of op over members [0, upto], in rank order. */
static void *reference(const struct red *r, size_t count, uint64_t seed, int upto)
{
    size_t bytes = count * r->esz;
    uint8_t *acc = t_malloc(bytes), *tmp = t_malloc(bytes);
    red_gen(r, acc, count, seed, 0);
    for (int w = 1; w <= upto; w++) {
        red_gen(r, tmp, count, seed, w);
        /* acc = acc (op) w's: rank order, the left operand first */
        red_apply(r, acc, tmp, count);
        memcpy(acc, tmp, bytes);
    }
    free(tmp);
    return acc;
}

static struct red builtin(int type, int code)
{
    struct red r = {{type, code, NULL, 0, NULL}, type_size[type], type, code, 0};
    return r;
}
static struct red user(int matmul)
{
    struct red r;
    memset(&r, 0, sizeof r);
    r.code = XDEV_COLL_USER;
    r.matmul = matmul;
    r.esz = matmul ? 16 : 8;
    r.op = (xdev_coll_op_t){0, XDEV_COLL_USER, matmul ? user_matmul : user_add, r.esz,
                            matmul ? NULL : (void *)&user_add};
    return r;
}

static void red_name(const struct red *r, char *out, size_t n)
{
    if (r->code == XDEV_COLL_USER) snprintf(out, n, "user %s", r->matmul ? "matmul" : "add");
    else snprintf(out, n, "%s %s", type_name[r->type], op_name[r->code]);
}

static void check_result(const void *got, const void *want, size_t bytes, const char *what)
{
    const uint8_t *a = got, *b = want;
    for (size_t i = 0; i < bytes; i++)
        CHECK(a[i] == b[i], "%s: byte %zu is %u, reference %u", what, i, a[i], b[i]);
}

static void t_reduce(const char *alg, const struct red *r, size_t count, uint64_t seed, int all_roots)
{
    char nm[64];
    red_name(r, nm, sizeof nm);
    xdev_coll_group_t *g = t_world("XDEV_COLL_REDUCE", alg);
    size_t bytes = count * r->esz;
    uint8_t *s = t_malloc(bytes), *d = t_malloc(bytes);
    void *ref = reference(r, count, seed, t_size - 1);
    for (int root = all_roots ? 0 : t_size - 1; root < t_size; root++) {
        t_phase("reduce %s %s count %zu root %d", alg, nm, count, root);
        red_gen(r, s, count, seed, t_rank);
        memset(d, 0xEE, bytes);
        CHECK_RC(xdev_coll_reduce(g, s, d, count, &r->op, root));
        if (t_rank == root) check_result(d, ref, bytes, "reduce");
        /* in place at the root */
        if (t_rank == root) {
            red_gen(r, d, count, seed, t_rank);
            CHECK_RC(xdev_coll_reduce(g, d, d, count, &r->op, root));
            check_result(d, ref, bytes, "reduce in place");
        } else {
            CHECK_RC(xdev_coll_reduce(g, s, NULL, count, &r->op, root));
        }
    }
    free(ref);
    free(s);
    free(d);
    CHECK_RC(xdev_coll_group_free(g));
}

static void t_allreduce(const char *alg, const struct red *r, size_t count, uint64_t seed)
{
    char nm[64];
    red_name(r, nm, sizeof nm);
    t_phase("allreduce %s %s count %zu", alg, nm, count);
    xdev_coll_group_t *g = t_world("XDEV_COLL_ALLREDUCE", alg);
    size_t bytes = count * r->esz;
    uint8_t *s = t_malloc(bytes), *d = t_malloc(bytes);
    void *ref = reference(r, count, seed, t_size - 1);
    red_gen(r, s, count, seed, t_rank);
    memset(d, 0xEE, bytes);
    CHECK_RC(xdev_coll_allreduce(g, s, d, count, &r->op));
    check_result(d, ref, bytes, "allreduce");
    red_gen(r, d, count, seed, t_rank);
    CHECK_RC(xdev_coll_allreduce(g, d, d, count, &r->op));
    check_result(d, ref, bytes, "allreduce in place");
    free(ref);
    free(s);
    free(d);
    CHECK_RC(xdev_coll_group_free(g));
}

static void t_reduce_scatter(const char *alg, const struct red *r, size_t count, uint64_t seed)
{
    char nm[64];
    red_name(r, nm, sizeof nm);
    t_phase("reduce_scatter %s %s count %zu", alg, nm, count);
    xdev_coll_group_t *g = t_world("XDEV_COLL_REDUCE_SCATTER", alg);
    int p = t_size;
    size_t *rc = t_malloc(sizeof(size_t) * (size_t)p), total = 0, before = 0;
    for (int i = 0; i < p; i++) {
        rc[i] = count / (size_t)p + (size_t)(i % 2) * (count % 3);
        if (i < t_rank) before += rc[i];
        total += rc[i];
    }
    uint8_t *s = t_malloc(total * r->esz), *d = t_malloc(rc[t_rank] * r->esz + 8);
    uint8_t *ref = reference(r, total, seed, p - 1);
    red_gen(r, s, total, seed, t_rank);
    memset(d, 0xEE, rc[t_rank] * r->esz + 8);
    CHECK_RC(xdev_coll_reduce_scatter(g, s, d, rc, &r->op));
    check_result(d, ref + before * r->esz, rc[t_rank] * r->esz, "reduce_scatter");
    for (int k = 0; k < 8; k++)
        CHECK(d[rc[t_rank] * r->esz + (size_t)k] == 0xEE, "reduce_scatter wrote past its block");
    free(ref);
    free(s);
    free(d);
    free(rc);
    CHECK_RC(xdev_coll_group_free(g));
}

static void t_scan(const char *alg, const struct red *r, size_t count, uint64_t seed)
{
    char nm[64];
    red_name(r, nm, sizeof nm);
    t_phase("scan %s %s count %zu", alg, nm, count);
    xdev_coll_group_t *g = t_world("XDEV_COLL_SCAN", alg);
    size_t bytes = count * r->esz;
    uint8_t *s = t_malloc(bytes), *d = t_malloc(bytes);
    void *ref = reference(r, count, seed, t_rank);
    red_gen(r, s, count, seed, t_rank);
    CHECK_RC(xdev_coll_scan(g, s, d, count, &r->op));
    check_result(d, ref, bytes, "scan");
    CHECK_RC(xdev_coll_scan(g, s, s, count, &r->op));
    check_result(s, ref, bytes, "scan in place");
    free(ref);
    free(s);
    free(d);
    CHECK_RC(xdev_coll_group_free(g));
}

static const char *barrier_algs[] = {"dissemination", "linear", "auto", NULL};
static const char *reduce_algs[] = {"binomial", "ring_gather", "auto", NULL};
static const char *allreduce_algs[] = {"recursive_doubling", "ring", "reduce_bcast", "direct",
                                        "auto", NULL};
static const char *rs_algs[] = {"reduce_scatterv", "ring", "auto", NULL};
static const char *scan_algs[] = {"recursive_doubling", "linear", "auto", NULL};

static void all_algorithms(const struct red *r, size_t count, uint64_t seed, int all_roots)
{
    for (int a = 0; reduce_algs[a]; a++) t_reduce(reduce_algs[a], r, count, seed, all_roots);
    for (int a = 0; allreduce_algs[a]; a++) t_allreduce(allreduce_algs[a], r, count, seed);
    for (int a = 0; rs_algs[a]; a++) t_reduce_scatter(rs_algs[a], r, count, seed);
    for (int a = 0; scan_algs[a]; a++) t_scan(scan_algs[a], r, count, seed);
}

/* Nobody leaves the barrier before the last member entered it: member
 * (size - 1) enters 50 ms late, and clocks are comparable on one host. */
static void t_barrier(const char *alg)
{
    xdev_coll_group_t *g = t_world("XDEV_COLL_BARRIER", alg);
    for (int i = 0; i < 20; i++) {
        t_phase("barrier %s %d", alg, i);
        CHECK_RC(xdev_coll_barrier(g));
    }
    double entered = 0;
    if (t_rank == t_size - 1) {
        usleep(50000);
        entered = t_now();
    }
    CHECK_RC(xdev_coll_barrier(g));
    double left = t_now();
    CHECK_RC(xdev_coll_bcast(g, &entered, sizeof entered, t_size - 1));
    CHECK(left >= entered, "left the barrier %.6f s before the last member entered it",
          entered - left);
    CHECK_RC(xdev_coll_group_free(g));
}

int case_reduce(void)
{
    uint64_t seed = 1000;
    for (int a = 0; barrier_algs[a]; a++) t_barrier(barrier_algs[a]);
    /* Every type and operation, at a count that splits unevenly. */
    for (int type = XDEV_COLL_INT32; type <= XDEV_COLL_DOUBLE; type++)
        for (int code = XDEV_COLL_SUM; code <= XDEV_COLL_BXOR; code++) {
            if (is_fp(type) && code >= XDEV_COLL_BAND) continue;
            struct red r = builtin(type, code);
            all_algorithms(&r, 37, seed++, 0);
        }
    struct red ua = user(0), um = user(1);
    all_algorithms(&ua, 37, seed++, 0);
    for (int a = 0; scan_algs[a]; a++) t_scan(scan_algs[a], &um, 21, seed++);

    /* The size sweep, the type rotating with the size. */
    const size_t *sizes = t_sizes();
    for (int k = 0; sizes[k] != (size_t)-1; k++) {
        int type = XDEV_COLL_INT32 + k % 5;
        struct red r = builtin(type, k % 2 ? XDEV_COLL_SUM : XDEV_COLL_MAX);
        all_algorithms(&r, sizes[k] / r.esz, seed++, t_size <= 3 || sizes[k] < MiB);
    }
    return 0;
}
