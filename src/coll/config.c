/*
 * config.c - which algorithm a collective uses: the XDEV_COLL_<FAMILY>
 * forcing variables and the XDEV_COLL_<FAMILY>_LONG thresholds, read when a
 * group is created, and the per-call choice.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll.h"
#include "../kit/size.h"

/* What a family does differently when every rank is on this host (see
 * one_host), where copies limit rather than links.
 *
 * ONE_HOST_SHORT: the short algorithm at every size. Two long algorithms
 * are built for links, and here the short one serves every size better
 * (4 and 8 ranks, both timings, forced both ways here):
 *   bcast     the scatter + ring moves each byte over any one link about
 *             twice, where the tree moves the whole message over log p of
 *             them, but it copies (p - 1) / p of the message more: the
 *             tree took 0.23-0.85 of its time, 64 KiB to 4 MiB;
 *   alltoall  pairwise exchange keeps one partner per step, so no link
 *             is flooded, where posting everything at once lets every
 *             copy run as soon as both ends can: at 32 KiB to 1 MiB that
 *             took 0.61-0.97 of pairwise's time in 14 rows of 16, and
 *             1.03-1.06 in the other two.
 *   reduce    the ring reduce-scatter + gather takes 2 (p - 1) steps that
 *             each wait for a neighbour, where the tree takes log p, and
 *             with more ranks than cores every step waits for a member to
 *             be run: with its scratch kept between calls (group.c) the
 *             tree took 0.18-0.74 of the ring's time per call at 8 ranks
 *             and 0.49-1.04 at 4, 64 KiB to 4 MiB, and against Open MPI
 *             at 1 MiB 0.73 per call and 0.90 back to back at 4 ranks,
 *             where the ring took 1.32 and 1.53.
 * The rings of allgather and allreduce win on one host too (0.5-0.8 of
 * the trees' time at 128 KiB and 1 MiB), but allreduce's not in a crowd
 * (CROWD_MIN below).
 *
 * ONE_HOST_DIRECT: the direct algorithm at every size (in a group small
 * enough for it). Down the bcast tree a member passes the message on only
 * once all of it is in, so the last member waits for log p whole copies,
 * where direct every member copies at once. Forced both ways here, 32 KiB
 * to 4 MiB, 4 rounds, medians of direct / binomial: 8 ranks, per call
 * 0.32-0.67, back to back 0.70-1.02; 4 ranks, per call 0.61-0.98, back to
 * back 0.57-1.01 up to 1 MiB and 1.09-1.12 at 2 and 4 MiB. Over a network
 * the root's p - 1 copies share its link, so there the bound stays. */
enum { ONE_HOST_SHORT = 1, ONE_HOST_DIRECT = 2 };

/* 32 KiB is F-MPJ's default switch between short and long algorithms. */
#define DEFAULT_LONG (32u * 1024)

static const struct family_desc {
    const char *name;     /* XDEV_COLL_<name>, XDEV_COLL_<name>_LONG */
    const char *algs[4];  /* index = algorithm number */
    int direct;           /* number of its one-round algorithm; 0: it has none */
    size_t direct_max;    /* bytes up to which that one is used by default */
    int one_host;         /* ONE_HOST_* flags */
    int crowded;          /* its algorithm for long messages in a crowd (see
                           * CROWD_MIN); 0: none */
} families[F_COUNT] = {
    [F_BARRIER] = {"BARRIER", {"dissemination", "linear"}},
    [F_BCAST] = {"BCAST", {"binomial", "scatter_ring", "direct"}, BCAST_DIRECT, 16 * 1024,
                ONE_HOST_SHORT | ONE_HOST_DIRECT},
    [F_GATHER] = {"GATHER", {"binomial", "linear"}},
    [F_SCATTER] = {"SCATTER", {"binomial", "linear"}, SCATTER_LINEAR, 32 * 1024},
    [F_ALLGATHER] = {"ALLGATHER", {"gather_bcast", "ring", "direct"}, ALLGATHER_DIRECT, 32 * 1024},
    [F_ALLTOALL] = {"ALLTOALL", {"linear", "pairwise"}, .one_host = ONE_HOST_SHORT},
    [F_REDUCE] = {"REDUCE", {"binomial", "ring_gather"}, .one_host = ONE_HOST_SHORT},
    [F_ALLREDUCE] = {"ALLREDUCE", {"recursive_doubling", "ring", "reduce_bcast", "direct"},
                     ALLREDUCE_DIRECT, 2048, .crowded = ALLREDUCE_REDUCE_BCAST},
    [F_REDUCE_SCATTER] = {"REDUCE_SCATTER", {"reduce_scatterv", "ring"}},
    [F_SCAN] = {"SCAN", {"recursive_doubling", "linear"}},
};

