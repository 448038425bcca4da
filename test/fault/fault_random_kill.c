/*
 * fault_random_kill.c - randomized traffic while one rank is killed, or
 * stopped and continued.
 *
 * Run by run_random_kill.sh as
 *   xdevrun --keep-going -n NP fault_random_kill SEED kill|stop
 * with XDEV_TEST_OUT set. Everything random comes from SEED (printed), so
 * a failing run can be repeated.
 *
 * Every rank runs T threads (1 or 2), each on contexts of its own. A
 * thread sends every other rank N messages on its "named" context and M on
 * its "wild" context, 8 sends in flight, one in eight synchronous. Message
 * k of a stream has a tag, a length (0 B to 1 MiB: across the eager limit,
 * and across the shm single-copy threshold the driver lowers to 256 KiB)
 * and bytes that are functions of (seed, source, destination, context, k),
 * so the receiver checks all of it. Receives: two posted per source that
 * name it (XDEV_ANY_TAG) on the named context, two XDEV_ANY_SOURCE ones
 * on the wild context.
 *
 * kill: one rank (the victim, from the seed) forks a child before
 * xdev_init that SIGKILLs it 0.1-0.9 s in (in one run of four, within its
 * first 20 ms: before or during its xdev_init) and writes the time to
 * $XDEV_TEST_OUT/killed. Survivors check:
 *  - what they receive from each sender on each context is exactly its
 *    stream from message 0 on, in order, whole (the prefix rule);
 *  - only the victim's requests fail, with XDEV_ERR_PEER: after a named
 *    receive from it failed, every later one does; a wildcard receive may
 *    fail only naming the victim (the message its stream was cut at), and
 *    then nothing more of the victim's arrives on that context;
 *  - sends to live ranks all complete; every exchange with a live rank
 *    finishes;
 *  - the last failure came within XDEV_PEER_TIMEOUT_MS + 2 s of the kill,
 *    or of the survivor's first receive naming the victim if later (the
 *    timeout runs from when a request first wants a peer);
 *  - xdev_finalize returns XDEV_OK or XDEV_ERR_CANCELED (wildcard receives
 *    still posted for a dead sender are abandoned there).
 * stop: the victim is stopped for 3 s and continued; nothing may fail and
 * every stream arrives whole.
 * A rank that passes writes "ok" to $XDEV_TEST_OUT/rank.<r>; rank 0
 * writes the victim's rank to $XDEV_TEST_OUT/victim.
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault_util.h"
#include "xdev.h"

#define MAX_RANKS 16
#define MAX_THREADS 2
#define INFLIGHT 8
#define POSTED 2
#define MAX_LEN (1u << 20)
#define STOP_S 3

static uint64_t seed;
static bool kill_mode;
static int rank, size, victim, nthreads, nnamed, nwild;
static xdev_t *dev;
static double last_failure; /* survivors: when the last XDEV_ERR_PEER came */
static double t_watch;      /* when this rank first wanted every peer */
static pthread_mutex_t stat_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t msgs_in, bytes_in, failures_seen;

static uint64_t key(int src, int dst, int ctx, int k)
{
    return fault_mix(seed ^ fault_mix(((uint64_t)src << 48) ^ ((uint64_t)dst << 40) ^
                                      ((uint64_t)ctx << 32) ^ (uint64_t)k));
}

/* Mostly small, a quarter up to the eager limit, a fifth rendezvous. */
static size_t msg_len(uint64_t h)
{
    unsigned c = (unsigned)(h % 100);
    if (c < 55)
        return (h >> 8) % 513;
    if (c < 80)
        return (h >> 8) % (64 * 1024 + 1);
    return 64 * 1024 + 1 + (h >> 8) % (MAX_LEN - 64 * 1024);
}

static int msg_tag(uint64_t h) { return (int)((h >> 40) % 1000); }
static bool msg_sync(uint64_t h) { return ((h >> 52) & 7) == 0; }

static bool may_fail(int peer) { return kill_mode && peer == victim; }

static void saw_failure(void)
{
    pthread_mutex_lock(&stat_lock);
    last_failure = fault_now();
    failures_seen++;
    pthread_mutex_unlock(&stat_lock);
}

/* ---- one thread's traffic ---- */

struct posted {
    xdev_request_t req;
    unsigned char *buf;
};

