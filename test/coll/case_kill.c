/*
 * case_kill.c - a member dies (SIGKILL) in the middle of a collective.
 *
 *   xdev-coll-test kill FAMILY ALGORITHM [mid|slow|late|first]  (run_kill.sh runs it)
 *
 * After a few good rounds, the victim dies while the others are in the
 * collective: just before it would enter it, or with `mid` (reductions
 * only) inside its first call of the (user) reduction function, that is
 * after it has already exchanged messages. With `first` the victim is
 * member 0, whose release the linear barrier's members wait for. `slow` is
 * `mid` with member 0 slow (SLOW_S) in its first reduction function: in
 * a ring, member 1 then fails (its send to the victim) while its receive
 * from member 0 is posted, and member 0 sends into it afterwards, into the
 * failed call's buffers (XDEV_COLL_KILL_COUNT makes that a rendezvous
 * still moving while member 1 drives progress before finalize). `late` is
 * `mid` with member 1 entering the collective SLOW_S late: in the reduce
 * tree it is a leaf under member 0, the root, whose call fails (member 2,
 * its other child, dies) while the receive from member 1 is posted into
 * the root's scratch (the last child's goes into recvbuf, reduce.c);
 * member 1's vector arrives there afterwards, so the failed call must
 * leave that block to xdev rather than keep or free it.
 * In bcast the victim is an inner node of the binomial tree (group rank
 * size/2, root 0), so its grandchildren wait on a live child that fails:
 * only the notice lets them return.
 * Without `mid` every survivor needs the victim's contribution and must
 * return an error within FAIL_BOUND_S (in bcast: every member of the
 * victim's subtree; the others may return OK, and in the direct bcast,
 * where nobody waits for the victim, all of them may). With `mid` the
 * victim's data may already have reached some members: those may return
 * OK but then must hold the correct result; the others must return an
 * error; nobody may hang. A member that returned OK must fail its next
 * collective on the group (the others' notices, or the dead peer, reach
 * it). Afterwards the broken group fails at once, can be freed, and the
 * device is driven a while (the failed call's requests may still move
 * data) and finalizes.
 * Its buffers are freed only after finalize, as xdev_coll.h asks.
 * Each survivor that passes writes "ok" to $XDEV_TEST_OUT/rank.<r>.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define FAIL_BOUND_S 20.0
#define AFTER_S 0.5 /* progress driven after the failure, before finalize */

/* Elements (int64): every rank holds several ring blocks. 4096 by
 * default; XDEV_COLL_KILL_COUNT sets it, so that the messages are long
 * enough to go by rendezvous and still be moving when the call fails. */
static size_t nelem = 4096;

#define SLOW_S 0.2

/* The victim is group rank size - 1, or 2 with `mid`, `slow` or `late` (a
 * rank that combines data early in every algorithm tested: not a leaf of
 * the reduce tree), or size / 2 in bcast (an inner node of the tree from
 * root 0), or 0 with `first`. */
static int victim;
static int slow_member = -1; /* with `slow`: 0 until its first reduction */

static void add_or_die(const void *in, void *inout, size_t n, void *arg)
{
    (void)arg;
    if (t_rank == victim) raise(SIGKILL);
    if (t_rank == slow_member) {
        slow_member = -1;
        usleep((useconds_t)(SLOW_S * 1e6));
    }
    const int64_t *a = in;
    int64_t *b = inout;
    for (size_t i = 0; i < n; i++) b[i] += a[i];
}

static int run(xdev_coll_group_t *g, const char *family, void *s, void *d)
{
    xdev_coll_op_t op = {0, XDEV_COLL_USER, add_or_die, sizeof(int64_t), NULL};
    int p = t_size;
    size_t *counts = t_malloc(sizeof(size_t) * (size_t)p);
    for (int i = 0; i < p; i++) counts[i] = nelem / (size_t)p;
    int rc;
    if (!strcmp(family, "allreduce")) rc = xdev_coll_allreduce(g, s, d, nelem, &op);
    else if (!strcmp(family, "reduce")) rc = xdev_coll_reduce(g, s, d, nelem, &op, 0);
    else if (!strcmp(family, "reduce_scatter")) rc = xdev_coll_reduce_scatter(g, s, d, counts, &op);
    else if (!strcmp(family, "barrier")) rc = xdev_coll_barrier(g);
    else if (!strcmp(family, "allgather")) rc = xdev_coll_allgather(g, s, nelem * 8 / (size_t)p, d);
    else if (!strcmp(family, "alltoall")) rc = xdev_coll_alltoall(g, s, nelem * 8 / (size_t)p, d);
    else if (!strcmp(family, "bcast")) rc = xdev_coll_bcast(g, s, nelem * 8, 0);
    else t_fail(__FILE__, __LINE__, "family", "unknown family %s", family);
    free(counts);
    return rc;
}

