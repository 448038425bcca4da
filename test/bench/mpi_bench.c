/*
 * mpi-bench - the MPI baseline for xdev-bench.
 *
 * Runs as both ranks of a 2-rank MPI job and runs the tests of xdev-bench
 * with the same method, sizes, iteration and warm-up counts, window, 4-byte
 * ack, barrier, buffers, clock and output formats, so that a script can
 * join the two on (test, size):
 *
 *   latency  MPI_Send / MPI_Recv ping-pong; half the round trip, in us
 *   bw       rank 0 posts a window of MPI_Isend and waits for them one by
 *            one in posting order, rank 1 the matching MPI_Irecv, then acks
 *            the window with a 4-byte message; MB/s (1e6 bytes/s)
 *   bibw     both ranks post a window of receives and of sends at once
 *   rate     the bw pattern in messages/s, sizes up to 8 KiB
 *
 * Like xdev-bench, requests are completed one at a time (MPI_Wait in
 * posting order, as xdev_wait does) rather than with MPI_Waitall, every
 * window's messages go from one send buffer into one receive buffer, the
 * barrier is a zero-byte exchange on its own tag, and MPI runs at
 * MPI_THREAD_SINGLE (compare-shm.sh runs xdev with XDEV_THREADS=single).
 *
 * Not built by meson: the MPI packages are optional. compare-shm.sh builds
 * it with each MPI's wrapper, e.g.
 *     mpicc.openmpi -O2 -Wall -Wextra -o mpi-bench.openmpi mpi_bench.c
 *     mpicc.mpich   -O2 -Wall -Wextra -o mpi-bench.mpich   mpi_bench.c
 *
 * --plan prints, without starting MPI, one CSV line per test and size the
 * options select: test,size,iters,warmup,window,unit (window 0 for
 * latency). compare-shm.sh uses it to run ucx_perftest over the same tests,
 * sizes and counts.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

enum { TAG_DATA = 1, TAG_ACK = 2, TAG_BARRIER = 3 };

#define ACK_BYTES 4
#define LARGE_MESSAGE 8192          /* OSU: bigger sizes get fewer iterations */
#define RATE_MAX_SIZE 8192          /* the rate test covers small sizes only */
#define MAX_SIZE_LIMIT (1ul << 30)
#define DEFAULT_WINDOW 64

enum format { FMT_TABLE, FMT_CSV, FMT_JSON };

struct opts {
    size_t min_size, max_size;
    long iters;   /* 0: OSU default for the test and size */
    long warmup;  /* -1: OSU default for the test and size */
    int window;
    unsigned tests; /* bit i selects tests[i] */
    enum format fmt;
    int plan;     /* --plan: print the plan, do not start MPI */
    int help;     /* -h: print usage (rank 0) and exit 0 */
    int error;    /* bad command line: exit 2 */
};

struct bench {
    MPI_Comm comm;
    int rank;
    int peer;
    int window;
    char *sbuf, *rbuf;             /* max_size bytes each, page-aligned */
    char ack[ACK_BYTES];
    MPI_Request *sreq, *rreq;      /* window requests each */
};

struct test {
    const char *name;
    const char *column;  /* header of the value column in the table */
    const char *unit;    /* unit in CSV and JSON */
    int decimals;        /* of the value in the table */
    int windowed;        /* bw-style: iterations count windows */
    size_t max_size;     /* largest size the test runs; 0: no cap */
    /* Runs one size; the return value is meaningful on rank 0 only. */
    double (*run)(struct bench *b, size_t size, long iters, long warmup);
};

static int my_rank = -1; /* for diagnostics only */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* MPI's default error handler (MPI_ERRORS_ARE_FATAL) aborts the job on any
 * error, so the calls below need no checks. Sizes are at most 1 GiB, so
 * they fit MPI's int counts. */

/* ---- communication helpers ---- */

static void wait_all(MPI_Request *reqs, int n)
{
    for (int i = 0; i < n; i++)
        MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
}

static void post_sends(struct bench *b, size_t size)
{
    for (int i = 0; i < b->window; i++)
        MPI_Isend(b->sbuf, (int)size, MPI_BYTE, b->peer, TAG_DATA, b->comm, &b->sreq[i]);
}