struct thread {
    int t, named_ctx, wild_ctx;
    /* sending */
    int next_named[MAX_RANKS], next_wild[MAX_RANKS];
    bool send_dead[MAX_RANKS];
    xdev_request_t sreq[INFLIGHT];
    unsigned char *sbuf[INFLIGHT];
    int sdst[INFLIGHT];
    bool sbusy[INFLIGHT];
    int rr; /* round robin over (destination, stream) */
    /* receiving */
    struct posted named[MAX_RANKS][POSTED];
    int named_head[MAX_RANKS], named_posted[MAX_RANKS], named_expect[MAX_RANKS];
    bool named_failed[MAX_RANKS];
    struct posted wild[POSTED];
    int wild_head, wild_posted, wild_expect[MAX_RANKS];
    bool wild_failed[MAX_RANKS];
};

#define FAILF(...) fault_fail(__FILE__, __LINE__, __VA_ARGS__)

static bool sends_left(struct thread *th, int dst)
{
    return dst != rank && !th->send_dead[dst] &&
           (th->next_named[dst] < nnamed || th->next_wild[dst] < nwild);
}

static void post_sends(struct thread *th)
{
    for (int slot = 0; slot < INFLIGHT; slot++) {
        if (th->sbusy[slot])
            continue;
        int tries = 0, dst = -1;
        bool wild = false;
        for (; tries < 2 * size; tries++) {
            int pick = th->rr++ % (2 * size);
            dst = pick / 2;
            wild = pick & 1;
            if (sends_left(th, dst) && (wild ? th->next_wild[dst] < nwild : th->next_named[dst] < nnamed))
                break;
        }
        if (tries == 2 * size)
            return;
        int ctx = wild ? th->wild_ctx : th->named_ctx;
        int k = wild ? th->next_wild[dst]++ : th->next_named[dst]++;
        uint64_t h = key(rank, dst, ctx, k);
        size_t len = msg_len(h);
        fault_fill_keyed(th->sbuf[slot], len, h);
        int rc = (msg_sync(h) ? xdev_issend : xdev_isend)(dev, th->sbuf[slot], len, dst, msg_tag(h),
                                                          ctx, &th->sreq[slot]);
        if (rc == XDEV_ERR_PEER && may_fail(dst)) {
            th->send_dead[dst] = true;
            saw_failure();
            continue;
        }
        if (rc != XDEV_OK) {
            FAILF("seed %llu thread %d: send #%d to %d (ctx %d) returned %d (%s)",
                  (unsigned long long)seed, th->t, k, dst, ctx, rc, xdev_strerror(rc));
            fault_abort();
        }
        th->sbusy[slot] = true;
        th->sdst[slot] = dst;
    }
}

static void reap_sends(struct thread *th)
{
    for (int slot = 0; slot < INFLIGHT; slot++) {
        if (!th->sbusy[slot])
            continue;
        int done = 0;
        xdev_status_t st;
        int rc = xdev_test(&th->sreq[slot], &done, &st);
        if (rc != XDEV_OK) {
            FAILF("seed %llu: xdev_test of a send returned %d", (unsigned long long)seed, rc);
            fault_abort();
        }
        if (!done)
            continue;
        th->sbusy[slot] = false;
        int dst = th->sdst[slot];
        if (st.error == XDEV_ERR_PEER && may_fail(dst)) {
            th->send_dead[dst] = true;
            saw_failure();
        } else if (st.error != XDEV_OK) {
            FAILF("seed %llu thread %d: a send to live rank %d failed with %d (%s)",
                  (unsigned long long)seed, th->t, dst, st.error, xdev_strerror(st.error));
            th->send_dead[dst] = true; /* reported; stop sending to it */
        }
    }
}

static void post_recv(struct thread *th, struct posted *p, int src, int ctx)
{
    int rc = xdev_irecv(dev, p->buf, MAX_LEN, src, XDEV_ANY_TAG, ctx, &p->req);
    if (rc != XDEV_OK && !(rc == XDEV_ERR_PEER && src >= 0 && may_fail(src))) {
        FAILF("seed %llu thread %d: irecv from %d returned %d (%s)", (unsigned long long)seed,
              th->t, src, rc, xdev_strerror(rc));
        fault_abort();
    }
    if (rc == XDEV_ERR_PEER) { /* refused at once: as a failed receive */
        th->named_failed[src] = true;
        saw_failure();
    }
}

