/*
 * coll-bench - collective latency, one source for libxdev_coll and MPI.
 *
 *   coll-bench [--ops allreduce,bcast,...] [--sizes 8,1M]   (default: all eight)
 *              [--iters N] [--budget SECONDS]
 *              [--timing back-to-back|per-call|both]
 *
 * Built by meson against libxdev_coll as xdev-coll-bench (run it under
 * xdevrun), and by compare-coll.sh with -DUSE_MPI through mpicc.openmpi and
 * mpicc.mpich as coll-bench.openmpi / coll-bench.mpich, so every system
 * runs the same loop:
 *   allreduce  SIZE bytes of doubles, sum, to every rank
 *   bcast      SIZE bytes from rank 0
 *   allgather  SIZE bytes per rank
 *   alltoall   SIZE bytes per pair of ranks
 *   reduce     SIZE bytes of doubles, sum, to rank 0
 *   gather     SIZE bytes per rank to rank 0
 *   scatter    SIZE bytes per rank from rank 0
 *   barrier    (SIZE is ignored)
 * Each (op, size) runs a warm-up of a tenth of the iterations, then N timed
 * iterations (N = --iters, by default as OSU's: 10000 up to 8 KiB and 1000
 * above, so that a call of about 1 us is timed over some 10 ms rather than
 * less than one scheduler time slice; fewer if 10 probe iterations say the
 * --budget of seconds would be exceeded: rank 0 decides for all).
 *
 * Two ways of timing, since users meet both:
 *   back-to-back  the calls run one after another and the loop is timed
 *                 as a whole, as in IMB: pipelining between calls counts.
 *   per-call      each call is timed alone and a barrier follows it, as in
 *                 OSU's osu_bcast and friends: what one isolated call
 *                 costs. With more ranks than cores this partly measures
 *                 the skew of the barrier's exit: a call that does not
 *                 synchronize (bcast) can look cheaper than its messages,
 *                 as MPICH's 0.77 us 8-byte bcast at 4 ranks here did,
 *                 whose barrier takes 5 ms.
 * The result is the mean time per call averaged over the ranks (as OSU's
 * osu_allreduce reports), in microseconds, printed by rank 0 as CSV:
 *   op,timing,size,iters,value,unit
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../src/kit/size.h"

#ifdef USE_MPI
#include <mpi.h>
#else
#include "xdev.h"
#include "xdev_coll.h"
#endif

static int rank, size;

#ifdef USE_MPI
static void b_init(int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
}
static void b_fini(void) { MPI_Finalize(); }
static int b_allreduce(const double *s, double *d, size_t n)
{
    return MPI_Allreduce(s, d, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
static int b_bcast(void *b, size_t n) { return MPI_Bcast(b, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD); }
static int b_allgather(const void *s, void *d, size_t n)
{
    return MPI_Allgather(s, (int)n, MPI_BYTE, d, (int)n, MPI_BYTE, MPI_COMM_WORLD);
}
static int b_alltoall(const void *s, void *d, size_t n)
{
    return MPI_Alltoall(s, (int)n, MPI_BYTE, d, (int)n, MPI_BYTE, MPI_COMM_WORLD);
}
static int b_reduce(const double *s, double *d, size_t n)
{
    return MPI_Reduce(s, d, (int)n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
}
static int b_gather(const void *s, void *d, size_t n)
{
    return MPI_Gather(s, (int)n, MPI_BYTE, d, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
}
static int b_scatter(const void *s, void *d, size_t n)
{
    return MPI_Scatter(s, (int)n, MPI_BYTE, d, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
}
static int b_barrier(void) { return MPI_Barrier(MPI_COMM_WORLD); }
#else
static xdev_t *dev;
static xdev_coll_group_t *grp;
static const xdev_coll_op_t dsum = {XDEV_COLL_DOUBLE, XDEV_COLL_SUM, NULL, 0, NULL};
static void b_init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    int rc = xdev_init(NULL, &dev);
    if (!rc) rc = xdev_coll_group_create(dev, NULL, xdev_size(dev), 1, &grp);
    if (rc) {
        fprintf(stderr, "coll-bench: init: %s\n", xdev_strerror(rc));
        exit(1);
    }
    rank = xdev_rank(dev);
    size = xdev_size(dev);
}
static void b_fini(void)
{
    xdev_coll_group_free(grp);
    xdev_finalize(dev);
}
static int b_allreduce(const double *s, double *d, size_t n)
{
    return xdev_coll_allreduce(grp, s, d, n, &dsum);
}
static int b_bcast(void *b, size_t n) { return xdev_coll_bcast(grp, b, n, 0); }
static int b_allgather(const void *s, void *d, size_t n) { return xdev_coll_allgather(grp, s, n, d); }
static int b_alltoall(const void *s, void *d, size_t n) { return xdev_coll_alltoall(grp, s, n, d); }
static int b_reduce(const double *s, double *d, size_t n)
{
    return xdev_coll_reduce(grp, s, d, n, &dsum, 0);
}
static int b_gather(const void *s, void *d, size_t n) { return xdev_coll_gather(grp, s, n, d, 0); }
static int b_scatter(const void *s, void *d, size_t n) { return xdev_coll_scatter(grp, s, d, n, 0); }
static int b_barrier(void) { return xdev_coll_barrier(grp); }
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

enum op { ALLREDUCE, BCAST, ALLGATHER, ALLTOALL, REDUCE, GATHER, SCATTER, BARRIER, N_OPS };
static const char *op_names[N_OPS] = {"allreduce", "bcast",  "allgather", "alltoall",
                                      "reduce",    "gather", "scatter",   "barrier"};

/* s and d hold SIZE bytes per rank; scatter reads them from s at the root. */
static int run_op(int op, void *s, void *d, size_t n)
{
    switch (op) {
    case ALLREDUCE: return b_allreduce(s, d, n / sizeof(double));
    case BCAST: return b_bcast(s, n);
    case ALLGATHER: return b_allgather(s, d, n);
    case ALLTOALL: return b_alltoall(s, d, n);
    case REDUCE: return b_reduce(s, d, n / sizeof(double));
    case GATHER: return b_gather(s, d, n);
    case SCATTER: return b_scatter(s, d, n);
    default: return b_barrier();
    }
}

