/*
 * pmix_check.c - a job started by a PMIx launcher (mpirun, srun) with no
 * xdev launcher: rank and size are the launcher's, peers on this host are
 * reached over shm under `auto` (XDEV_EXPECT_TRANSPORT names what every
 * peer must use otherwise), and every rank exchanges an eager and a
 * rendezvous message with every other, data checked.
 *
 *   mpirun -np 4 pmix-check
 *
 * XDEV_CHECK_DIES_EARLY=R: rank R dies before its xdev_init, and the
 * others' xdev_init must fail with XDEV_ERR_INIT within the peer timeout
 * (a fence left waiting for R holds them for ever).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "introspect.h"
#include "xdev.h"
#include "../check.h"

static unsigned char byte_of(int from, int to, size_t i)
{
    return (unsigned char)(from * 31 + to * 7 + i * 13 + (i >> 10));
}

static int dies_early(const char *victim)
{
    const char *me = getenv("PMIX_RANK");
    if (me && atoi(me) == atoi(victim))
        raise(SIGKILL);
    xdev_t *dev;
    int rc = xdev_init(NULL, &dev);
    CHECK(rc == XDEV_ERR_INIT, "xdev_init with rank %s dead before its own: %d (%s)", victim,
          rc, xdev_strerror(rc));
    if (rc == XDEV_OK)
        xdev_finalize(dev);
    if (!failures)
        printf("pmix-check: rank %s: xdev_init failed, rank %s dead before it: PASS\n", me, victim);
    return failures ? 1 : 0;
}

int main(void)
{
    const char *victim = getenv("XDEV_CHECK_DIES_EARLY");
    if (victim && *victim)
        return dies_early(victim);
    xdev_t *dev;
    int rc = xdev_init(NULL, &dev);
    if (rc != XDEV_OK) {
        fprintf(stderr, "pmix-check: xdev_init: %s\n", xdev_strerror(rc));
        return 1;
    }
    int rank = xdev_rank(dev), size = xdev_size(dev);
    const char *want_rank = getenv("PMIX_RANK");
    const char *want_size = getenv("OMPI_COMM_WORLD_SIZE") ? getenv("OMPI_COMM_WORLD_SIZE")
                                                           : getenv("SLURM_NTASKS");
    CHECK(want_rank && atoi(want_rank) == rank, "rank %d, PMIx says %s", rank,
          want_rank ? want_rank : "nothing");
    CHECK(want_size && atoi(want_size) == size, "size %d, the launcher says %s", size,
          want_size ? want_size : "nothing");
    /* XDEV_EXPECT_NODE_RANKS=N: ranks are N to a node, in order, so the
     * ones on our node use shm and the others tcp (under auto). */
    const char *expect = getenv("XDEV_EXPECT_TRANSPORT");
    const char *per_node = getenv("XDEV_EXPECT_NODE_RANKS");
    int n = per_node ? atoi(per_node) : 0;
    for (int p = 0; p < size; p++) {
        const char *t = xdev_peer_transport(dev, p);
        const char *want = p == rank                ? "self"
                           : expect && *expect      ? expect
                           : n > 0 && p / n != rank / n ? "tcp"
                                                    : "shm";
        CHECK(t && !strcmp(t, want), "rank %d reaches %d over %s, want %s", rank, p,
              t ? t : "nothing", want);
    }
    size_t lens[2] = { 100, (size_t)2 << 20 };
    for (int k = 0; k < 2; k++) {
        size_t len = lens[k];
        unsigned char *out = malloc(len * (size_t)size), *in = malloc(len * (size_t)size);
        xdev_request_t *reqs = calloc(2 * (size_t)size, sizeof *reqs);
        if (!out || !in || !reqs)
            return 1;
        for (int p = 0; p < size; p++) {
            for (size_t i = 0; i < len; i++)
                out[(size_t)p * len + i] = byte_of(rank, p, i);
            CHECK(xdev_irecv(dev, in + (size_t)p * len, len, p, k, 0, &reqs[2 * p]) == XDEV_OK,
                  "irecv");
            CHECK(xdev_isend(dev, out + (size_t)p * len, len, p, k, 0, &reqs[2 * p + 1]) == XDEV_OK,
                  "isend");
        }
        for (int i = 0; i < 2 * size; i++) {
            xdev_status_t st;
            CHECK(xdev_wait(&reqs[i], &st) == XDEV_OK && st.error == XDEV_OK, "request %d", i);
        }
        for (int p = 0; p < size; p++)
            for (size_t i = 0; i < len; i++)
                if (in[(size_t)p * len + i] != byte_of(p, rank, i)) {
                    CHECK(0, "%zu bytes from %d differ at %zu", len, p, i);
                    break;
                }
        free(out);
        free(in);
        free(reqs);
    }
    CHECK(xdev_finalize(dev) == XDEV_OK, "finalize");
    if (!failures && rank == 0)
        printf("pmix-check: %d ranks: PASS\n", size);
    return failures ? 1 : 0;
}
