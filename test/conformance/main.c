/*
 * main.c - xdev-conformance CASE: run one named case as this rank.
 * Launched as `xdevrun -n NP --transport T xdev-conformance CASE`; a failed
 * check exits non-zero on the rank that saw it, and xdevrun then fails.
 */
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

static const struct {
    const char *name;
    void (*run)(void);
    void (*before_init)(void); /* what a case must set up before xdev_init */
} cases[] = {
    {"matching", case_matching, NULL},
    {"sizes", case_sizes, NULL},
    {"truncate", case_truncate, NULL},
    {"issend", case_issend, NULL},
    {"peek", case_peek, NULL},
    {"threads", case_threads, NULL},
    {"handoff", case_handoff, NULL},
    {"outstanding", case_outstanding, NULL},
    {"stress", case_stress, NULL},
    {"self", case_self, NULL},
    {"mprobe", case_mprobe, NULL},
    {"cancel", case_cancel, NULL},
    {"wakeup", case_wakeup, NULL},
    {"some", case_some, NULL},
    {"stats", case_stats, NULL},
    {"event", case_event, NULL},
    {"vector", case_vector, NULL},
    {"fork", case_fork, NULL},
    {"devices", case_devices, NULL},
    {"signals", case_signals, signals_before_init},
};

int main(int argc, char **argv)
{
    size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; argc == 2 && i < n; i++) {
        if (strcmp(argv[1], cases[i].name) == 0) {
            if (cases[i].before_init)
                cases[i].before_init();
            h_init(cases[i].name);
            cases[i].run();
            h_finalize();
            return 0;
        }
    }
    fprintf(stderr, "usage: %s CASE\ncases:", argv[0]);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, " %s", cases[i].name);
    fprintf(stderr, "\n");
    return 2;
}
