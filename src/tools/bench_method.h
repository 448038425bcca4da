/*
 * The benchmark method of xdev-bench, shared with its baselines mpi-bench
 * (test/bench/mpi_bench.c) and tcp-raw-bench (test/bench/tcp_raw.c) so that
 * the three measure the same way and a script can join their results on
 * (test, size): the options, the tests, their sizes and iteration counts,
 * and the output formats (bench_method.c), and the timed loops
 * (bench_loops.h, compiled into each program around its own messaging).
 *
 * Written for C11 with no header of xdev's own, because mpi_bench.c is
 * built outside meson by each MPI's mpicc.
 */
#ifndef XDEV_BENCH_METHOD_H
#define XDEV_BENCH_METHOD_H

#include <stddef.h>
#include <stdio.h>

#define BENCH_ACK_BYTES 4

enum bench_test_id { BENCH_LATENCY, BENCH_BW, BENCH_BIBW, BENCH_RATE, BENCH_NTESTS };

enum bench_format { BENCH_TABLE, BENCH_CSV, BENCH_JSON };

/* What a program says about itself in --help and in its messages. */
struct bench_program {
    const char *name;       /* the prefix of its messages */
    /* --help up to the rate test: usage, summary, the other tests */
    const char *about;
    const char *ctx_help;   /* --help for --ctx C; NULL: no --ctx option */
    const char *plan_help;  /* --help for --plan; NULL: no --plan option */
    const char *json_example_transport;
    const char *epilogue;   /* --help after the options; may be NULL */
    /* Leave command-line errors and -h in bench_opts instead of reporting
     * them and exiting, for a program that must first learn which of its
     * processes is to speak. */
    int defer_errors;
};

struct bench_opts {
    size_t min_size, max_size;
    long iters;     /* 0: OSU default for the test and size */
    long warmup;    /* -1: OSU default for the test and size */
    int window;
    int ctx;
    unsigned tests; /* bit i selects test i */
    enum bench_format fmt;
    int plan;
    int help;       /* with defer_errors only */
    char error[256]; /* with defer_errors only: "" or the message */
};

/* How a program's output names what it measured. */
struct bench_label {
    const char *system;    /* "# SYSTEM latency (SETUP, window 64)" in tables */
    const char *setup;
    const char *transport; /* "transport" in JSON */
};

/* A program's messaging state, defined by each program for its primitives. */
struct bench_io;

struct bench {
    struct bench_io *io;
    int rank;           /* 0 times and prints */
    int window;
    char *sbuf, *rbuf;  /* max_size bytes each, page-aligned */
    char ack[BENCH_ACK_BYTES];
};

/* The program's side of bench_run, from bench_loops.h. */
struct bench_loops {
    /* Neither rank returns before both have called it. */
    void (*barrier)(struct bench *b);
    /* The seconds the timed iterations of one test at one size took. */
    double (*run)(struct bench *b, enum bench_test_id test, size_t size, long iters,
                  long warmup);
};

void bench_usage(const struct bench_program *p, FILE *f);
void bench_parse_args(const struct bench_program *p, int argc, char **argv,
                      struct bench_opts *o);
/* --plan: one CSV line test,size,iters,warmup,window,unit per test and size
 * a run with these options would measure. */
void bench_print_plan(const struct bench_opts *o);

/* Sets b's buffers and window; on failure reports it and returns -1. */
int bench_setup(const struct bench_program *p, struct bench *b, const struct bench_opts *o);
void bench_free(struct bench *b);

/* Runs the tests the options select on both ranks; rank 0 prints. */
void bench_run(struct bench *b, const struct bench_opts *o, const struct bench_label *l,
               const struct bench_loops *loops);

#endif
