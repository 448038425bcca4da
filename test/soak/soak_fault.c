/* soak_fault.c - faults of the faulty mode; see soak_fault.h. */
#include "soak_fault.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "soak.h"

#define BARRIER_CTX 0x7fff0002

struct fault {
    double stop_at, cont_at, kill_at; /* seconds from start; < 0: none */
};

static struct fault plan[SOAK_MAX_RANKS];
static pid_t monkey;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* The last failure, per victim, of a request that had been outstanding
 * for longer than the bound when it failed. One that failed sooner after
 * it was posted is on time however late it was posted: a thread that
 * had not heard of the death yet posts to the victim, and fails at once,
 * seconds later in a slow (sanitized, oversubscribed) run. */
static double last_slow_failure[SOAK_MAX_RANKS];

static double failure_bound(void)
{
    return soak.peer_timeout_s + soak.slack_s;
}

static double seconds(uint64_t r, double from, double to)
{
    return from + (to - from) * (double)(r % 10000) / 10000.0;
}

/* A rank the plan has not touched yet; -1 if there is none. */
static int untouched(uint64_t *rng)
{
    int start = (int)(soak_rand(rng) % (uint64_t)soak.size);
    for (int i = 0; i < soak.size; i++) {
        int r = (start + i) % soak.size;
        if (plan[r].stop_at < 0 && plan[r].kill_at < 0)
            return r;
    }
    return -1;
}

void soak_fault_plan(void)
{
    for (int r = 0; r < SOAK_MAX_RANKS; r++)
        plan[r] = (struct fault){ -1, -1, -1 };
    if (!soak.faulty)
        return;
    uint64_t rng = soak.seed ^ 0xfa17u;
    int nkill = soak.size >= 6 ? 1 + (int)(soak_rand(&rng) % 2) : 1;
    int nstop = soak.size - nkill >= 3 ? 1 + (int)(soak_rand(&rng) % 2) : 1;
    char list[256] = "", text[512];
    for (int i = 0; i < nkill; i++) {
        int v = untouched(&rng);
        struct fault *f = &plan[v];
        f->kill_at = seconds(soak_rand(&rng), 0.1, 1.2);
        if (soak_rand(&rng) % 4 == 0)
            f->stop_at = f->kill_at - seconds(soak_rand(&rng), 0.1, 0.25);
        soak.victims |= 1u << v;
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? " " : "", v);
    }
    for (int i = 0; i < nstop && soak.size - nkill - i > 1; i++) {
        struct fault *f = &plan[untouched(&rng)];
        f->stop_at = seconds(soak_rand(&rng), 0.1, 1.5);
        f->cont_at = f->stop_at + seconds(soak_rand(&rng), 0.2, 1.0);
    }
    if (soak.rank != 0)
        return;
    snprintf(text, sizeof text, "%s\n", list);
    fault_write_out("victims", text);
    for (int r = 0; r < soak.size; r++) {
        if (plan[r].kill_at >= 0)
            printf("[soak] seed %llu: rank %d %s killed at %.2f s\n", (unsigned long long)soak.seed,
                   r, plan[r].stop_at >= 0 ? "stopped then" : "", plan[r].kill_at);
        else if (plan[r].stop_at >= 0)
            printf("[soak] seed %llu: rank %d stopped %.2f-%.2f s\n", (unsigned long long)soak.seed,
                   r, plan[r].stop_at, plan[r].cont_at);
    }
}

static void sleep_until(double start, double at)
{
    double left = start + at - fault_now();
    if (left > 0)
        fault_sleep_ms((int)(left * 1000));
}

