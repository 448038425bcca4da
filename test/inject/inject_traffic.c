/*
 * inject_traffic.c - traffic between every pair of ranks while the system
 * calls named in INJECT_FAULTS fail or come up short (see inject.h).
 *
 *   inject_traffic clean [ROUNDS]   the faults are ones the library must
 *       absorb (short reads and writes, EINTR, EAGAIN, a single copy the
 *       kernel refuses): every call and request succeeds, every byte arrives.
 *   inject_traffic fail [ROUNDS [RANKS]]   faults the library reports
 *       (memory runs out, a handshake is cut short): a post may return
 *       XDEV_ERR_NOMEM and is then retried; a request may fail only with
 *       XDEV_ERR_PEER; what arrives is exact; nobody hangs; finalize
 *       returns. RANKS (say "1,2") lists the ranks that must meet a fault,
 *       when not all do; "met" asks each rank for a fault of its own or a
 *       link that a peer's fault failed (where a fault fails links, the
 *       ranks that meet one first can depend on timing).
 *   inject_traffic init ERR         xdev_init fails with ERR (a number) and
 *       leaves nothing behind (ASan checks the memory, the leftovers test
 *       /dev/shm).
 *
 * Each round every rank sends every other rank one message, of a size that
 * walks across the eager limit, the rendezvous and the single-copy pieces
 * (0 B to 4 MiB + 5); odd rounds post the receives after the sends, so
 * they also meet unexpected messages and offers. Every third round's sends
 * are synchronous; in two rounds of four the short ones that are not go
 * by blocking xdev_send, a transport's short tier (XDEV_TX_NOW), which on
 * tcp must carry on from where a short write stopped. Whatever the faults,
 * the test requires that they fired: a test whose fault never happened
 * proves nothing.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault_util.h"
#include "inject.h"
#include "xdev.h"

#define CTX 21
#define MAX_PEERS 8
#define POST_TRIES 100000

static const size_t sizes[] = { 0, 1, 777, 8192, 65536, 65537, 300000, 1 << 20,
                                (1 << 20) + 3, (4 << 20) + 5 };
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define MAX_LEN ((4 << 20) + 5)
#define BLOCKING_MAX 4096 /* eager on every transport: a blocking send returns */

static bool fail_mode;
static long nomem_posts; /* posts refused for memory, then retried */
static bool link_dead[MAX_PEERS];

static uint64_t key_of(int src, int dst, int round)
{
    return fault_mix(((uint64_t)src << 48) ^ ((uint64_t)dst << 32) ^ (uint64_t)round);
}

static size_t size_of(int src, int dst, int round)
{
    return sizes[(size_t)(round + src * 3 + dst) % NSIZES];
}

/* A post that may be refused for memory in fail mode: retry after some
 * progress, as a client would. Any other result is returned. */
