/*
 * main.c - xdev-coll-test CASE [ARGS]: run one case as every rank.
 *   data     bcast, gather(v), scatter(v), allgather(v), alltoall(v)
 *   reduce   barrier, reduce, allreduce, reduce_scatter, scan
 *   groups   subgroups, two contexts and point-to-point interleaved
 *   args     bad arguments
 *   mismatch a rank's own count in a v-variant off by one, and a ring's block
 *            layout (finalizes itself)
 *   wildcard with XDEV_WILDCARD_FAILS=1, the last rank finalizes early
 *   kill FAMILY ALG [mid|slow|late|first]  a member dies mid-collective (see case_kill.c)
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: xdev-coll-test data|reduce|groups|args|mismatch|wildcard|kill FAMILY ALG\n");
        return 2;
    }
    const char *c = argv[1];
    t_init(c);
    if (!strcmp(c, "kill")) {
        const char *when = argc == 5 ? argv[4] : "";
        CHECK(argc == 4 || (argc == 5 && (!strcmp(when, "mid") || !strcmp(when, "slow") ||
                                          !strcmp(when, "late") || !strcmp(when, "first"))),
              "kill FAMILY ALGORITHM [mid|slow|late|first]");
        return case_kill(argv[2], argv[3], when); /* finalizes itself */
    }
    if (!strcmp(c, "mismatch")) return case_mismatch();
    if (!strcmp(c, "data")) case_data();
    else if (!strcmp(c, "reduce")) case_reduce();
    else if (!strcmp(c, "groups")) case_groups();
    else if (!strcmp(c, "args")) case_args();
    else if (!strcmp(c, "wildcard")) case_wildcard();
    else t_fail(__FILE__, __LINE__, "case", "unknown case %s", c);
    t_finalize();
    return 0;
}