void soak_fault_start(void)
{
    const struct fault *f = &plan[soak.rank];
    if (f->stop_at < 0 && f->kill_at < 0)
        return;
    pid_t parent = getpid();
    double start = fault_now();
    if ((monkey = fork()) != 0)
        return;
    if (f->stop_at >= 0) {
        sleep_until(start, f->stop_at);
        kill(parent, SIGSTOP);
    }
    if (f->kill_at >= 0) {
        char when[64], name[64];
        sleep_until(start, f->kill_at);
        double t = fault_now();
        kill(parent, SIGKILL);
        snprintf(when, sizeof when, "%.6f\n", t);
        snprintf(name, sizeof name, "killed.%d", soak.rank);
        fault_write_out(name, when);
    } else {
        sleep_until(start, f->cont_at);
        kill(parent, SIGCONT);
    }
    _exit(0);
}

void soak_fault_end(void)
{
    if (monkey > 0)
        waitpid(monkey, NULL, 0);
}

bool soak_peer_failed(int peer, int err, const char *what, double since)
{
    if (err == XDEV_ERR_PEER && soak_is_victim(peer)) {
        double now = fault_now();
        if (now - since > failure_bound()) {
            pthread_mutex_lock(&lock);
            if (now > last_slow_failure[peer])
                last_slow_failure[peer] = now;
            pthread_mutex_unlock(&lock);
        }
        atomic_fetch_add(&soak_count.peer_errors, 1);
        return true;
    }
    SOAK_FAIL("seed %llu: %s involving rank %d failed with %d (%s)%s",
              (unsigned long long)soak.seed, what, peer, err, xdev_strerror(err),
              err == XDEV_ERR_PEER ? ", a rank that is not killed" : "");
    return false;
}

bool soak_gone(int peer, int ctx)
{
    if (!soak_is_victim(peer) || xdev_peer_state(soak.dev, peer) != XDEV_PEER_DEAD)
        return false;
    int found = 1;
    xdev_status_t st;
    return xdev_iprobe(soak.dev, peer, XDEV_ANY_TAG, ctx, &found, &st) == XDEV_OK && !found;
}

bool soak_streams_closed(int kind, int ctx)
{
    for (int src = 0; src < soak.size; src++)
        for (int t = 0; t < soak.nthreads; t++)
            if (!atomic_load(&soak_cut[kind][src][t]) &&
                atomic_load(&soak_got[kind][src][t]) < soak.nmsgs[kind] && !soak_gone(src, ctx))
                return false;
    return true;
}

static double kill_time(int v)
{
    char name[32];
    snprintf(name, sizeof name, "killed.%d", v);
    return fault_read_time(name);
}

void soak_fault_check_times(void)
{
    double bound = failure_bound();
    for (int v = 0; v < soak.size; v++) {
        if (!soak_is_victim(v) || last_slow_failure[v] == 0)
            continue;
        double t = kill_time(v);
        CHECK(t > 0, "seed %llu: no kill time for rank %d", (unsigned long long)soak.seed, v);
        CHECK(last_slow_failure[v] - t <= bound, "seed %llu: rank %d's death failed a request "
              "%.3f s after it (bound %.2f s)", (unsigned long long)soak.seed, v,
              last_slow_failure[v] - t, bound);
    }
}

int soak_survivors_barrier(void)
{
    int root = 0, rc;
    while (soak_is_victim(root))
        root++;
    char token = 'b';
    for (int pass = 0; pass < 2; pass++) {
        if (soak.rank != root) {
            rc = pass == 0 ? xdev_send(soak.dev, &token, 1, root, 0, BARRIER_CTX)
                           : xdev_recv(soak.dev, &token, 1, root, 0, BARRIER_CTX, NULL);
            if (rc != XDEV_OK)
                return rc;
            continue;
        }
        for (int r = 0; r < soak.size; r++) {
            if (r == root || soak_is_victim(r))
                continue;
            rc = pass == 0 ? xdev_recv(soak.dev, &token, 1, r, 0, BARRIER_CTX, NULL)
                           : xdev_send(soak.dev, &token, 1, r, 0, BARRIER_CTX);
            if (rc != XDEV_OK)
                return rc;
        }
    }
    return XDEV_OK;
}