/* Whether op is in the comma-separated list (whole names only). */
static int listed(const char *list, const char *op)
{
    size_t len = strlen(op);
    for (const char *p = list; (p = strstr(p, op)); p += len)
        if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == '\0')) return 1;
    return 0;
}

/* Whether every name in the comma-separated list is an op: a misspelt
 * one would otherwise time nothing and say nothing. */
static int all_known(const char *list)
{
    for (const char *p = list;; p++) {
        size_t len = strcspn(p, ",");
        int found = 0;
        for (int op = 0; op < N_OPS; op++)
            found |= strlen(op_names[op]) == len && strncmp(p, op_names[op], len) == 0;
        if (!found) return 0;
        p += len;
        if (!*p) return 1;
    }
}

static void check(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "coll-bench: rank %d: %s failed (%d)\n", rank, what, rc);
        exit(1);
    }
}

enum timing { BACK_TO_BACK = 1, PER_CALL = 2 };
static const char *timing_names[] = {NULL, "back-to-back", "per-call"};

/* Time `iters` calls; returns the mean seconds per call averaged over ranks. */
static double timed(enum timing how, int op, void *s, void *d, size_t n, long iters)
{
    double mine = 0, sum = 0;
    check(b_barrier(), "barrier");
    if (how == BACK_TO_BACK) {
        double t0 = now();
        for (long i = 0; i < iters; i++) check(run_op(op, s, d, n), op_names[op]);
        mine = now() - t0;
    } else {
        for (long i = 0; i < iters; i++) {
            double t0 = now();
            check(run_op(op, s, d, n), op_names[op]);
            mine += now() - t0;
            check(b_barrier(), "barrier");
        }
    }
    mine /= (double)iters;
    check(b_allreduce(&mine, &sum, 1), "allreduce of times");
    return sum / size;
}

/* How many iterations fit the budget: 10 probe calls, with the barriers
 * the mode puts between them (rank 0's estimate, broadcast so every rank
 * runs the same count). */