static void post_recvs(struct bench *b, size_t size)
{
    for (int i = 0; i < b->window; i++)
        MPI_Irecv(b->rbuf, (int)size, MPI_BYTE, b->peer, TAG_DATA, b->comm, &b->rreq[i]);
}

/* Zero-byte exchange: neither rank leaves before both have arrived. */
static void barrier(struct bench *b)
{
    if (b->rank == 0) {
        MPI_Send(NULL, 0, MPI_BYTE, b->peer, TAG_BARRIER, b->comm);
        MPI_Recv(NULL, 0, MPI_BYTE, b->peer, TAG_BARRIER, b->comm, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(NULL, 0, MPI_BYTE, b->peer, TAG_BARRIER, b->comm, MPI_STATUS_IGNORE);
        MPI_Send(NULL, 0, MPI_BYTE, b->peer, TAG_BARRIER, b->comm);
    }
}

/* ---- the tests ---- */

static double run_latency(struct bench *b, size_t size, long iters, long warmup)
{
    double t0 = now();
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = now();
        if (b->rank == 0) {
            MPI_Send(b->sbuf, (int)size, MPI_BYTE, b->peer, TAG_DATA, b->comm);
            MPI_Recv(b->rbuf, (int)size, MPI_BYTE, b->peer, TAG_DATA, b->comm,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(b->rbuf, (int)size, MPI_BYTE, b->peer, TAG_DATA, b->comm,
                     MPI_STATUS_IGNORE);
            MPI_Send(b->sbuf, (int)size, MPI_BYTE, b->peer, TAG_DATA, b->comm);
        }
    }
    return (now() - t0) * 1e6 / (2.0 * iters);
}

/* The bw pattern: rank 0 sends windows, rank 1 acks each one. Returns the
 * seconds the timed windows took. */
static double time_windows(struct bench *b, size_t size, long iters, long warmup)
{
    double t0 = now();
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = now();
        if (b->rank == 0) {
            post_sends(b, size);
            wait_all(b->sreq, b->window);
            MPI_Recv(b->ack, ACK_BYTES, MPI_BYTE, b->peer, TAG_ACK, b->comm, MPI_STATUS_IGNORE);
        } else {
            post_recvs(b, size);
            wait_all(b->rreq, b->window);
            MPI_Send(b->ack, ACK_BYTES, MPI_BYTE, b->peer, TAG_ACK, b->comm);
        }
    }
    return now() - t0;
}

static double run_bw(struct bench *b, size_t size, long iters, long warmup)
{
    double t = time_windows(b, size, iters, warmup);
    return (double)size * b->window * iters / t / 1e6;
}

static double run_rate(struct bench *b, size_t size, long iters, long warmup)
{
    double t = time_windows(b, size, iters, warmup);
    return (double)b->window * iters / t;
}

/* Both ranks post a window of receives and a window of sends at once; the
 * result counts the bytes of both directions. */
static double run_bibw(struct bench *b, size_t size, long iters, long warmup)
{
    double t0 = now();
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = now();
        post_recvs(b, size);
        post_sends(b, size);
        wait_all(b->sreq, b->window);
        wait_all(b->rreq, b->window);
    }
    return 2.0 * size * b->window * iters / (now() - t0) / 1e6;
}

static const struct test tests[] = {
    { "latency", "latency(us)", "us", 2, 0, 0, run_latency },
    { "bw", "bandwidth(MB/s)", "MB/s", 2, 1, 0, run_bw },
    { "bibw", "bandwidth(MB/s)", "MB/s", 2, 1, 0, run_bibw },
    { "rate", "rate(msg/s)", "msg/s", 0, 1, RATE_MAX_SIZE, run_rate },
};
#define NTESTS (sizeof tests / sizeof tests[0])

/* OSU's iteration counts, unless --iters / --warmup override them. */
static void iterations(const struct opts *o, const struct test *t, size_t size, long *iters,
                       long *warmup)
{
    int large = size > LARGE_MESSAGE;
    if (t->windowed) {
        *iters = large ? 20 : 100;
        *warmup = large ? 2 : 10;
    } else {
        *iters = large ? 1000 : 10000;
        *warmup = large ? 100 : 1000;
    }
    if (o->iters > 0)
        *iters = o->iters;
    if (o->warmup >= 0)
        *warmup = o->warmup;
}

