/*
 * ops.c - reduction kernels: inout[i] = in[i] op inout[i] for the built-in
 * types and operations, and the user function; and the checks of the
 * arguments that describe a reduction.
 */
#include "coll.h"

/* Integer sums and products wrap (two's complement) instead of being
 * undefined on overflow: they are computed in the unsigned type. */
#define ARITH(T, U, NAME, EXPR)                                                    \
    static void NAME(const void *in_, void *io_, size_t n)                        \
    {                                                                              \
        const T *in = in_;                                                         \
        T *io = io_;                                                               \
        for (size_t i = 0; i < n; i++) {                                           \
            T a = in[i], b = io[i];                                                \
            io[i] = (EXPR);                                                        \
        }                                                                          \
    }

#define INT_KERNELS(T, U, P)                                                       \
    ARITH(T, U, P##_sum, (T)((U)a + (U)b))                                         \
    ARITH(T, U, P##_prod, (T)((U)a * (U)b))                                        \
    ARITH(T, U, P##_min, a < b ? a : b)                                            \
    ARITH(T, U, P##_max, a > b ? a : b)                                            \
    ARITH(T, U, P##_band, (T)(a & b))                                              \
    ARITH(T, U, P##_bor, (T)(a | b))                                               \
    ARITH(T, U, P##_bxor, (T)(a ^ b))

#define FP_KERNELS(T, P)                                                           \
    ARITH(T, T, P##_sum, a + b)                                                    \
    ARITH(T, T, P##_prod, a * b)                                                   \
    ARITH(T, T, P##_min, a < b ? a : b)                                            \
    ARITH(T, T, P##_max, a > b ? a : b)

INT_KERNELS(int32_t, uint32_t, i32)
INT_KERNELS(int64_t, uint64_t, i64)
INT_KERNELS(uint8_t, uint32_t, u8)
FP_KERNELS(float, f32)
FP_KERNELS(double, f64)

typedef void kernel_fn(const void *in, void *inout, size_t n);

#define INT_ROW(P) {P##_sum, P##_prod, P##_min, P##_max, P##_band, P##_bor, P##_bxor}
#define FP_ROW(P) {P##_sum, P##_prod, P##_min, P##_max, NULL, NULL, NULL}

/* [type - 1][op - 1]; NULL where the operation makes no sense. */
static kernel_fn *const kernels[5][7] = {
    INT_ROW(i32), INT_ROW(i64), INT_ROW(u8), FP_ROW(f32), FP_ROW(f64),
};
static const size_t type_size[5] = {4, 8, 1, sizeof(float), sizeof(double)};

static size_t op_size(const xdev_coll_op_t *op)
{
    if (!op) return 0;
    if (op->op == XDEV_COLL_USER) return op->fn ? op->elem_size : 0;
    if (op->type < XDEV_COLL_INT32 || op->type > XDEV_COLL_DOUBLE) return 0;
    if (op->op < XDEV_COLL_SUM || op->op > XDEV_COLL_BXOR) return 0;
    if (!kernels[op->type - 1][op->op - 1]) return 0;
    return type_size[op->type - 1];
}

int coll_op_bytes(const xdev_coll_op_t *op, size_t count, size_t *esz, size_t *bytes)
{
    *esz = op_size(op);
    int ok = *esz > 0;
    *bytes = coll_bytes(count, *esz, &ok);
    return ok;
}

int coll_begin_reduction(xdev_coll_group_t *g, const void *sbuf, const void *rbuf, size_t count,
                         const xdev_coll_op_t *op, size_t *esz, size_t *bytes)
{
    if (!g || !coll_op_bytes(op, count, esz, bytes) || !coll_buf_ok(sbuf, *bytes) ||
        !coll_buf_ok(rbuf, *bytes))
        return XDEV_ERR_ARG;
    return coll_begin(g);
}

void coll_op_apply(const xdev_coll_op_t *op, const void *in, void *inout, size_t count)
{
    if (!count) return;
    if (op->op == XDEV_COLL_USER) op->fn(in, inout, count, op->arg);
    else kernels[op->type - 1][op->op - 1](in, inout, count);
}
