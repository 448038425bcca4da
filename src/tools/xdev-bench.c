/*
 * xdev-bench - OSU-style point-to-point micro-benchmarks over xdev.
 *
 * Runs as both ranks of a 2-rank job:  xdevrun -n 2 xdev-bench [options]
 * Both ranks parse the same argv, so they agree on every parameter; rank 0
 * times and prints. See usage() for the tests and the output formats.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xdev.h"

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
    int ctx;
    unsigned tests; /* bit i selects tests[i] */
    enum format fmt;
};

struct bench {
    xdev_t *dev;
    int rank;
    int peer;
    int ctx;
    int window;
    char *sbuf, *rbuf;             /* max_size bytes each, page-aligned */
    char ack[ACK_BYTES];
    xdev_request_t *sreq, *rreq;   /* window requests each */
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

static void die_xdev(int rc, const char *what)
{
    fprintf(stderr, "xdev-bench: rank %d: %s: %s\n", my_rank, what, xdev_strerror(rc));
    exit(1);
}

static void check(int rc, const char *what)
{
    if (rc != XDEV_OK)
        die_xdev(rc, what);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- communication helpers ---- */

static void wait_all(xdev_request_t *reqs, int n)
{
    for (int i = 0; i < n; i++) {
        xdev_status_t st;
        check(xdev_wait(&reqs[i], &st), "xdev_wait");
        check(st.error, "request");
    }
}

static void post_sends(struct bench *b, size_t size)
{
    for (int i = 0; i < b->window; i++)
        check(xdev_isend(b->dev, b->sbuf, size, b->peer, TAG_DATA, b->ctx, &b->sreq[i]),
              "xdev_isend");
}

static void post_recvs(struct bench *b, size_t size)
{
    for (int i = 0; i < b->window; i++)
        check(xdev_irecv(b->dev, b->rbuf, size, b->peer, TAG_DATA, b->ctx, &b->rreq[i]),
              "xdev_irecv");
}

/* Zero-byte exchange: neither rank leaves before both have arrived. */
static void barrier(struct bench *b)
{
    if (b->rank == 0) {
        check(xdev_send(b->dev, NULL, 0, b->peer, TAG_BARRIER, b->ctx), "xdev_send (barrier)");
        check(xdev_recv(b->dev, NULL, 0, b->peer, TAG_BARRIER, b->ctx, NULL),
              "xdev_recv (barrier)");
    } else {
        check(xdev_recv(b->dev, NULL, 0, b->peer, TAG_BARRIER, b->ctx, NULL),
              "xdev_recv (barrier)");
        check(xdev_send(b->dev, NULL, 0, b->peer, TAG_BARRIER, b->ctx), "xdev_send (barrier)");
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
            check(xdev_send(b->dev, b->sbuf, size, b->peer, TAG_DATA, b->ctx), "xdev_send");
            check(xdev_recv(b->dev, b->rbuf, size, b->peer, TAG_DATA, b->ctx, NULL), "xdev_recv");
        } else {
            check(xdev_recv(b->dev, b->rbuf, size, b->peer, TAG_DATA, b->ctx, NULL), "xdev_recv");
            check(xdev_send(b->dev, b->sbuf, size, b->peer, TAG_DATA, b->ctx), "xdev_send");
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
            check(xdev_recv(b->dev, b->ack, ACK_BYTES, b->peer, TAG_ACK, b->ctx, NULL),
                  "xdev_recv (ack)");
        } else {
            post_recvs(b, size);
            wait_all(b->rreq, b->window);
            check(xdev_send(b->dev, b->ack, ACK_BYTES, b->peer, TAG_ACK, b->ctx),
                  "xdev_send (ack)");
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
    printf("# xdev %s (transport %s, 2 ranks", t->name, transport);
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
        "Usage: xdevrun -n 2 xdev-bench [options]\n"
        "OSU-style point-to-point benchmarks between the two ranks of a job.\n"
        "\n"
        "Tests:\n"
        "  latency  ping-pong with xdev_send/xdev_recv; half the round trip, in us\n"
        "  bw       rank 0 posts a window of xdev_isend and waits for them all, rank 1\n"
        "           the matching xdev_irecv, then acks the window with a 4-byte\n"
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
        "  --ctx C       xdev context to use (default 0)\n"
        "  --csv         CSV: the header line test,size,iters,value,unit, then one\n"
        "                line per test and size (units: us, MB/s, msg/s)\n"
        "  --json        JSON Lines: one object per test and size, each on its own\n"
        "                line, e.g. {\"test\":\"bw\",\"size\":1024,\"iters\":100,\n"
        "                \"value\":812.500,\"unit\":\"MB/s\",\"transport\":\"tcp\"}\n"
        "  -h, --help    this text\n"
        "\n"
        "The default output is one table per test. The transport named in it is\n"
        "$XDEV_TRANSPORT, or \"auto\" if unset. Rank 0 prints; errors go to stderr\n"
        "and make the program exit non-zero.\n",
        RATE_MAX_SIZE, LARGE_MESSAGE, LARGE_MESSAGE, DEFAULT_WINDOW);
}

static void bad_arg(const char *opt, const char *val)
{
    fprintf(stderr, "xdev-bench: bad value for %s: '%s' (try --help)\n", opt, val);
    exit(2);
}

static long parse_long(const char *opt, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        bad_arg(opt, s);
    return v;
}

static size_t parse_size(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || !isdigit((unsigned char)s[0]))
        bad_arg(opt, s);
    switch (*end) {
    case 'g': case 'G': v <<= 10; /* fall through */
    case 'm': case 'M': v <<= 10; /* fall through */
    case 'k': case 'K': v <<= 10; end++; break;
    default: break;
    }
    if (*end || v > MAX_SIZE_LIMIT)
        bad_arg(opt, s);
    return (size_t)v;
}

static unsigned parse_tests(const char *list)
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
            bad_arg("--tests", list);
        mask |= 1u << i;
        p += len + (p[len] == ',');
    }
    if (!mask)
        bad_arg("--tests", list);
    return mask;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
    enum { O_MIN = 256, O_MAX, O_ITERS, O_WARMUP, O_WINDOW, O_TESTS, O_CTX, O_CSV, O_JSON };
    static const struct option longopts[] = {
        { "min", required_argument, NULL, O_MIN },
        { "max", required_argument, NULL, O_MAX },
        { "iters", required_argument, NULL, O_ITERS },
        { "warmup", required_argument, NULL, O_WARMUP },
        { "window", required_argument, NULL, O_WINDOW },
        { "tests", required_argument, NULL, O_TESTS },
        { "ctx", required_argument, NULL, O_CTX },
        { "csv", no_argument, NULL, O_CSV },
        { "json", no_argument, NULL, O_JSON },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    *o = (struct opts){ .min_size = 1, .max_size = 4ul << 20, .iters = 0, .warmup = -1,
                        .window = DEFAULT_WINDOW, .ctx = 0, .tests = (1u << NTESTS) - 1,
                        .fmt = FMT_TABLE };
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_MIN: o->min_size = parse_size("--min", optarg); break;
        case O_MAX: o->max_size = parse_size("--max", optarg); break;
        case O_ITERS: o->iters = parse_long("--iters", optarg, 1, 1000000000); break;
        case O_WARMUP: o->warmup = parse_long("--warmup", optarg, 0, 1000000000); break;
        case O_WINDOW: o->window = (int)parse_long("--window", optarg, 1, 1 << 20); break;
        case O_TESTS: o->tests = parse_tests(optarg); break;
        case O_CTX: o->ctx = (int)parse_long("--ctx", optarg, 0, 0x7fffffff); break;
        case O_CSV: o->fmt = FMT_CSV; break;
        case O_JSON: o->fmt = FMT_JSON; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "xdev-bench: unexpected argument '%s' (try --help)\n", argv[optind]);
        exit(2);
    }
    if (o->min_size > o->max_size) {
        fprintf(stderr, "xdev-bench: --min is larger than --max\n");
        exit(2);
    }
}

