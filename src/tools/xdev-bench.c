/*
 * xdev-bench - OSU-style point-to-point micro-benchmarks over xdev.
 *
 * Runs as both ranks of a 2-rank job:  xdevrun -n 2 xdev-bench [options]
 * Both ranks parse the same argv, so they agree on every parameter; rank 0
 * times and prints. The method, the options and the output formats are in
 * bench_method.c and bench_loops.h, shared with the MPI and raw TCP
 * baselines in test/bench; this file is xdev's messaging and setup.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench_method.h"
#include "xdev.h"

struct bench_io {
    xdev_t *dev;
    int peer;
    int ctx;
    xdev_request_t *sreq, *rreq;   /* a window each */
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

static void wait_all(xdev_request_t *reqs, int n)
{
    for (int i = 0; i < n; i++) {
        xdev_status_t st;
        check(xdev_wait(&reqs[i], &st), "xdev_wait");
        check(st.error, "request");
    }
}

static inline void bench_send(struct bench_io *io, const void *buf, size_t size, int tag)
{
    check(xdev_send(io->dev, buf, size, io->peer, tag, io->ctx), "xdev_send");
}

static inline void bench_recv(struct bench_io *io, void *buf, size_t size, int tag)
{
    check(xdev_recv(io->dev, buf, size, io->peer, tag, io->ctx, NULL), "xdev_recv");
}

static inline void bench_post_sends(struct bench_io *io, const void *buf, size_t size,
                                    int tag, int count)
{
    for (int i = 0; i < count; i++)
        check(xdev_isend(io->dev, buf, size, io->peer, tag, io->ctx, &io->sreq[i]),
              "xdev_isend");
}

static inline void bench_post_recvs(struct bench_io *io, void *buf, size_t size, int tag,
                                    int count)
{
    for (int i = 0; i < count; i++)
        check(xdev_irecv(io->dev, buf, size, io->peer, tag, io->ctx, &io->rreq[i]),
              "xdev_irecv");
}

/* xdev progresses every posted request while it waits for any one. */
static inline void bench_wait_sends(struct bench_io *io, int count)
{
    wait_all(io->sreq, count);
}

static inline void bench_wait_recvs(struct bench_io *io, int count)
{
    wait_all(io->rreq, count);
}

#include "bench_loops.h"

static const struct bench_program program = {
    .name = "xdev-bench",
    .about =
        "Usage: xdevrun -n 2 xdev-bench [options]\n"
        "OSU-style point-to-point benchmarks between the two ranks of a job.\n"
        "\n"
        "Tests:\n"
        "  latency  ping-pong with xdev_send/xdev_recv; half the round trip, in us\n"
        "  bw       rank 0 posts a window of xdev_isend and waits for them all, rank 1\n"
        "           the matching xdev_irecv, then acks the window with a 4-byte\n"
        "           message; MB/s (1e6 bytes/s)\n"
        "  bibw     both ranks post a window of receives and of sends at once;\n"
        "           MB/s of both directions together\n",
    .ctx_help = "xdev context to use (default 0)",
    .json_example_transport = "tcp",
    .epilogue =
        "\n"
        "The default output is one table per test. The transport named in it is\n"
        "$XDEV_TRANSPORT, or \"auto\" if unset. Rank 0 prints; errors go to stderr\n"
        "and make the program exit non-zero.\n",
};

int main(int argc, char **argv)
{
    struct bench_opts o;
    bench_parse_args(&program, argc, argv, &o);

    const char *transport = getenv("XDEV_TRANSPORT");
    if (!transport || !*transport)
        transport = "auto";
    char setup[96];
    snprintf(setup, sizeof setup, "transport %s, 2 ranks", transport);
    struct bench_label label = { .system = "xdev", .setup = setup, .transport = transport };

    struct bench_io io = { .ctx = o.ctx };
    struct bench b = { .io = &io };
    check(xdev_init(NULL, &io.dev), "xdev_init");
    b.rank = xdev_rank(io.dev);
    if (b.rank < 0)
        die_xdev(b.rank, "xdev_rank");
    my_rank = b.rank;
    int nranks = xdev_size(io.dev);
    if (nranks < 0)
        die_xdev(nranks, "xdev_size");
    if (nranks != 2) {
        if (b.rank == 0)
            fprintf(stderr, "xdev-bench: needs exactly 2 ranks, the job has %d\n", nranks);
        xdev_finalize(io.dev);
        return 1;
    }
    io.peer = 1 - b.rank;

    if (bench_setup(&program, &b, &o) < 0)
        exit(1);
    io.sreq = calloc(o.window, sizeof *io.sreq);
    io.rreq = calloc(o.window, sizeof *io.rreq);
    if (!io.sreq || !io.rreq)
        die_xdev(XDEV_ERR_NOMEM, "allocating requests");

    bench_run(&b, &o, &label, &bench_loops);

    bench_free(&b);
    free(io.sreq);
    free(io.rreq);
    check(xdev_finalize(io.dev), "xdev_finalize");
    return 0;
}