/* Sizes: 0 if --min is 0, then the powers of two in [min, max]. */
static size_t first_size(size_t min)
{
    size_t s = 1;
    if (min == 0)
        return 0;
    while (s < min)
        s *= 2;
    return s;
}

static size_t next_size(size_t s)
{
    return s == 0 ? 1 : 2 * s;
}

/* ---- output ---- */

static void print_begin(enum format fmt)
{
    if (fmt == FMT_CSV)
        printf("test,size,iters,value,unit\n");
}

static void print_title(enum format fmt, const struct test *t, const char *transport,
                        int window)
{
    if (fmt != FMT_TABLE)
        return;
    printf("# mpi %s (%s, 2 ranks", t->name, transport);
    if (t->windowed)
        printf(", window %d", window);
    printf(")\n%-10s %18s\n", "size", t->column);
}

static void print_row(enum format fmt, const struct test *t, const char *transport,
                      size_t size, long iters, double value)
{
    switch (fmt) {
    case FMT_TABLE:
        printf("%-10zu %18.*f\n", size, t->decimals, value);
        break;
    case FMT_CSV:
        printf("%s,%zu,%ld,%.3f,%s\n", t->name, size, iters, value, t->unit);
        break;
    case FMT_JSON:
        printf("{\"test\":\"%s\",\"size\":%zu,\"iters\":%ld,\"value\":%.3f,\"unit\":\"%s\","
               "\"transport\":\"%s\"}\n",
               t->name, size, iters, value, t->unit, transport);
        break;
    }
    fflush(stdout);
}

static void print_end(enum format fmt)
{
    if (fmt == FMT_TABLE)
        printf("\n");
}

/* ---- command line ---- */

static void usage(FILE *f)
{
    fprintf(f,
        "Usage: mpirun -n 2 mpi-bench [options]\n"
        "xdev-bench's point-to-point benchmarks over MPI, between the two ranks of\n"
        "an MPI job.\n"
        "\n"
        "Tests:\n"
        "  latency  ping-pong with MPI_Send/MPI_Recv; half the round trip, in us\n"
        "  bw       rank 0 posts a window of MPI_Isend and waits for them all, rank 1\n"
        "           the matching MPI_Irecv, then acks the window with a 4-byte\n"
        "           message; MB/s (1e6 bytes/s)\n"
        "  bibw     both ranks post a window of receives and of sends at once;\n"
        "           MB/s of both directions together\n"
        "  rate     the bw pattern in messages/s; sizes up to %d bytes only\n"
        "\n"
        "Options:\n"
        "  --tests LIST  comma-separated tests to run (default latency,bw,bibw,rate)\n"
        "  --min SIZE    smallest size (default 1); 0 adds a zero-byte size first\n"
        "  --max SIZE    largest size (default 4M, at most 1G)\n"
        "                sizes are the powers of two from --min to --max; SIZE may\n"
        "                end in K, M or G (powers of 1024)\n"
        "  --iters N     timed iterations per size (windows for bw, bibw, rate);\n"
        "                default as OSU: latency 10000, windows 100 up to %d bytes,\n"
        "                latency 1000, windows 20 above\n"
        "  --warmup N    untimed iterations before them; default latency 1000,\n"
        "                windows 10 up to %d bytes, latency 100, windows 2 above\n"
        "  --window W    messages per window (default %d)\n"
        "  --csv         CSV: the header line test,size,iters,value,unit, then one\n"
        "                line per test and size (units: us, MB/s, msg/s)\n"
        "  --json        JSON Lines: one object per test and size\n"
        "  --plan        print test,size,iters,warmup,window,unit for every test and\n"
        "                size the other options select, without starting MPI; exit\n"
        "  -h, --help    this text\n"
        "\n"
        "Rank 0 prints; MPI errors abort the job.\n",
        RATE_MAX_SIZE, LARGE_MESSAGE, LARGE_MESSAGE, DEFAULT_WINDOW);
}