#define POST(call)                                                      \
    ({                                                                  \
        int rc_ = (call);                                               \
        for (int t_ = 0; fail_mode && rc_ == XDEV_ERR_NOMEM; t_++) {   \
            REQUIRE(t_ < POST_TRIES, "%s kept failing for memory", #call); \
            nomem_posts++;                                              \
            xdev_progress(dev);                                         \
            rc_ = (call);                                               \
        }                                                               \
        rc_;                                                            \
    })

/* A finished request's outcome: in clean mode only success; in fail mode
 * a failure with the peer too, which ends traffic with that peer. */
static void outcome(int rc, const xdev_status_t *st, int peer, const char *what, int round)
{
    if (fail_mode && (rc == XDEV_ERR_PEER || (rc == XDEV_OK && st->error == XDEV_ERR_PEER))) {
        link_dead[peer] = true;
        return;
    }
    CHECK(rc == XDEV_OK && st->error == XDEV_OK, "round %d: %s with %d: rc %d (%s), error %d",
          round, what, peer, rc, xdev_strerror(rc), st->error);
}

static void run_round(xdev_t *dev, int rank, int size, int round, unsigned char **sbuf,
                      unsigned char **rbuf)
{
    xdev_request_t sreq[MAX_PEERS], rreq[MAX_PEERS];
    bool sposted[MAX_PEERS] = { 0 }, rposted[MAX_PEERS] = { 0 };
    bool late = round % 2, sync = round % 3 == 0;

    for (int pass = 0; pass < 2; pass++) {
        bool receives = (pass == 0) != late;
        for (int p = 0; p < size; p++) {
            if (p == rank || link_dead[p])
                continue;
            int rc;
            const char *what = "irecv";
            if (receives) {
                rc = POST(xdev_irecv(dev, rbuf[p], MAX_LEN, p, round, CTX, &rreq[p]));
                rposted[p] = rc == XDEV_OK;
            } else {
                size_t len = size_of(rank, p, round);
                fault_fill_keyed(sbuf[p], len, key_of(rank, p, round));
                bool blocking = !sync && len <= BLOCKING_MAX && round % 4 < 2;
                what = blocking ? "send" : "isend";
                if (blocking)
                    rc = POST(xdev_send(dev, sbuf[p], len, p, round, CTX));
                else
                    rc = sync ? POST(xdev_issend(dev, sbuf[p], len, p, round, CTX, &sreq[p]))
                              : POST(xdev_isend(dev, sbuf[p], len, p, round, CTX, &sreq[p]));
                sposted[p] = rc == XDEV_OK && !blocking;
                if (blocking && rc == XDEV_OK)
                    memset(sbuf[p], 0, len); /* sent: the buffer is the caller's again */
            }
            if (rc != XDEV_OK)
                outcome(rc, &(xdev_status_t){ 0 }, p, what, round);
        }
        if (late && pass == 0)
            for (int i = 0; i < 20; i++)
                xdev_progress(dev); /* let messages arrive unexpected */
    }
    for (int p = 0; p < size; p++) {
        xdev_status_t st;
        if (sposted[p])
            outcome(xdev_wait(&sreq[p], &st), &st, p, "send", round);
        if (!rposted[p])
            continue;
        int rc = xdev_wait(&rreq[p], &st);
        outcome(rc, &st, p, "receive", round);
        if (rc != XDEV_OK || st.error != XDEV_OK)
            continue;
        size_t len = size_of(p, rank, round);
        CHECK(st.source == p && st.tag == round && st.count == len,
              "round %d: from %d got source %d tag %d count %zu, want %zu", round, p, st.source,
              st.tag, st.count, len);
        size_t bad = fault_verify_keyed(rbuf[p], st.count, key_of(p, rank, round));
        CHECK(bad == (size_t)-1, "round %d: message from %d wrong at byte %zu", round, p, bad);
    }
}

static long traffic(int rounds)
{
    xdev_t *dev;
    REQUIRE_RC(xdev_init(NULL, &dev), XDEV_OK);
    int rank = xdev_rank(dev), size = xdev_size(dev);
    REQUIRE(size <= MAX_PEERS, "at most %d ranks", MAX_PEERS);
    unsigned char *sbuf[MAX_PEERS], *rbuf[MAX_PEERS];
    for (int p = 0; p < size; p++) {
        sbuf[p] = malloc(MAX_LEN);
        rbuf[p] = malloc(MAX_LEN);
        REQUIRE(sbuf[p] && rbuf[p], "buffers");
    }
    REQUIRE_RC(fault_barrier(dev), XDEV_OK);

    inject_start(NULL);
    for (int round = 0; round < rounds; round++) {
        fault_step("traffic");
        run_round(dev, rank, size, round, sbuf, rbuf);
    }
    long fired = inject_fired_total();
    inject_stop();

    int dead = 0;
    for (int p = 0; p < size; p++)
        dead += link_dead[p];
    fault_log("%d rounds; faults injected %ld; posts refused for memory %ld; links failed %d",
              rounds, fired, nomem_posts, dead);
    if (!fail_mode) {
        /* Where a fault lands can depend on timing (which side of a pair
         * reads first): the job as a whole must have met one. */
        long all = fired;
        for (int p = 1; p < size && rank == 0; p++) {
            long theirs = 0;
            CHECK_RC(xdev_recv(dev, &theirs, sizeof theirs, p, 0, CTX + 1, NULL), XDEV_OK);
            all += theirs;
        }
        if (rank != 0)
            CHECK_RC(xdev_send(dev, &fired, sizeof fired, 0, 0, CTX + 1), XDEV_OK);
        CHECK(rank != 0 || all > 0, "no fault was injected in any rank");
        CHECK_RC(fault_barrier(dev), XDEV_OK);
    }
    fault_step("finalize");
    int rc = xdev_finalize(dev);
    CHECK(rc == XDEV_OK || (fail_mode && rc == XDEV_ERR_CANCELED), "finalize: %d (%s)", rc,
          xdev_strerror(rc));
    for (int p = 0; p < size; p++) {
        free(sbuf[p]);
        free(rbuf[p]);
    }
    return fired;
}

int main(int argc, char **argv)
{
    fault_setup("inject", 100);
    if (argc < 2) {
        fprintf(stderr, "usage: inject_traffic clean|fail [ROUNDS [RANKS]] | init ERR\n");
        return 2;
    }
    if (!strcmp(argv[1], "init")) {
        REQUIRE(argc == 3, "init wants the expected error");
        int want = atoi(argv[2]);
        xdev_t *dev = NULL;
        inject_start(NULL);
        int rc = xdev_init(NULL, &dev);
        long fired = inject_fired_total();
        inject_stop();
        CHECK(rc == want, "xdev_init returned %d (%s), want %d (%s)", rc, xdev_strerror(rc), want,
              xdev_strerror(want));
        CHECK(fired > 0, "no fault was injected");
        if (rc == XDEV_OK)
            xdev_finalize(dev);
        return fault_finish();
    }
    fail_mode = !strcmp(argv[1], "fail");
    REQUIRE(fail_mode || !strcmp(argv[1], "clean"), "mode is clean, fail or init");
    int rounds = argc > 2 ? atoi(argv[2]) : 40;
    long fired = traffic(rounds);
    /* With links failing the ranks cannot add up their counts: each one
     * checks its own, and which ranks meet the fault at all can depend on
     * the rank (who dials whom): the optional list names the ones that must. */
    const char *must = argc > 3 ? argv[3] : NULL, *rank = getenv("XDEV_RANK");
    if (must && !strcmp(must, "met")) {
        int dead = 0;
        for (int p = 0; p < MAX_PEERS; p++)
            dead += link_dead[p];
        CHECK(fired > 0 || dead > 0, "no fault was injected here, and no link failed");
        return fault_finish();
    }
    bool mine = fail_mode && !must;
    for (const char *c = must; c && *c && rank; c += strcspn(c, ","), c += *c == ',')
        mine |= atoi(c) == atoi(rank);
    CHECK(!mine || fired > 0, "no fault was injected");
    return fault_finish();
}