/* Is member r in the subtree of the victim in a binomial tree rooted at 0? */
static int below_victim(int r)
{
    int low = victim & -victim;
    return r > victim && r < victim + low;
}

int case_kill(const char *family, const char *alg, const char *when)
{
    char var[64];
    CHECK(t_size >= 3, "needs at least 3 ranks");
    const char *env = getenv("XDEV_COLL_KILL_COUNT");
    if (env) nelem = strtoul(env, NULL, 10);
    CHECK(nelem >= (size_t)t_size, "XDEV_COLL_KILL_COUNT %zu: fewer elements than ranks", nelem);
    int slow = !strcmp(when, "slow"), late = !strcmp(when, "late");
    int mid = slow || late || !strcmp(when, "mid");
    int the_victim = !strcmp(when, "first")     ? 0
                     : !strcmp(family, "bcast") ? t_size / 2
                     : mid                      ? 2
                                                : t_size - 1;
    snprintf(var, sizeof var, "XDEV_COLL_%s", family);
    for (char *c = var; *c; c++) *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
    xdev_coll_group_t *g = t_world(var, alg);
    int64_t *s = t_malloc(nelem * 8), *d = t_malloc(nelem * 8);
    for (size_t i = 0; i < nelem; i++) s[i] = (int64_t)i + t_rank;

    victim = -1; /* nobody dies in the good rounds */
    for (int i = 0; i < 3; i++) {
        t_phase("good round %d", i);
        CHECK_RC(run(g, family, s, d));
    }
    /* bcast does not synchronize: the victim may finish the good rounds
     * while others are still in them, and must not die before they are
     * done. So it waits for word from every survivor, on a context of its
     * own, first. */
    int word_ctx = t_next_ctx();
    if (t_rank == the_victim) {
        for (int i = 0; i < t_size - 1; i++)
            CHECK_RC(xdev_recv(t_dev, NULL, 0, XDEV_ANY_SOURCE, 0, word_ctx, NULL));
    } else {
        CHECK_RC(xdev_send(t_dev, NULL, 0, the_victim, 0, word_ctx));
    }
    victim = the_victim;
    if (slow) slow_member = 0;
    if (t_rank == victim && !mid) raise(SIGKILL);
    if (late && t_rank == 1) usleep((useconds_t)(SLOW_S * 1e6));

    t_phase("collective with a dying member");
    double t0 = t_now();
    int rc = run(g, family, s, d);
    double dt = t_now() - t0;
    printf("[rank %d] %s %s with a dying member: %d (%s) after %.3f s\n", t_rank, family, alg,
           rc, xdev_strerror(rc), dt);
    int may_pass = mid || (!strcmp(family, "bcast") &&
                           (!strcmp(alg, "direct") ||
                            (!strcmp(alg, "binomial") && !below_victim(t_rank))));
    if (rc == XDEV_OK) {
        CHECK(may_pass, "%s returned OK although it needed the dead member", family);
        if (mid && (strcmp(family, "reduce") || t_rank == 0)) {
            /* the full sum reached this member: check it */
            size_t from = 0, n = nelem;
            if (!strcmp(family, "reduce_scatter")) {
                n = nelem / (size_t)t_size;
                from = n * (size_t)t_rank;
            }
            for (size_t i = 0; i < n; i++) {
                int64_t p = t_size, want = p * (int64_t)(from + i) + p * (p - 1) / 2;
                CHECK(d[i] == want, "returned OK with element %zu = %lld, want %lld", from + i,
                      (long long)d[i], (long long)want);
            }
        }
        t_phase("the collective after");
        rc = xdev_coll_barrier(g);
        CHECK(rc != XDEV_OK, "the barrier after a failed collective returned OK");
    }
    CHECK(dt < FAIL_BOUND_S, "took %.3f s to fail", dt);
    t_phase("broken group");
    int rc2 = xdev_coll_barrier(g);
    CHECK(rc2 != XDEV_OK, "a broken group's barrier returned OK");
    CHECK_RC(xdev_coll_group_free(g));
    /* Requests of the failed call may still be moving data into its
     * buffers, and its scratch ones, until finalize: keep driving them
     * (under ASan, a scratch buffer freed too early shows here). */
    t_phase("progress after the failure");
    for (double t1 = t_now(); t_now() - t1 < AFTER_S;)
        CHECK(xdev_progress(t_dev) >= 0, "xdev_progress failed");
    t_phase("xdev_finalize");
    rc = xdev_finalize(t_dev);
    CHECK(rc == XDEV_OK || rc == XDEV_ERR_CANCELED, "xdev_finalize returned %d (%s)", rc,
          xdev_strerror(rc));
    free(s);
    free(d);
    const char *out = getenv("XDEV_TEST_OUT");
    if (out) {
        char path[512];
        snprintf(path, sizeof path, "%s/rank.%d", out, t_rank);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL, "cannot write %s", path);
        fputs("ok", f);
        fclose(f);
    }
    return 0;
}