/* Command-line errors are reported by the caller of parse_args, which
 * knows whether MPI is running and which rank should speak. */
static char arg_error[256];

static int bad_arg(struct opts *o, const char *opt, const char *val)
{
    snprintf(arg_error, sizeof arg_error, "bad value for %s: '%s' (try --help)", opt, val);
    o->error = 1;
    return 0;
}

static long parse_long(struct opts *o, const char *opt, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return bad_arg(o, opt, s);
    return v;
}

static size_t parse_size(struct opts *o, const char *opt, const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || !isdigit((unsigned char)s[0]))
        return bad_arg(o, opt, s);
    switch (*end) {
    case 'g': case 'G': v <<= 10; /* fall through */
    case 'm': case 'M': v <<= 10; /* fall through */
    case 'k': case 'K': v <<= 10; end++; break;
    default: break;
    }
    if (*end || v > MAX_SIZE_LIMIT)
        return bad_arg(o, opt, s);
    return (size_t)v;
}

static unsigned parse_tests(struct opts *o, const char *list)
{
    unsigned mask = 0;
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, ",");
        size_t i;
        for (i = 0; i < NTESTS; i++)
            if (strlen(tests[i].name) == len && strncmp(tests[i].name, p, len) == 0)
                break;
        if (i == NTESTS)
            return bad_arg(o, "--tests", list);
        mask |= 1u << i;
        p += len + (p[len] == ',');
    }
    if (!mask)
        return bad_arg(o, "--tests", list);
    return mask;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
    enum { O_MIN = 256, O_MAX, O_ITERS, O_WARMUP, O_WINDOW, O_TESTS, O_CSV, O_JSON, O_PLAN };
    static const struct option longopts[] = {
        { "min", required_argument, NULL, O_MIN },
        { "max", required_argument, NULL, O_MAX },
        { "iters", required_argument, NULL, O_ITERS },
        { "warmup", required_argument, NULL, O_WARMUP },
        { "window", required_argument, NULL, O_WINDOW },
        { "tests", required_argument, NULL, O_TESTS },
        { "csv", no_argument, NULL, O_CSV },
        { "json", no_argument, NULL, O_JSON },
        { "plan", no_argument, NULL, O_PLAN },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    *o = (struct opts){ .min_size = 1, .max_size = 4ul << 20, .iters = 0, .warmup = -1,
                        .window = DEFAULT_WINDOW, .tests = (1u << NTESTS) - 1,
                        .fmt = FMT_TABLE };
    int c;
    opterr = 0; /* getopt's own messages would come from every rank */
    while (!o->error && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_MIN: o->min_size = parse_size(o, "--min", optarg); break;
        case O_MAX: o->max_size = parse_size(o, "--max", optarg); break;
        case O_ITERS: o->iters = parse_long(o, "--iters", optarg, 1, 1000000000); break;
        case O_WARMUP: o->warmup = parse_long(o, "--warmup", optarg, 0, 1000000000); break;
        case O_WINDOW: o->window = (int)parse_long(o, "--window", optarg, 1, 1 << 20); break;
        case O_TESTS: o->tests = parse_tests(o, optarg); break;
        case O_CSV: o->fmt = FMT_CSV; break;
        case O_JSON: o->fmt = FMT_JSON; break;
        case O_PLAN: o->plan = 1; break;
        case 'h': o->help = 1; break;
        default:
            snprintf(arg_error, sizeof arg_error, "bad option '%s' (try --help)",
                     argv[optind - 1]);
            o->error = 1;
            break;
        }
    }
    if (o->error || o->help)
        return;
    if (optind < argc) {
        snprintf(arg_error, sizeof arg_error, "unexpected argument '%s' (try --help)",
                 argv[optind]);
        o->error = 1;
    } else if (o->min_size > o->max_size) {
        snprintf(arg_error, sizeof arg_error, "--min is larger than --max");
        o->error = 1;
    }
}

