/*
 * tcp-raw-bench - the raw-socket baseline for xdev-bench.
 *
 * Forks into two processes joined by one TCP loopback connection and runs
 * the tests of xdev-bench with the same method, sizes, iteration counts and
 * output formats, so that a script can join the two on (test, size).
 *
 * The connection is what a framed message transport does at best: both
 * sockets are nonblocking with TCP_NODELAY and both sides busy-poll
 * (retry on EAGAIN, never block in poll/epoll, as MPI libraries do). Every
 * message is an 8-byte length followed by the payload, sent with one
 * sendmsg (writev) and received with one recvmsg (readv) straight into the
 * caller's buffer when the socket allows. Acks and barriers are framed
 * messages too.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HDR_BYTES 8
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
};

struct bench {
    int fd;
    int rank;   /* 0: the parent, which prints; 1: the child */
    int window;
    char *sbuf, *rbuf;  /* max_size bytes each, page-aligned */
    char ack[ACK_BYTES];
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

static void die(const char *what)
{
    fprintf(stderr, "tcp-raw-bench: rank %d: %s: %s\n", my_rank, what, strerror(errno));
    exit(1);
}

static void die_msg(const char *msg)
{
    fprintf(stderr, "tcp-raw-bench: rank %d: %s\n", my_rank, msg);
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- framed, busy-polled streams ---- */

/* `count` frames of `size` payload bytes each, all from or into `buf`,
 * moving through the socket one step at a time. */
struct stream {
    int fd;
    char *buf;
    size_t size;
    int count;
    int frames_done;
    size_t frame_off;   /* bytes of the current frame (header + payload) moved */
    uint64_t hdr;
};

static void stream_init(struct stream *s, int fd, void *buf, size_t size, int count)
{
    *s = (struct stream){ .fd = fd, .buf = buf, .size = size, .count = count, .hdr = size };
}

/* The rest of the current frame as an iovec. */
static int frame_iov(struct stream *s, struct iovec iov[2])
{
    int n = 0;
    size_t off = s->frame_off;
    if (off < HDR_BYTES) {
        iov[n++] = (struct iovec){ (char *)&s->hdr + off, HDR_BYTES - off };
        off = 0;
    } else {
        off -= HDR_BYTES;
    }
    if (s->size > off)
        iov[n++] = (struct iovec){ s->buf + off, s->size - off };
    return n;
}

/* Account for r bytes moved; returns 1 when every frame is done. */
static int stream_advance(struct stream *s, size_t r)
{
    s->frame_off += r;
    if (s->frame_off == HDR_BYTES + s->size) {
        if (s->hdr != s->size)
            die_msg("framing error: unexpected message length");
        s->frames_done++;
        s->frame_off = 0;
        s->hdr = s->size;
    }
    return s->frames_done == s->count;
}

static int would_block(void)
{
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* One nonblocking send attempt; returns 1 when every frame is sent. */
static int stream_tx(struct stream *s)
{
    struct iovec iov[2];
    struct msghdr m = { .msg_iov = iov };
    if (s->frames_done == s->count)
        return 1;
    m.msg_iovlen = frame_iov(s, iov);
    ssize_t r = sendmsg(s->fd, &m, MSG_NOSIGNAL);
    if (r < 0) {
        if (would_block())
            return 0;
        die("sendmsg");
    }
    return stream_advance(s, (size_t)r);
}

/* One nonblocking receive attempt; returns 1 when every frame is in. */
static int stream_rx(struct stream *s)
{
    struct iovec iov[2];
    struct msghdr m = { .msg_iov = iov };
    if (s->frames_done == s->count)
        return 1;
    if (s->frame_off == 0)
        s->hdr = ~(uint64_t)0;
    m.msg_iovlen = frame_iov(s, iov);
    ssize_t r = recvmsg(s->fd, &m, 0);
    if (r < 0) {
        if (would_block())
            return 0;
        die("recvmsg");
    }
    if (r == 0)
        die_msg("peer closed the connection");
    return stream_advance(s, (size_t)r);
}

static void send_frames(int fd, void *buf, size_t size, int count)
{
    struct stream s;
    stream_init(&s, fd, buf, size, count);
    while (!stream_tx(&s))
        ;
}

static void recv_frames(int fd, void *buf, size_t size, int count)
{
    struct stream s;
    stream_init(&s, fd, buf, size, count);
    while (!stream_rx(&s))
        ;
}

/* Zero-byte exchange: neither side leaves before both have arrived. */
static void barrier(struct bench *b)
{
    if (b->rank == 0) {
        send_frames(b->fd, NULL, 0, 1);
        recv_frames(b->fd, NULL, 0, 1);
    } else {
        recv_frames(b->fd, NULL, 0, 1);
        send_frames(b->fd, NULL, 0, 1);
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
            send_frames(b->fd, b->sbuf, size, 1);
            recv_frames(b->fd, b->rbuf, size, 1);
        } else {
            recv_frames(b->fd, b->rbuf, size, 1);
            send_frames(b->fd, b->sbuf, size, 1);
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
            send_frames(b->fd, b->sbuf, size, b->window);
            recv_frames(b->fd, b->ack, ACK_BYTES, 1);
        } else {
            recv_frames(b->fd, b->rbuf, size, b->window);
            send_frames(b->fd, b->ack, ACK_BYTES, 1);
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

/* Both sides send a window and receive one at once, alternating send and
 * receive attempts so that neither stalls on a full socket buffer; the
 * result counts the bytes of both directions. */
static double run_bibw(struct bench *b, size_t size, long iters, long warmup)
{
    double t0 = now();
    for (long i = 0; i < warmup + iters; i++) {
        if (i == warmup)
            t0 = now();
        struct stream tx, rx;
        stream_init(&tx, b->fd, b->sbuf, size, b->window);
        stream_init(&rx, b->fd, b->rbuf, size, b->window);
        int tx_done = 0, rx_done = 0;
        while (!(tx_done && rx_done)) {
            tx_done = stream_tx(&tx);
            rx_done = stream_rx(&rx);
        }
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

static void print_title(enum format fmt, const struct test *t, int window)
{
    if (fmt != FMT_TABLE)
        return;
    printf("# tcp-raw %s (loopback TCP, 2 processes", t->name);
    if (t->windowed)
        printf(", window %d", window);
    printf(")\n%-10s %18s\n", "size", t->column);
}

static void print_row(enum format fmt, const struct test *t, size_t size, long iters,
                      double value)
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
               "\"transport\":\"tcp-raw\"}\n",
               t->name, size, iters, value, t->unit);
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
        "Usage: tcp-raw-bench [options]\n"
        "Raw TCP loopback baseline for xdev-bench: forks into two processes joined\n"
        "by one nonblocking, busy-polled TCP connection (TCP_NODELAY) and runs the\n"
        "same tests with the same method. Every message is an 8-byte length and\n"
        "the payload, sent with one writev.\n"
        "\n"
        "Tests:\n"
        "  latency  ping-pong; half the round trip, in us\n"
        "  bw       the parent sends a window of messages, the child receives them\n"
        "           and acks the window with a 4-byte message; MB/s (1e6 bytes/s)\n"
        "  bibw     both send and receive a window at once; MB/s of both\n"
        "           directions together\n"
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
        "  --ctx C       accepted and ignored, so xdev-bench arguments can be reused\n"
        "  --csv         CSV: the header line test,size,iters,value,unit, then one\n"
        "                line per test and size (units: us, MB/s, msg/s)\n"
        "  --json        JSON Lines: one object per test and size, each on its own\n"
        "                line, e.g. {\"test\":\"bw\",\"size\":1024,\"iters\":100,\n"
        "                \"value\":812.500,\"unit\":\"MB/s\",\"transport\":\"tcp-raw\"}\n"
        "  -h, --help    this text\n",
        RATE_MAX_SIZE, LARGE_MESSAGE, LARGE_MESSAGE, DEFAULT_WINDOW);
}

static void bad_arg(const char *opt, const char *val)
{
    fprintf(stderr, "tcp-raw-bench: bad value for %s: '%s' (try --help)\n", opt, val);
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
                        .window = DEFAULT_WINDOW, .tests = (1u << NTESTS) - 1,
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
        case O_CTX: parse_long("--ctx", optarg, 0, 0x7fffffff); break;
        case O_CSV: o->fmt = FMT_CSV; break;
        case O_JSON: o->fmt = FMT_JSON; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tcp-raw-bench: unexpected argument '%s' (try --help)\n", argv[optind]);
        exit(2);
    }
    if (o->min_size > o->max_size) {
        fprintf(stderr, "tcp-raw-bench: --min is larger than --max\n");
        exit(2);
    }
}

/* ---- setup ---- */

static void *alloc_buffer(size_t size)
{
    void *p;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    int rc = posix_memalign(&p, page, size ? size : 1);
    if (rc) {
        errno = rc;
        die("posix_memalign");
    }
    memset(p, 'a' + my_rank, size ? size : 1); /* touch every page before timing */
    return p;
}

static void tune_socket(int fd)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
        die("setsockopt TCP_NODELAY");
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        die("fcntl O_NONBLOCK");
}

/* Fork into rank 0 (the parent, returned *child > 0) and rank 1 (the
 * child), joined by one TCP loopback connection; returns its socket. */
static int connect_pair(pid_t *child)
{
    struct sockaddr_in addr = { .sin_family = AF_INET,
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof addr;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0)
        die("socket");
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 1) < 0 ||
        getsockname(lfd, (struct sockaddr *)&addr, &alen) < 0)
        die("listen on loopback");

    fflush(stdout);
    *child = fork();
    if (*child < 0)
        die("fork");
    int fd;
    if (*child == 0) {
        my_rank = 1;
        close(lfd);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0)
            die("connect");
    } else {
        my_rank = 0;
        fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            die("accept");
        close(lfd);
    }
    tune_socket(fd);
    return fd;
}