/* Is message k of src's stream on ctx what st and buf hold? */
static void check_message(struct thread *th, const char *kind, int src, int ctx, int k,
                          const xdev_status_t *st, const unsigned char *buf)
{
    uint64_t h = key(src, rank, ctx, k);
    size_t len = msg_len(h), bad;
    if (st->count != len || st->tag != msg_tag(h) || st->ctx != ctx)
        FAILF("seed %llu thread %d: %s message #%d from %d: tag %d count %zu ctx %d, want tag %d "
              "count %zu ctx %d (a message lost or out of order)", (unsigned long long)seed, th->t,
              kind, k, src, st->tag, st->count, st->ctx, msg_tag(h), len, ctx);
    else if ((bad = fault_verify_keyed(buf, len, h)) != (size_t)-1)
        FAILF("seed %llu thread %d: %s message #%d from %d (%zu bytes): byte %zu wrong",
              (unsigned long long)seed, th->t, kind, k, src, len, bad);
    pthread_mutex_lock(&stat_lock);
    msgs_in++;
    bytes_in += st->count;
    pthread_mutex_unlock(&stat_lock);
}

static bool named_wanted(struct thread *th, int src)
{
    return src != rank && !th->named_failed[src] &&
           th->named_expect[src] + th->named_posted[src] < nnamed;
}

static void run_named(struct thread *th, int src)
{
    while (th->named_posted[src] < POSTED && named_wanted(th, src)) {
        int i = (th->named_head[src] + th->named_posted[src]) % POSTED;
        th->named_posted[src]++;
        post_recv(th, &th->named[src][i], src, th->named_ctx);
        if (th->named_failed[src])
            th->named_posted[src]--;
    }
    if (!th->named_posted[src])
        return;
    struct posted *p = &th->named[src][th->named_head[src]];
    int done = 0;
    xdev_status_t st;
    if (xdev_test(&p->req, &done, &st) != XDEV_OK) {
        FAILF("seed %llu: xdev_test of a named receive failed", (unsigned long long)seed);
        fault_abort();
    }
    if (!done)
        return;
    th->named_head[src] = (th->named_head[src] + 1) % POSTED;
    th->named_posted[src]--;
    if (st.error == XDEV_ERR_PEER && may_fail(src)) {
        th->named_failed[src] = true;
        saw_failure();
    } else if (st.error != XDEV_OK) {
        FAILF("seed %llu thread %d: named receive from %d failed with %d (%s)",
              (unsigned long long)seed, th->t, src, st.error, xdev_strerror(st.error));
        th->named_failed[src] = true; /* reported; stop receiving from it */
    } else if (th->named_failed[src]) {
        FAILF("seed %llu thread %d: a named receive from %d got message tag %d after an "
              "earlier one failed: not a prefix", (unsigned long long)seed, th->t, src, st.tag);
    } else {
        check_message(th, "named", src, th->named_ctx, th->named_expect[src]++, &st, p->buf);
    }
}

static void run_wild(struct thread *th)
{
    while (th->wild_posted < POSTED) {
        int i = (th->wild_head + th->wild_posted) % POSTED;
        th->wild_posted++;
        post_recv(th, &th->wild[i], XDEV_ANY_SOURCE, th->wild_ctx);
    }
    struct posted *p = &th->wild[th->wild_head];
    int done = 0;
    xdev_status_t st;
    if (xdev_test(&p->req, &done, &st) != XDEV_OK) {
        FAILF("seed %llu: xdev_test of a wildcard receive failed", (unsigned long long)seed);
        fault_abort();
    }
    if (!done)
        return;
    th->wild_head = (th->wild_head + 1) % POSTED;
    th->wild_posted--;
    int src = st.source;
    if (st.error == XDEV_ERR_PEER && src >= 0 && src < size && may_fail(src)) {
        th->wild_failed[src] = true;
        saw_failure();
    } else if (st.error != XDEV_OK || src < 0 || src >= size || src == rank) {
        if (src >= 0 && src < size)
            th->wild_failed[src] = true; /* reported; expect nothing more of it */
        FAILF("seed %llu thread %d: wildcard receive: error %d (%s), source %d",
              (unsigned long long)seed, th->t, st.error, xdev_strerror(st.error), src);
    } else if (th->wild_failed[src]) {
        FAILF("seed %llu thread %d: a wildcard receive got a message from %d after its stream "
              "was cut", (unsigned long long)seed, th->t, src);
    } else if (th->wild_expect[src] >= nwild) {
        FAILF("seed %llu thread %d: more than %d wildcard messages from %d",
              (unsigned long long)seed, th->t, nwild, src);
    } else {
        check_message(th, "wildcard", src, th->wild_ctx, th->wild_expect[src]++, &st, p->buf);
    }
}