/* --plan: what a run with these options would measure. */
static void print_plan(const struct opts *o)
{
    printf("test,size,iters,warmup,window,unit\n");
    for (size_t i = 0; i < NTESTS; i++) {
        if (!(o->tests & (1u << i)))
            continue;
        const struct test *t = &tests[i];
        for (size_t size = first_size(o->min_size); size <= o->max_size;
             size = next_size(size)) {
            if (t->max_size && size > t->max_size)
                break;
            long iters, warmup;
            iterations(o, t, size, &iters, &warmup);
            printf("%s,%zu,%ld,%ld,%d,%s\n", t->name, size, iters, warmup,
                   t->windowed ? o->window : 0, t->unit);
        }
    }
}

/* ---- main ---- */

static void *alloc_buffer(size_t size)
{
    void *p = NULL;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    int rc = posix_memalign(&p, page, size ? size : 1);
    if (rc) {
        fprintf(stderr, "mpi-bench: rank %d: cannot allocate %zu bytes: %s\n", my_rank, size,
                strerror(rc));
        MPI_Abort(MPI_COMM_WORLD, 1);
        exit(1); /* MPI_Abort is not declared noreturn */
    }
    memset(p, 'a' + my_rank, size ? size : 1); /* touch every page before timing */
    return p;
}

static void run_test(struct bench *b, const struct opts *o, const struct test *t,
                     const char *transport)
{
    if (b->rank == 0)
        print_title(o->fmt, t, transport, o->window);
    for (size_t size = first_size(o->min_size); size <= o->max_size; size = next_size(size)) {
        if (t->max_size && size > t->max_size)
            break;
        long iters, warmup;
        iterations(o, t, size, &iters, &warmup);
        barrier(b);
        double value = t->run(b, size, iters, warmup);
        if (b->rank == 0)
            print_row(o->fmt, t, transport, size, iters, value);
    }
    if (b->rank == 0)
        print_end(o->fmt);
}

/* "Open MPI", "MPICH": the library's name, for the table and JSON output. */
static void library_name(char *name, size_t cap)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    snprintf(name, cap, "%s",
             strstr(version, "Open MPI") ? "Open MPI" :
             strstr(version, "MPICH") ? "MPICH" : "MPI");
}

int main(int argc, char **argv)
{
    struct opts o;
    parse_args(argc, argv, &o);
    if (o.plan || (o.help && !o.error)) {   /* no MPI needed: one process prints */
        if (o.error)
            fprintf(stderr, "mpi-bench: %s\n", arg_error);
        else if (o.help)
            usage(stdout);
        else
            print_plan(&o);
        return o.error ? 2 : 0;
    }

    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    struct bench b = { .comm = MPI_COMM_WORLD, .window = o.window };
    MPI_Comm_rank(b.comm, &b.rank);
    my_rank = b.rank;
    if (o.error) {
        if (b.rank == 0)
            fprintf(stderr, "mpi-bench: %s\n", arg_error);
        MPI_Finalize();
        return 2;
    }
    int nranks;
    MPI_Comm_size(b.comm, &nranks);
    if (nranks != 2) {
        if (b.rank == 0)
            fprintf(stderr, "mpi-bench: needs exactly 2 ranks, the job has %d\n", nranks);
        MPI_Finalize();
        return 1;
    }
    b.peer = 1 - b.rank;

    char transport[64];
    library_name(transport, sizeof transport);

    b.sbuf = alloc_buffer(o.max_size);
    b.rbuf = alloc_buffer(o.max_size);
    b.sreq = calloc(o.window, sizeof *b.sreq);
    b.rreq = calloc(o.window, sizeof *b.rreq);
    if (!b.sreq || !b.rreq) {
        fprintf(stderr, "mpi-bench: rank %d: cannot allocate requests\n", b.rank);
        MPI_Abort(b.comm, 1);
    }

    if (b.rank == 0)
        print_begin(o.fmt);
    for (size_t i = 0; i < NTESTS; i++) {
        if (o.tests & (1u << i)) {
            barrier(&b);
            run_test(&b, &o, &tests[i], transport);
        }
    }
    barrier(&b);

    free(b.sbuf);
    free(b.rbuf);
    free(b.sreq);
    free(b.rreq);
    MPI_Finalize();
    return 0;
}