static long fit_iters(enum timing how, int op, void *s, void *d, size_t n, long cap, double budget)
{
    check(b_barrier(), "barrier");
    double t0 = now();
    for (int i = 0; i < 10; i++) {
        check(run_op(op, s, d, n), op_names[op]);
        if (how == PER_CALL) check(b_barrier(), "barrier");
    }
    double probe = (now() - t0) / 10;
    double it = budget / (probe > 0 ? probe : 1e-9);
    double iters_d = it < (double)cap ? it : (double)cap;
    if (iters_d < 10) iters_d = 10;
    check(b_bcast(&iters_d, sizeof iters_d), "bcast of iterations");
    return (long)iters_d;
}

/* back-to-back, per-call or both; 0 if neither. */
static int parse_timing(const char *v)
{
    if (!strcmp(v, "back-to-back")) return BACK_TO_BACK;
    if (!strcmp(v, "per-call")) return PER_CALL;
    if (!strcmp(v, "both")) return BACK_TO_BACK | PER_CALL;
    return 0;
}

/* The comma-separated sizes into out (at most max); how many, or 0 if one
 * is not a size, so that "64KB" is refused rather than timed as 64 bytes. */
static int parse_sizes(const char *list, size_t *out, int max)
{
    int n = 0;
    for (const char *p = list;; p++) {
        char tok[32];
        size_t len = strcspn(p, ",");
        if (n == max || len >= sizeof tok) return 0;
        memcpy(tok, p, len);
        tok[len] = '\0';
        if (xdev_parse_size(tok, &out[n++])) return 0;
        p += len;
        if (!*p) return n;
    }
}

int main(int argc, char **argv)
{
    const char *ops = "allreduce,bcast,allgather,alltoall,reduce,gather,scatter,barrier";
    size_t sizes[32] = { 8, 1 << 20 };
    int nsizes = 2;
    long max_iters = 0; /* 0: OSU's default for the size */
    double budget = 1.0;
    int timings = BACK_TO_BACK;
    b_init(&argc, &argv);
    const char *bad = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *v = argv[i + 1];
        if (!strcmp(argv[i], "--ops")) {
            ops = v;
            if (!all_known(v)) bad = argv[i];
        }
        else if (!strcmp(argv[i], "--sizes")) {
            if (!(nsizes = parse_sizes(v, sizes, 32))) bad = argv[i];
        }
        else if (!strcmp(argv[i], "--iters")) max_iters = atol(v);
        else if (!strcmp(argv[i], "--budget")) budget = atof(v);
        else if (!strcmp(argv[i], "--timing")) {
            if (!(timings = parse_timing(v))) bad = argv[i];
        } else bad = argv[i];
    }
    if (bad) {
        if (rank == 0) fprintf(stderr, "coll-bench: unknown option or value at %s\n", bad);
        b_fini();
        return 2;
    }
    if (rank == 0) printf("op,timing,size,iters,value,unit\n");
    for (int op = 0; op < N_OPS; op++) {
        if (!listed(ops, op_names[op])) continue;
        for (int k = 0; k < nsizes; k++) {
            size_t n = sizes[k];
            if (op == ALLREDUCE || op == REDUCE) n = (n + 7) / 8 * 8;
            if (op == BARRIER) n = 0;
            size_t bytes = op == ALLREDUCE || op == BCAST || op == REDUCE ? n : n * (size_t)size;
            char *s = malloc(bytes ? bytes : 1), *d = malloc(bytes ? bytes : 1);
            if (!s || !d) check(1, "malloc");
            /* Written before timing, as OSU's benchmarks do: a fresh
             * mapping never written reads as the kernel's one zero page,
             * which every copy from it then finds in cache. */
            memset(s, 'a' + rank % 16, bytes ? bytes : 1);
            memset(d, 0, bytes ? bytes : 1);
            long cap = max_iters ? max_iters : n <= 8192 ? 10000 : 1000;
            for (enum timing how = BACK_TO_BACK; how <= PER_CALL; how++) {
                if (!(timings & how)) continue;
                long iters = fit_iters(how, op, s, d, n, cap, budget);
                timed(how, op, s, d, n, iters / 10 + 1); /* warm-up */
                double t = timed(how, op, s, d, n, iters);
                if (rank == 0)
                    printf("%s,%s,%zu,%ld,%.3f,us\n", op_names[op], timing_names[how], n, iters, t * 1e6);
            }
            free(s);
            free(d);
            if (op == BARRIER) break; /* one size is enough */
        }
    }
    b_fini();
    return 0;
}
