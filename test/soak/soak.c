/*
 * soak.c - randomized traffic of every kind xdev.h offers, checked to the
 * byte, clean or while ranks are killed and stopped.
 *
 * Run by run_soak.sh as
 *   xdevrun --keep-going -n NP soak SEED clean|faulty
 * with XDEV_TEST_OUT set. Everything drawn comes from SEED: the messages
 * (soak_msg.h), the order they are sent in, the receivers' choices, and
 * the faults (soak_fault.h); only timing differs between two runs.
 *
 * Each rank runs 2-3 sender threads (soak_send.h) and four receiving
 * ones: named and wildcard receives (soak_recv.h), probes (soak_probe.h),
 * and two racing matched-probe threads (soak_mprobe.h). Main wakes every
 * blocked call with xdev_wakeup every few tens of milliseconds: each must
 * come back XDEV_ERR_WOKEN having taken or sent nothing, or finish what it
 * had begun, and is called again.
 *
 * At the end every rank checks that each stream from a live rank came
 * whole (from a killed one, its first messages, each once), that nothing
 * is left to receive, that only killed ranks failed anything and never
 * later than the peer timeout + 2 s after they died, and that
 * xdev_finalize returns XDEV_OK. It prints one summary line of counters
 * and writes "ok" to $XDEV_TEST_OUT/rank.<r> if it passed.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "soak.h"
#include "soak_fault.h"
#include "soak_mprobe.h"
#include "soak_probe.h"
#include "soak_recv.h"
#include "soak_send.h"

#define SENTINEL_CTX 140
#define DEADLINE_S 90
#define WATCHDOG_S 100

struct soak_run soak;
struct soak_counters soak_count;
atomic_int soak_got[K_COUNT][SOAK_MAX_RANKS][SOAK_MAX_THREADS];
atomic_bool soak_cut[K_COUNT][SOAK_MAX_RANKS][SOAK_MAX_THREADS];

static const char *const kind_name[K_COUNT] = {"named", "wildcard", "probe", "mprobe"};

/* About 2000-4000 messages in the job, whatever its size, so that a run
 * takes seconds; each kind's streams a little longer or shorter. */
static void draw_run(void)
{
    uint64_t rng = soak.seed;
    soak.nthreads = 2 + (int)(soak_rand(&rng) % 2);
    int total = 2000 + (int)(soak_rand(&rng) % 2000);
    int base = total / (soak.size * soak.size * soak.nthreads * K_COUNT);
    base = base < 2 ? 2 : base;
    for (int k = 0; k < K_COUNT; k++)
        soak.nmsgs[k] = base / 2 + 1 + (int)(soak_rand(&rng) % (uint64_t)base);
}

struct thread {
    pthread_t id;
    void *(*fn)(void *);
    intptr_t arg;
};

static atomic_int running;

static void *run_thread(void *arg)
{
    struct thread *th = arg;
    th->fn((void *)th->arg);
    atomic_fetch_sub(&running, 1);
    return NULL;
}

/* Where every stream stands, when the run is past its deadline. */
static void report_streams(void)
{
    for (int k = 0; k < K_COUNT; k++)
        for (int src = 0; src < soak.size; src++)
            for (int t = 0; t < soak.nthreads; t++) {
                int got = atomic_load(&soak_got[k][src][t]);
                if (got < soak.nmsgs[k] && !atomic_load(&soak_cut[k][src][t]))
                    fault_log("stream %s from %d thread %d: %d of %d received", kind_name[k], src,
                              t, got, soak.nmsgs[k]);
            }
}