/* A direct algorithm (every member sends its part to every other, one
 * round; in bcast the root sends to every member) against the usual ones,
 * 4 and 8 ranks on this 2-core machine, us:
 *   allreduce, against recursive doubling: 8 bytes 12.6 against 15.3-16.6
 *   (4 ranks), 42-45 against 65-66 (8); 1 KiB 49 against 70-75 (8); 4 KiB
 *   even (4) or 62 against 75 (8); 16 KiB 91 against 21 (4). Up to 2 KiB.
 *   allgather, blocks of 8 bytes against gather + bcast: 9.4 against 22.9
 *   (4), 52 against 99 (8); against the ring, blocks of 4 KiB: 18.6
 *   against 21.1 (4), 72 against 151 (8); 16 KiB 19 against 37 (4), 114
 *   against 201 (8); 64 KiB 425 against 71 (4). Up to 32 KiB in all.
 *   bcast, against the binomial tree, timed per call (a barrier between
 *   calls, as OSU does): 8 bytes 0.38 against 1.51 (4 ranks), 0.58 against
 *   10.7 (8); 16 KiB 1.1 against 3.2 (4), 2.8 against 12.8 (8); over tcp
 *   8 bytes 11 against 21 (4), 28 against 53 (8). No member waits for
 *   another to pass the message on, so none waits for one the scheduler
 *   has not run. Back to back the root's extra sends cost a little at 4
 *   ranks (8 bytes 0.57 against 0.53) and not at 8 (1.24 against 1.30).
 *   Up to 16 KiB: over a network the root's p - 1 copies share its link.
 *   scatter, linear (the root sends each member its block) against the
 *   binomial tree: per call, 8 bytes 0.18-0.21 against 1.1-1.8 (4 ranks),
 *   0.41-0.44 against 10-18 (8); 4 KiB 0.55 against 2.2-2.9 (4), 0.71-0.95
 *   against 6.9-15 (8); back to back even at 8 bytes, 16 KiB 2.5 against
 *   22-24 (4); over tcp, 8 bytes per call 8.5-9.1 against 53-56 (4). The
 *   root sends the same bytes either way. Up to 32 KiB, where the long
 *   algorithm is linear anyway.
 * Each member sends p - 1 copies (or blocks), so the group must be small
 * too. */
#define DEFAULT_DIRECT_MEMBERS 8

/* A crowd: a group on one host with at least CROWD_MIN ranks per CPU.
 * There every step of the allreduce ring (2 (p - 1) of them) waits for
 * the scheduler to run the member it needs, and up to CROWD_LONG_MAX
 * bytes a binomial reduce and broadcast (2 log p steps) costs less. 8
 * ranks on 2 CPUs, against the ring, 5 rounds, back to back / per call:
 * 256 KiB 0.87/0.84, 1 MiB 0.81/0.83, 2 MiB 1.23/1.18, 4 MiB 1.75/1.79.
 * 6 ranks: 0.95-1.07; 4 ranks, 1 MiB: 1.29/1.20. */
#define CROWD_MIN 4
#define CROWD_LONG_MAX ((size_t)1 << 20)

/* A waiting member busy-polls, as MPI libraries do, for up to this long
 * before it starts yielding the CPU, when the group fits on this machine's
 * CPUs: measured here, yielding any sooner hands the core to whatever else
 * runs and costs far more than it saves. When the group does not fit, the
 * member it waits for may need this very CPU, so it yields at once. */
#define DEFAULT_SPIN_US 1000000

/* After the spin, a waiting member yields between polls for this long,
 * then naps between them. A member that only yields stays runnable, so
 * with more ranks than cores the scheduler cannot give each of the members
 * that have work a core of its own; asleep, it leaves the run queue. But a
 * nap wakes late (20 us asked, 70 with the timer slack), and with 4 ranks
 * on 2 cores a member waits longer than 300 us many times even in an
 * 8-byte broadcast: napping after 300 us made 8-byte bcast take about
 * 1.7-2.2 us a call against 0.8-1.4 without naps, on a quiet machine.
 * On a loaded one (load 8) naps after 100-300 us saved about 10% of a
 * 1 MiB allreduce, which a quiet machine does not show. So only a long
 * wait, as for a slow member between collectives, naps. */
