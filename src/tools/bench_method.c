/* The method of xdev-bench and its baselines; see bench_method.h. */
#include "bench_method.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../kit/size.h"

#define LARGE_MESSAGE 8192          /* OSU: bigger sizes get fewer iterations */
#define RATE_MAX_SIZE 8192          /* the rate test covers small sizes only */
#define MAX_SIZE_LIMIT (1ul << 30)  /* also keeps sizes within MPI's int counts */
#define DEFAULT_WINDOW 64

struct bench_test {
    const char *name;
    const char *column;  /* header of the value column in the table */
    const char *unit;    /* unit in CSV and JSON */
    int decimals;        /* of the value in the table */
    int windowed;        /* bw-style: iterations count windows */
    size_t max_size;     /* largest size the test runs; 0: no cap */
};

static const struct bench_test tests[BENCH_NTESTS] = {
    [BENCH_LATENCY] = { "latency", "latency(us)", "us", 2, 0, 0 },
    [BENCH_BW] = { "bw", "bandwidth(MB/s)", "MB/s", 2, 1, 0 },
    [BENCH_BIBW] = { "bibw", "bandwidth(MB/s)", "MB/s", 2, 1, 0 },
    [BENCH_RATE] = { "rate", "rate(msg/s)", "msg/s", 0, 1, RATE_MAX_SIZE },
};

/* The value a test reports from the seconds its timed iterations took. */
static double value(enum bench_test_id test, double secs, size_t size, long iters, int window)
{
    switch (test) {
    case BENCH_LATENCY: return secs * 1e6 / (2.0 * iters);  /* half the round trip */
    case BENCH_BW: return (double)size * window * iters / secs / 1e6;
    case BENCH_BIBW: return 2.0 * size * window * iters / secs / 1e6; /* both directions */
    case BENCH_RATE: return (double)window * iters / secs;
    case BENCH_NTESTS: break;
    }
    return 0;
}

/* OSU's iteration counts, unless --iters / --warmup override them, but for
 * ten times OSU's 100 windows of small messages: 6,400 8-byte messages
 * pass in about a millisecond, less than one time slice, and on these
 * 2-core VMs such runs of one build swung between 0.2 and 7 M msg/s. */