static bool finished(struct thread *th)
{
    for (int slot = 0; slot < INFLIGHT; slot++)
        if (th->sbusy[slot])
            return false;
    for (int r = 0; r < size; r++) {
        if (r == rank)
            continue;
        if (sends_left(th, r))
            return false;
        /* A sender that died after its named stream was all here may
         * never complete its wild one; a sentinel receive (main) makes
         * sure its death is noticed. */
        bool dead = th->named_failed[r] || th->wild_failed[r] || th->send_dead[r] ||
                    xdev_peer_state(dev, r) == XDEV_PEER_DEAD;
        if (!th->named_failed[r] && th->named_expect[r] < nnamed)
            return false;
        if (!dead && th->wild_expect[r] < nwild)
            return false;
    }
    return true;
}

static void *run_thread(void *arg)
{
    struct thread *th = arg;
    for (int slot = 0; slot < INFLIGHT; slot++)
        th->sbuf[slot] = malloc(MAX_LEN);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < POSTED; i++)
            th->named[r][i].buf = malloc(MAX_LEN);
    for (int i = 0; i < POSTED; i++)
        th->wild[i].buf = malloc(MAX_LEN);
    while (!finished(th)) {
        reap_sends(th);
        post_sends(th);
        for (int r = 0; r < size; r++)
            if (r != rank)
                run_named(th, r);
        run_wild(th);
    }
    /* Receives still posted (wildcards for a dead sender) are left to
     * xdev_finalize; main frees the buffers after it. */
    return NULL;
}

static void free_buffers(struct thread *th)
{
    for (int slot = 0; slot < INFLIGHT; slot++)
        free(th->sbuf[slot]);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < POSTED; i++)
            free(th->named[r][i].buf);
    for (int i = 0; i < POSTED; i++)
        free(th->wild[i].buf);
}

/* ---- the victim's executioner ---- */

