/*
 * mpi-bench - the MPI baseline for xdev-bench.
 *
 * Runs as both ranks of a 2-rank MPI job and runs the tests of xdev-bench
 * with its method, options and output formats (src/tools/bench_method.c
 * and bench_loops.h), so that a script can join the two on (test, size).
 * This file is the messaging and the setup:
 *
 *   latency  MPI_Send / MPI_Recv ping-pong
 *   bw       a window of MPI_Isend, waited for one by one in posting
 *            order, and the matching MPI_Irecv; the 4-byte ack MPI_Send
 *   bibw     both ranks post a window of MPI_Irecv and of MPI_Isend
 *   rate     the bw pattern
 *
 * Like xdev-bench, requests are completed one at a time (MPI_Wait in
 * posting order, as xdev_wait does) rather than with MPI_Waitall, every
 * window's messages go from one send buffer into one receive buffer, the
 * barrier is a zero-byte exchange on its own tag, and MPI runs at
 * MPI_THREAD_SINGLE (compare-shm.sh runs xdev with XDEV_THREADS=single).
 *
 * Not built by meson: the MPI packages are optional. compare-shm.sh builds
 * it with each MPI's wrapper, e.g.
 *     mpicc.openmpi -O2 -Wall -Wextra -o mpi-bench.openmpi mpi_bench.c \
 *         ../../src/tools/bench_method.c
 * and the same with mpicc.mpich; the relative #includes below spare it -I.
 *
 * --plan prints, without starting MPI, one CSV line per test and size the
 * options select: test,size,iters,warmup,window,unit (window 0 for
 * latency). compare-shm.sh uses it to run ucx_perftest over the same tests,
 * sizes and counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "../../src/tools/bench_method.h"

/* MPI's default error handler (MPI_ERRORS_ARE_FATAL) aborts the job on any
 * error, so the calls below need no checks. Sizes are at most 1 GiB, so
 * they fit MPI's int counts. */

struct bench_io {
    MPI_Comm comm;
    int peer;
    MPI_Request *sreq, *rreq;   /* a window each */
};

static inline void bench_send(struct bench_io *io, const void *buf, size_t size, int tag)
{
    MPI_Send(buf, (int)size, MPI_BYTE, io->peer, tag, io->comm);
}

static inline void bench_recv(struct bench_io *io, void *buf, size_t size, int tag)
{
    MPI_Recv(buf, (int)size, MPI_BYTE, io->peer, tag, io->comm, MPI_STATUS_IGNORE);
}

static inline void bench_post_sends(struct bench_io *io, const void *buf, size_t size,
                                    int tag, int count)
{
    for (int i = 0; i < count; i++)
        MPI_Isend(buf, (int)size, MPI_BYTE, io->peer, tag, io->comm, &io->sreq[i]);
}

static inline void bench_post_recvs(struct bench_io *io, void *buf, size_t size, int tag,
                                    int count)
{
    for (int i = 0; i < count; i++)
        MPI_Irecv(buf, (int)size, MPI_BYTE, io->peer, tag, io->comm, &io->rreq[i]);
}

/* MPI progresses every posted request while it waits for any one. */
static inline void bench_wait_sends(struct bench_io *io, int count)
{
    for (int i = 0; i < count; i++)
        MPI_Wait(&io->sreq[i], MPI_STATUS_IGNORE);
}

static inline void bench_wait_recvs(struct bench_io *io, int count)
{
    for (int i = 0; i < count; i++)
        MPI_Wait(&io->rreq[i], MPI_STATUS_IGNORE);
}

#include "../../src/tools/bench_loops.h"

static const struct bench_program program = {
    .name = "mpi-bench",
    .about =
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
        "           MB/s of both directions together\n",
    .plan_help =
        "print test,size,iters,warmup,window,unit for every test and\n"
        "                size the other options select, without starting MPI; exit",
    .json_example_transport = "Open MPI",
    .epilogue = "\nRank 0 prints; MPI errors abort the job.\n",
    /* Every rank parses argv, and which one is rank 0 is known only once
     * MPI runs (--plan and --help run without it, as one process). */
    .defer_errors = 1,
};

/* "Open MPI", "MPICH": the library's name, for the table and JSON output. */
static const char *library_name(void)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    return strstr(version, "Open MPI") ? "Open MPI" : strstr(version, "MPICH") ? "MPICH" : "MPI";
}

int main(int argc, char **argv)
{
    struct bench_opts o;
    bench_parse_args(&program, argc, argv, &o);
    if (o.plan || (o.help && !o.error[0])) {   /* no MPI needed: one process prints */
        if (o.error[0])
            fprintf(stderr, "mpi-bench: %s\n", o.error);
        else if (o.help)
            bench_usage(&program, stdout);
        else
            bench_print_plan(&o);
        return o.error[0] ? 2 : 0;
    }

    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    struct bench_io io = { .comm = MPI_COMM_WORLD };
    struct bench b = { .io = &io };
    MPI_Comm_rank(io.comm, &b.rank);
    if (o.error[0]) {
        if (b.rank == 0)
            fprintf(stderr, "mpi-bench: %s\n", o.error);
        MPI_Finalize();
        return 2;
    }
    int nranks;
    MPI_Comm_size(io.comm, &nranks);
    if (nranks != 2) {
        if (b.rank == 0)
            fprintf(stderr, "mpi-bench: needs exactly 2 ranks, the job has %d\n", nranks);
        MPI_Finalize();
        return 1;
    }
    io.peer = 1 - b.rank;

    const char *lib = library_name();
    char setup[64];
    snprintf(setup, sizeof setup, "%s, 2 ranks", lib);
    struct bench_label label = { .system = "mpi", .setup = setup, .transport = lib };

    if (bench_setup(&program, &b, &o) < 0)
        MPI_Abort(io.comm, 1);
    io.sreq = calloc(o.window, sizeof *io.sreq);
    io.rreq = calloc(o.window, sizeof *io.rreq);
    if (!io.sreq || !io.rreq) {
        fprintf(stderr, "mpi-bench: rank %d: cannot allocate requests\n", b.rank);
        MPI_Abort(io.comm, 1);
    }

    bench_run(&b, &o, &label, &bench_loops);

    bench_free(&b);
    free(io.sreq);
    free(io.rreq);
    MPI_Finalize();
    return 0;
}