static void iterations(const struct bench_opts *o, const struct bench_test *t, size_t size,
                       long *iters, long *warmup)
{
    int large = size > LARGE_MESSAGE;
    if (t->windowed) {
        *iters = large ? 20 : 1000;
        *warmup = large ? 2 : 100;
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
static size_t first_size(const struct bench_opts *o)
{
    size_t s = 1;
    if (o->min_size == 0)
        return 0;
    while (s < o->min_size)
        s *= 2;
    return s;
}

static size_t next_size(size_t s)
{
    return s == 0 ? 1 : 2 * s;
}

static int runs_at(const struct bench_opts *o, const struct bench_test *t, size_t size)
{
    return size <= o->max_size && !(t->max_size && size > t->max_size);
}

/* ---- command line ---- */

void bench_usage(const struct bench_program *p, FILE *f)
{
    fputs(p->about, f);
    fprintf(f,
        "  rate     the bw pattern in messages/s; sizes up to %d bytes only\n"
        "\n"
        "Options:\n"
        "  --tests LIST  comma-separated tests to run (default latency,bw,bibw,rate)\n"
        "  --min SIZE    smallest size (default 1); 0 adds a zero-byte size first\n"
        "  --max SIZE    largest size (default 4M, at most 1G)\n"
        "                sizes are the powers of two from --min to --max; SIZE may\n"
        "                end in K, M or G (powers of 1024)\n"
        "  --iters N     timed iterations per size (windows for bw, bibw, rate);\n"
        "                default latency 10000, windows 1000 up to %d bytes,\n"
        "                latency 1000, windows 20 above (OSU's, but 1000 small\n"
        "                windows, not 100: 100 last about a millisecond)\n"
        "  --warmup N    untimed iterations before them; default latency 1000,\n"
        "                windows 100 up to %d bytes, latency 100, windows 2 above\n"
        "  --window W    messages per window (default %d)\n",
        RATE_MAX_SIZE, LARGE_MESSAGE, LARGE_MESSAGE, DEFAULT_WINDOW);
    if (p->ctx_help)
        fprintf(f, "  --ctx C       %s\n", p->ctx_help);
    fprintf(f,
        "  --csv         CSV: the header line test,size,iters,value,unit, then one\n"
        "                line per test and size (units: us, MB/s, msg/s)\n"
        "  --json        JSON Lines: one object per test and size, each on its own\n"
        "                line, e.g. {\"test\":\"bw\",\"size\":1024,\"iters\":100,\n"
        "                \"value\":812.500,\"unit\":\"MB/s\",\"transport\":\"%s\"}\n",
        p->json_example_transport);
    if (p->plan_help)
        fprintf(f, "  --plan        %s\n", p->plan_help);
    fputs("  -h, --help    this text\n", f);
    if (p->epilogue)
        fputs(p->epilogue, f);
}

/* Returns 0, for the parsers to return once the error is deferred. */
__attribute__((format(printf, 3, 4)))
static int arg_error(const struct bench_program *p, struct bench_opts *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->error, sizeof o->error, fmt, ap);
    va_end(ap);
    if (!p->defer_errors) {
        fprintf(stderr, "%s: %s\n", p->name, o->error);
        exit(2);
    }
    return 0;
}

static int bad_arg(const struct bench_program *p, struct bench_opts *o, const char *opt,
                   const char *val)
{
    return arg_error(p, o, "bad value for %s: '%s' (try --help)", opt, val);
}

static long parse_long(const struct bench_program *p, struct bench_opts *o, const char *opt,
                       const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return bad_arg(p, o, opt, s);
    return v;
}

static size_t parse_size(const struct bench_program *p, struct bench_opts *o, const char *opt,
                         const char *s)
{
    size_t v;
    if (xdev_parse_size(s, &v) != 0 || v > MAX_SIZE_LIMIT)
        return bad_arg(p, o, opt, s);
    return v;
}

static unsigned parse_tests(const struct bench_program *p, struct bench_opts *o,
                            const char *list)
{
    unsigned mask = 0;
    /* An empty name ("", "a,", "a,,b") matches no test, so it is refused too. */
    for (const char *s = list;; s++) {
        size_t len = strcspn(s, ",");
        int i;
        for (i = 0; i < BENCH_NTESTS; i++)
            if (strlen(tests[i].name) == len && strncmp(tests[i].name, s, len) == 0)
                break;
        if (i == BENCH_NTESTS)
            return bad_arg(p, o, "--tests", list);
        mask |= 1u << i;
        s += len;
        if (!*s)
            return mask;
    }
}

void bench_parse_args(const struct bench_program *p, int argc, char **argv,
                      struct bench_opts *o)
{
    enum { O_MIN = 256, O_MAX, O_ITERS, O_WARMUP, O_WINDOW, O_TESTS, O_CTX, O_CSV, O_JSON,
           O_PLAN };
    /* --ctx and --plan only where the program has them, so that an
     * abbreviation such as --c means the same as before they were shared. */
    struct option longopts[] = {
        { "min", required_argument, NULL, O_MIN },
        { "max", required_argument, NULL, O_MAX },
        { "iters", required_argument, NULL, O_ITERS },
        { "warmup", required_argument, NULL, O_WARMUP },
        { "window", required_argument, NULL, O_WINDOW },
        { "tests", required_argument, NULL, O_TESTS },
        { "csv", no_argument, NULL, O_CSV },
        { "json", no_argument, NULL, O_JSON },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
        { NULL, 0, NULL, 0 },
        { NULL, 0, NULL, 0 },
    };
    struct option *opt_end = &longopts[9];
    if (p->ctx_help)
        *opt_end++ = (struct option){ "ctx", required_argument, NULL, O_CTX };
    if (p->plan_help)
        *opt_end++ = (struct option){ "plan", no_argument, NULL, O_PLAN };

    *o = (struct bench_opts){ .min_size = 1, .max_size = 4ul << 20, .iters = 0, .warmup = -1,
                              .window = DEFAULT_WINDOW, .ctx = 0,
                              .tests = (1u << BENCH_NTESTS) - 1, .fmt = BENCH_TABLE };
    /* Deferred errors are reported once; getopt's own would come from every process. */
    opterr = !p->defer_errors;
    int c;
    while (!o->error[0] && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_MIN: o->min_size = parse_size(p, o, "--min", optarg); break;
        case O_MAX: o->max_size = parse_size(p, o, "--max", optarg); break;
        case O_ITERS: o->iters = parse_long(p, o, "--iters", optarg, 1, 1000000000); break;
        case O_WARMUP: o->warmup = parse_long(p, o, "--warmup", optarg, 0, 1000000000); break;
        case O_WINDOW: o->window = (int)parse_long(p, o, "--window", optarg, 1, 1 << 20); break;
        case O_TESTS: o->tests = parse_tests(p, o, optarg); break;
        case O_CTX: o->ctx = (int)parse_long(p, o, "--ctx", optarg, 0, 0x7fffffff); break;
        case O_CSV: o->fmt = BENCH_CSV; break;
        case O_JSON: o->fmt = BENCH_JSON; break;
        case O_PLAN: o->plan = 1; break;
        case 'h':
            if (!p->defer_errors) {
                bench_usage(p, stdout);
                exit(0);
            }
            o->help = 1;
            break;
        default:
            if (!p->defer_errors) {
                bench_usage(p, stderr);
                exit(2);
            }
            arg_error(p, o, "bad option '%s' (try --help)", argv[optind - 1]);
            break;
        }
    }
    if (o->error[0] || o->help)
        return;
    if (optind < argc)
        arg_error(p, o, "unexpected argument '%s' (try --help)", argv[optind]);
    else if (o->min_size > o->max_size)
        arg_error(p, o, "--min is larger than --max");
}