/* ---- main ---- */

static void *alloc_buffer(size_t size)
{
    void *p;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    int rc = posix_memalign(&p, page, size ? size : 1);
    if (rc) {
        fprintf(stderr, "xdev-bench: rank %d: cannot allocate %zu bytes: %s\n", my_rank, size,
                strerror(rc));
        exit(1);
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

int main(int argc, char **argv)
{
    struct opts o;
    parse_args(argc, argv, &o);

    const char *transport = getenv("XDEV_TRANSPORT");
    if (!transport || !*transport)
        transport = "auto";

    struct bench b = { .ctx = o.ctx, .window = o.window };
    check(xdev_init(NULL, &b.dev), "xdev_init");
    b.rank = xdev_rank(b.dev);
    if (b.rank < 0)
        die_xdev(b.rank, "xdev_rank");
    my_rank = b.rank;
    int nranks = xdev_size(b.dev);
    if (nranks < 0)
        die_xdev(nranks, "xdev_size");
    if (nranks != 2) {
        if (b.rank == 0)
            fprintf(stderr, "xdev-bench: needs exactly 2 ranks, the job has %d\n", nranks);
        xdev_finalize(b.dev);
        return 1;
    }
    b.peer = 1 - b.rank;

    b.sbuf = alloc_buffer(o.max_size);
    b.rbuf = alloc_buffer(o.max_size);
    b.sreq = calloc(o.window, sizeof *b.sreq);
    b.rreq = calloc(o.window, sizeof *b.rreq);
    if (!b.sreq || !b.rreq)
        die_xdev(XDEV_ERR_NOMEM, "allocating requests");

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
    check(xdev_finalize(b.dev), "xdev_finalize");
    return 0;
}