/* Run every thread; meanwhile wake the blocked calls now and then. */
static void run_traffic(void)
{
    enum { NTH = SOAK_MAX_THREADS + 2 + SOAK_MPROBE_THREADS };
    static struct thread th[NTH];
    int n = 0;
    for (int t = 0; t < soak.nthreads; t++)
        th[n++] = (struct thread){ .fn = soak_sender, .arg = t };
    th[n++] = (struct thread){ .fn = soak_receiver };
    th[n++] = (struct thread){ .fn = soak_prober };
    for (int i = 0; i < SOAK_MPROBE_THREADS; i++)
        th[n++] = (struct thread){ .fn = soak_mprober, .arg = i };
    atomic_store(&running, n);
    for (int i = 0; i < n; i++)
        REQUIRE(pthread_create(&th[i].id, NULL, run_thread, &th[i]) == 0, "pthread_create");
    uint64_t rng = soak.seed ^ 0x5eedu ^ (uint64_t)soak.rank;
    double deadline = fault_now() + DEADLINE_S;
    while (atomic_load(&running) > 0) {
        fault_sleep_ms(5 + (int)(soak_rand(&rng) % 60));
        xdev_wakeup(soak.dev);
        if (fault_now() > deadline) {
            SOAK_FAIL("seed %llu: the traffic is not done after %d s", (unsigned long long)soak.seed,
                      DEADLINE_S);
            report_streams();
            fault_abort();
        }
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i].id, NULL);
}

/* A live rank's streams came whole; a killed one's at most so. */
static void check_streams(void)
{
    for (int k = 0; k < K_COUNT; k++)
        for (int src = 0; src < soak.size; src++)
            for (int t = 0; t < soak.nthreads; t++) {
                int got = atomic_load(&soak_got[k][src][t]);
                bool cut = atomic_load(&soak_cut[k][src][t]);
                if (!soak_is_victim(src) ? got != soak.nmsgs[k] || cut : got > soak.nmsgs[k])
                    SOAK_FAIL("seed %llu: %d of %d %s messages from %d (thread %d) received%s",
                              (unsigned long long)soak.seed, got, soak.nmsgs[k], kind_name[k], src,
                              t, cut ? ", then cut" : "");
            }
    soak_mprobe_check();
}

/* Every stream is closed: anything still there to receive is one message
 * too many. */
static void check_nothing_left(void)
{
    int ctxs[] = {100, 101, 102, 110, 111, 112, 120, 130};
    for (size_t i = 0; i < sizeof ctxs / sizeof ctxs[0]; i++) {
        int found = 0;
        xdev_status_t st;
        CHECK_RC(xdev_iprobe(soak.dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, ctxs[i], &found, &st), XDEV_OK);
        CHECK(!found, "seed %llu: a message from %d (tag %#x, %zu bytes, error %d) is left on ctx "
              "%d after every stream was closed", (unsigned long long)soak.seed, st.source, st.tag,
              st.count, st.error, ctxs[i]);
    }
}

/* One receive per peer that nothing matches makes the device watch every
 * peer, so a killed one is found dead even when no receive names it. */
static xdev_request_t sentinel[SOAK_MAX_RANKS];

static void post_sentinels(void)
{
    for (int p = 0; p < soak.size; p++)
        if (p != soak.rank)
            REQUIRE_RC(xdev_irecv(soak.dev, NULL, 0, p, 0, SENTINEL_CTX, &sentinel[p]), XDEV_OK);
}

/* Before the barrier, after which live ranks leave and would fail them. */
static void end_sentinels(void)
{
    for (int p = 0; p < soak.size; p++) {
        if (p == soak.rank)
            continue;
        int rc = xdev_cancel(&sentinel[p]);
        CHECK(rc == XDEV_OK || rc == XDEV_ERR_TOO_LATE, "seed %llu: cancel of a sentinel: %d",
              (unsigned long long)soak.seed, rc);
        xdev_status_t st;
        CHECK_RC(xdev_wait(&sentinel[p], &st), XDEV_OK);
        /* not soak_peer_failed: when it failed is not known here */
        CHECK(st.error == XDEV_ERR_CANCELED || (st.error == XDEV_ERR_PEER && soak_is_victim(p)),
              "seed %llu: the sentinel receive naming %d completed with %d (%s)",
              (unsigned long long)soak.seed, p, st.error, xdev_strerror(st.error));
        CHECK(xdev_peer_state(soak.dev, p) != XDEV_PEER_DEAD || soak_is_victim(p),
              "seed %llu: rank %d, not killed, is dead to this rank", (unsigned long long)soak.seed,
              p);
    }
}