void bench_print_plan(const struct bench_opts *o)
{
    printf("test,size,iters,warmup,window,unit\n");
    for (int i = 0; i < BENCH_NTESTS; i++) {
        if (!(o->tests & (1u << i)))
            continue;
        const struct bench_test *t = &tests[i];
        for (size_t size = first_size(o); runs_at(o, t, size); size = next_size(size)) {
            long iters, warmup;
            iterations(o, t, size, &iters, &warmup);
            printf("%s,%zu,%ld,%ld,%d,%s\n", t->name, size, iters, warmup,
                   t->windowed ? o->window : 0, t->unit);
        }
    }
}

/* ---- running ---- */

static void *alloc_buffer(size_t size, int rank)
{
    void *buf;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    int rc = posix_memalign(&buf, page, size ? size : 1);
    if (rc) {
        errno = rc;
        return NULL;
    }
    memset(buf, 'a' + rank, size ? size : 1); /* touch every page before timing */
    return buf;
}

int bench_setup(const struct bench_program *p, struct bench *b, const struct bench_opts *o)
{
    b->window = o->window;
    b->sbuf = alloc_buffer(o->max_size, b->rank);
    b->rbuf = b->sbuf ? alloc_buffer(o->max_size, b->rank) : NULL;
    if (!b->rbuf) {
        fprintf(stderr, "%s: rank %d: cannot allocate %zu bytes: %s\n", p->name, b->rank,
                o->max_size, strerror(errno));
        return -1;
    }
    return 0;
}

void bench_free(struct bench *b)
{
    free(b->sbuf);
    free(b->rbuf);
}

static void print_title(const struct bench_opts *o, const struct bench_label *l,
                        const struct bench_test *t)
{
    if (o->fmt != BENCH_TABLE)
        return;
    printf("# %s %s (%s", l->system, t->name, l->setup);
    if (t->windowed)
        printf(", window %d", o->window);
    printf(")\n%-10s %18s\n", "size", t->column);
}

static void print_row(const struct bench_opts *o, const struct bench_label *l,
                      const struct bench_test *t, size_t size, long iters, double v)
{
    switch (o->fmt) {
    case BENCH_TABLE:
        printf("%-10zu %18.*f\n", size, t->decimals, v);
        break;
    case BENCH_CSV:
        printf("%s,%zu,%ld,%.3f,%s\n", t->name, size, iters, v, t->unit);
        break;
    case BENCH_JSON:
        printf("{\"test\":\"%s\",\"size\":%zu,\"iters\":%ld,\"value\":%.3f,\"unit\":\"%s\","
               "\"transport\":\"%s\"}\n",
               t->name, size, iters, v, t->unit, l->transport);
        break;
    }
    fflush(stdout);
}

static void run_test(struct bench *b, const struct bench_opts *o, const struct bench_label *l,
                     const struct bench_loops *loops, enum bench_test_id test)
{
    const struct bench_test *t = &tests[test];
    if (b->rank == 0)
        print_title(o, l, t);
    for (size_t size = first_size(o); runs_at(o, t, size); size = next_size(size)) {
        long iters, warmup;
        iterations(o, t, size, &iters, &warmup);
        loops->barrier(b);
        double secs = loops->run(b, test, size, iters, warmup);
        if (b->rank == 0)
            print_row(o, l, t, size, iters, value(test, secs, size, iters, o->window));
    }
    if (b->rank == 0 && o->fmt == BENCH_TABLE)
        printf("\n");
}

void bench_run(struct bench *b, const struct bench_opts *o, const struct bench_label *l,
               const struct bench_loops *loops)
{
    if (b->rank == 0 && o->fmt == BENCH_CSV)
        printf("test,size,iters,value,unit\n");
    for (int i = 0; i < BENCH_NTESTS; i++) {
        if (o->tests & (1u << i)) {
            loops->barrier(b);
            run_test(b, o, l, loops, (enum bench_test_id)i);
        }
    }
    loops->barrier(b);
}