static pid_t start_monkey(double delay_s)
{
    pid_t parent = getpid(), pid = fork();
    if (pid != 0)
        return pid;
    fault_sleep_ms((int)(delay_s * 1000));
    char when[64];
    if (kill_mode) {
        double t = fault_now();
        kill(parent, SIGKILL);
        snprintf(when, sizeof when, "%.6f\n", t);
        fault_write_out("killed", when);
    } else {
        kill(parent, SIGSTOP);
        fault_sleep_ms(STOP_S * 1000);
        kill(parent, SIGCONT);
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[2], "kill") && strcmp(argv[2], "stop"))) {
        fprintf(stderr, "usage: xdevrun --keep-going -n NP %s SEED kill|stop\n", argv[0]);
        return 2;
    }
    seed = strtoull(argv[1], NULL, 10);
    kill_mode = !strcmp(argv[2], "kill");
    const char *r = getenv("XDEV_RANK"), *s = getenv("XDEV_SIZE"), *pt = getenv("XDEV_PEER_TIMEOUT_MS");
    rank = r ? atoi(r) : 0;
    size = s ? atoi(s) : 1;
    fault_setup("fault-random-kill", 100);
    if (size < 3 || size > MAX_RANKS) {
        fprintf(stderr, "needs 3 to %d ranks\n", MAX_RANKS);
        return 2;
    }
    uint64_t g = fault_mix(seed);
    victim = (int)(g % (uint64_t)size);
    nthreads = 1 + (int)((g >> 8) & 1);
    nnamed = 60 + (int)((g >> 16) % 120);
    nwild = nnamed / 3;
    double delay = (g >> 56) % 4 == 0 ? (double)((g >> 32) % 20) / 1000.0
                                      : 0.1 + (double)((g >> 32) % 800) / 1000.0;
    if (rank == 0) {
        printf("seed %llu mode %s: %d ranks, victim %d at %.3f s, %d threads, %d named + %d wild "
               "messages per stream\n", (unsigned long long)seed, argv[2], size, victim, delay,
               nthreads, nnamed, nwild);
        char v[16];
        snprintf(v, sizeof v, "%d\n", victim);
        fault_write_out("victim", v);
    }
    pid_t monkey = rank == victim ? start_monkey(delay) : 0;

    fault_step("xdev_init");
    REQUIRE_RC(xdev_init(NULL, &dev), XDEV_OK);
    fault_set_rank(rank);

    /* One receive per peer that nothing matches: it watches the peer, so a
     * death is noticed even once its streams are all here. */
    enum { SENTINEL_CTX = 900 };
    static xdev_request_t sentinel[MAX_RANKS];
    t_watch = fault_now();
    for (int p = 0; p < size; p++)
        if (p != rank)
            REQUIRE_RC(xdev_irecv(dev, NULL, 0, p, 0, SENTINEL_CTX, &sentinel[p]), XDEV_OK);

    static struct thread th[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    fault_step("traffic");
    for (int t = 0; t < nthreads; t++) {
        th[t].t = t;
        th[t].named_ctx = 10 + 2 * t;
        th[t].wild_ctx = 11 + 2 * t;
        REQUIRE(pthread_create(&tid[t], NULL, run_thread, &th[t]) == 0, "pthread_create");
    }
    for (int t = 0; t < nthreads; t++)
        pthread_join(tid[t], NULL);

    if (rank == victim && kill_mode) {
        /* Done early: keep the peers' goodbyes answered until the kill. */
        fault_step("victim waiting to be killed");
        for (;;) {
            int found;
            xdev_status_t st;
            xdev_iprobe(dev, XDEV_ANY_SOURCE, 0, 999, &found, &st);
        }
    }
    /* Before the barrier: no live rank can have left (finalized) yet,
     * which would fail what names it, sentinels included. */
    for (int p = 0; p < size; p++) {
        int done = 0;
        xdev_status_t st;
        if (p == rank || xdev_test(&sentinel[p], &done, &st) != XDEV_OK || !done)
            continue; /* still posted: finalize abandons it */
        if (!(st.error == XDEV_ERR_PEER && may_fail(p)))
            FAILF("seed %llu: the sentinel receive from %d completed with %d (%s)",
                  (unsigned long long)seed, p, st.error, xdev_strerror(st.error));
    }
    fault_step("barrier of the survivors");
    CHECK_RC(fault_barrier_skip(dev, kill_mode ? victim : -1), XDEV_OK);
    if (kill_mode && failures_seen) {
        /* A peer's timeout runs from when a request first wants it: after
         * the kill, or, for a victim killed before this rank's xdev_init
         * returned, from the sentinels. */
        double t_kill = fault_read_time("killed"), bound = (pt ? atoi(pt) : 20000) / 1000.0 + 2.0;
        double from = t_kill > t_watch ? t_kill : t_watch;
        CHECK(t_kill > 0, "seed %llu: no kill time in $XDEV_TEST_OUT/killed", (unsigned long long)seed);
        CHECK(last_failure - from <= bound, "seed %llu: the last failure came %.3f s after the kill "
              "and %.3f s after the sentinels were posted (bound %.1f s after the later)",
              (unsigned long long)seed, last_failure - t_kill, last_failure - t_watch, bound);
    }
    if (!kill_mode)
        CHECK(failures_seen == 0, "seed %llu: %llu requests failed in stop mode",
              (unsigned long long)seed, (unsigned long long)failures_seen);
    fault_log("seed %llu: %llu messages, %llu bytes received whole; %llu failures seen",
              (unsigned long long)seed, (unsigned long long)msgs_in, (unsigned long long)bytes_in,
              (unsigned long long)failures_seen);

    fault_step("xdev_finalize");
    int rc = xdev_finalize(dev);
    CHECK(rc == XDEV_OK || rc == XDEV_ERR_CANCELED, "seed %llu: xdev_finalize returned %d (%s)",
          (unsigned long long)seed, rc, xdev_strerror(rc));
    for (int t = 0; t < nthreads; t++)
        free_buffers(&th[t]);
    if (monkey > 0)
        waitpid(monkey, NULL, 0);
    rc = fault_finish();
    if (rc == 0 && fault_write_result(rank, "ok") != 0)
        rc = 1;
    return rc;
}