static void run_test(struct bench *b, const struct opts *o, const struct test *t)
{
    if (b->rank == 0)
        print_title(o->fmt, t, o->window);
    for (size_t size = first_size(o->min_size); size <= o->max_size; size = next_size(size)) {
        if (t->max_size && size > t->max_size)
            break;
        long iters, warmup;
        iterations(o, t, size, &iters, &warmup);
        barrier(b);
        double value = t->run(b, size, iters, warmup);
        if (b->rank == 0)
            print_row(o->fmt, t, size, iters, value);
    }
    if (b->rank == 0)
        print_end(o->fmt);
}

int main(int argc, char **argv)
{
    struct opts o;
    parse_args(argc, argv, &o);

    pid_t child;
    struct bench b = { .window = o.window };
    b.fd = connect_pair(&child);
    b.rank = my_rank;
    b.sbuf = alloc_buffer(o.max_size);
    b.rbuf = alloc_buffer(o.max_size);

    if (b.rank == 0)
        print_begin(o.fmt);
    for (size_t i = 0; i < NTESTS; i++) {
        if (o.tests & (1u << i)) {
            barrier(&b);
            run_test(&b, &o, &tests[i]);
        }
    }
    barrier(&b);

    free(b.sbuf);
    free(b.rbuf);
    close(b.fd);
    if (b.rank == 1)
        return 0;
    int status;
    if (waitpid(child, &status, 0) < 0)
        die("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die_msg("the child process failed");
    return 0;
}
