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
} cases[] = {
    {"matching", case_matching},
    {"sizes", case_sizes},
    {"truncate", case_truncate},
    {"issend", case_issend},
    {"peek", case_peek},
    {"threads", case_threads},
    {"handoff", case_handoff},
    {"outstanding", case_outstanding},
    {"stress", case_stress},
    {"self", case_self},
    {"mprobe", case_mprobe},
    {"cancel", case_cancel},
    {"wakeup", case_wakeup},
    {"some", case_some},
    {"stats", case_stats},
    {"event", case_event},
    {"vector", case_vector},
    {"fork", case_fork},
    {"devices", case_devices},
};

int main(int argc, char **argv)
{
    size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; argc == 2 && i < n; i++) {
        if (strcmp(argv[1], cases[i].name) == 0) {
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