#define DEFAULT_YIELD_US 100000

/* Does every peer of dev share its host? Then it has opened shm alone:
 * a rank with a peer elsewhere opens a network transport too (and the
 * ranks of a job agree, so every member decides the same). */
static int one_host(xdev_t *dev)
{
    xdev_stats_t st;
    return xdev_stats(dev, &st) == XDEV_OK && st.ntransports == 1 &&
           strcmp(st.transport[0].name, "shm") == 0;
}

/* Variable `name` (microseconds; us if unset), at most 10 s, into *ns; 0 if
 * malformed. */
static int env_us(const char *name, size_t us, long *ns)
{
    const char *v = getenv(name);
    if (v && *v && (xdev_parse_size(v, &us) != 0 || us > 10000000)) return 0;
    *ns = (long)us * 1000;
    return 1;
}

int coll_config_load(coll_config_t *cfg, xdev_t *dev, int group_size)
{
    char var[64];
    int local = one_host(dev);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (!env_us("XDEV_COLL_SPIN_US", group_size <= ncpu ? DEFAULT_SPIN_US : 0, &cfg->spin_ns) ||
        !env_us("XDEV_COLL_YIELD_US", DEFAULT_YIELD_US, &cfg->yield_ns))
        return XDEV_ERR_INIT;
    for (int f = 0; f < F_COUNT; f++) {
        const struct family_desc *d = &families[f];
        int here = local ? d->one_host : 0;
        cfg->forced[f] = COLL_AUTO;
        cfg->long_min[f] = here & ONE_HOST_SHORT ? SIZE_MAX : DEFAULT_LONG;

        snprintf(var, sizeof var, "XDEV_COLL_%s", d->name);
        const char *v = getenv(var);
        if (v && *v && strcmp(v, "auto") != 0) {
            int found = COLL_AUTO;
            for (int a = 0; a < 4 && d->algs[a]; a++)
                if (strcmp(v, d->algs[a]) == 0) found = a;
            if (found == COLL_AUTO) return XDEV_ERR_INIT;
            cfg->forced[f] = found;
        }
        snprintf(var, sizeof var, "XDEV_COLL_%s_LONG", d->name);
        v = getenv(var);
        if (v && *v && xdev_parse_size(v, &cfg->long_min[f]) != 0) return XDEV_ERR_INIT;
        cfg->crowded_max[f] =
            local && d->crowded && ncpu > 0 && group_size >= CROWD_MIN * ncpu ? CROWD_LONG_MAX : 0;
        cfg->direct_max[f] = here & ONE_HOST_DIRECT ? SIZE_MAX : d->direct_max;
        cfg->direct_members[f] = d->direct ? DEFAULT_DIRECT_MEMBERS : 0;
        if (!d->direct) continue;
        snprintf(var, sizeof var, "XDEV_COLL_%s_DIRECT_MAX", d->name);
        v = getenv(var);
        if (v && *v && xdev_parse_size(v, &cfg->direct_max[f]) != 0) return XDEV_ERR_INIT;
        snprintf(var, sizeof var, "XDEV_COLL_%s_DIRECT_MEMBERS", d->name);
        v = getenv(var);
        if (v && *v) {
            size_t n;
            if (xdev_parse_size(v, &n) != 0 || n > INT_MAX) return XDEV_ERR_INIT;
            cfg->direct_members[f] = (int)n;
        }
    }
    return XDEV_OK;
}

/* The direct algorithm for a short message in a small group, else the
 * long one from its threshold on (in a crowd, up to its bound, the
 * crowd's), else the short one. */
int coll_pick(const xdev_coll_group_t *g, enum coll_family family, size_t bytes, int long_ok)
{
    if (g->cfg.forced[family] != COLL_AUTO) return g->cfg.forced[family];
    if (bytes <= g->cfg.direct_max[family] && g->size <= g->cfg.direct_members[family])
        return families[family].direct;
    if (!long_ok || bytes < g->cfg.long_min[family]) return 0;
    size_t crowd_max = g->cfg.crowded_max[family];
    return crowd_max && bytes <= crowd_max ? families[family].crowded : 1;
}