static void print_summary(void)
{
    const char *tr = getenv("XDEV_TRANSPORT");
    fault_log("summary seed=%llu np=%d threads=%d transport=%s mode=%s sent_msgs=%llu "
              "sent_bytes=%llu recv_msgs=%llu recv_bytes=%llu truncated=%llu cancelled=%llu "
              "cancel_late=%llu probes=%llu mprobes=%llu woken=%llu peer_errors=%llu",
              (unsigned long long)soak.seed, soak.size, soak.nthreads, tr ? tr : "auto",
              soak.faulty ? "faulty" : "clean",
              (unsigned long long)soak_count.sent_msgs, (unsigned long long)soak_count.sent_bytes,
              (unsigned long long)soak_count.recv_msgs, (unsigned long long)soak_count.recv_bytes,
              (unsigned long long)soak_count.truncated, (unsigned long long)soak_count.cancelled,
              (unsigned long long)soak_count.cancel_late, (unsigned long long)soak_count.probes,
              (unsigned long long)soak_count.mprobes, (unsigned long long)soak_count.woken,
              (unsigned long long)soak_count.peer_errors);
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[2], "clean") && strcmp(argv[2], "faulty"))) {
        fprintf(stderr, "usage: xdevrun --keep-going -n NP %s SEED clean|faulty\n", argv[0]);
        return 2;
    }
    const char *r = getenv("XDEV_RANK"), *s = getenv("XDEV_SIZE"), *pt = getenv("XDEV_PEER_TIMEOUT_MS");
    const char *slack = getenv("XDEV_SOAK_SLACK_MS");
    soak.seed = strtoull(argv[1], NULL, 10);
    soak.faulty = !strcmp(argv[2], "faulty");
    soak.rank = r ? atoi(r) : 0;
    soak.size = s ? atoi(s) : 1;
    soak.peer_timeout_s = (pt ? atoi(pt) : 20000) / 1000.0;
    soak.slack_s = (slack ? atoi(slack) : 2000) / 1000.0;
    fault_setup("soak", WATCHDOG_S);
    if (soak.size < 2 || soak.size > SOAK_MAX_RANKS) {
        fprintf(stderr, "needs 2 to %d ranks\n", SOAK_MAX_RANKS);
        return 2;
    }
    draw_run();
    if (soak.rank == 0)
        printf("[soak] seed %llu %s: %d ranks, %d sender threads, streams of %d named, %d "
               "wildcard, %d probe, %d mprobe messages\n", (unsigned long long)soak.seed, argv[2],
               soak.size, soak.nthreads, soak.nmsgs[K_NAMED], soak.nmsgs[K_WILD],
               soak.nmsgs[K_PROBE], soak.nmsgs[K_MPROBE]);
    soak_fault_plan();
    soak_fault_start();

    fault_step("xdev_init");
    REQUIRE_RC(xdev_init(NULL, &soak.dev), XDEV_OK);
    post_sentinels();
    soak_mprobe_init();
    fault_step("traffic");
    run_traffic();
    if (soak_is_victim(soak.rank)) {
        /* Done before its death: keep the peers' goodbyes answered. */
        fault_step("victim waiting to be killed");
        xdev_status_t st;
        for (;;)
            xdev_probe(soak.dev, XDEV_ANY_SOURCE, 0, SENTINEL_CTX + 1, &st);
    }
    fault_step("checks");
    check_streams();
    end_sentinels();
    fault_step("barrier of the survivors");
    CHECK_RC(soak_survivors_barrier(), XDEV_OK);
    check_nothing_left();
    soak_fault_check_times();
    print_summary();
    fault_step("xdev_finalize");
    CHECK_RC(xdev_finalize(soak.dev), XDEV_OK);
    soak_fault_end();
    int rc = fault_finish();
    if (rc == 0 && fault_write_result(soak.rank, "ok") != 0)
        rc = 1;
    return rc;
}
