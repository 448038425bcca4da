/*
 * p2p.c - the point-to-point layer of every collective: a batch of
 * nonblocking requests per call on the group's context, waited for together
 * while watching for failure notices, and the failure path that spreads a
 * notice to the other members (see "Failures" in xdev_coll.h).
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "coll.h"
#include "../kit/le.h"

#define WATCH_EVERY 16 /* idle polls between looks at the failure notice */
#define CLOCK_EVERY 16 /* idle polls between clock reads, until it backs off */

/* g->expect[].bytes values that are not a receive's byte count. */
#define SEND_MARK SIZE_MAX
#define REAPED (SIZE_MAX - 1)

/* Storage of requests abandoned by failed collectives: xdev may still write
 * their status until the device is finalized, so it is never freed. It
 * stays reachable from here, which also tells leak checkers it is kept. */
static pthread_mutex_t grave_lock = PTHREAD_MUTEX_INITIALIZER;
static struct grave {
    struct grave *next;
    void *block;
} *graveyard;

void coll_bury(void *block)
{
    struct grave *gr = malloc(sizeof *gr);
    pthread_mutex_lock(&grave_lock);
    if (gr) {
        gr->block = block;
        gr->next = graveyard;
        graveyard = gr;
    } /* else: lost for good, which is what burying means anyway */
    pthread_mutex_unlock(&grave_lock);
}

const char xdev_coll_request_mark;

/* Call a comes after call b (the count may wrap). */
static bool after(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) > 0;
}

int coll_post_watch(xdev_coll_group_t *g)
{
    g->watch.user = XDEV_COLL_REQUEST;
    int rc = xdev_irecv(g->dev, g->notice, sizeof g->notice, XDEV_ANY_SOURCE,
                        XDEV_COLL_NOTICE_TAG, g->ctx, &g->watch);
    g->watch_done = rc != XDEV_OK;
    return rc;
}

static int watch_fired(xdev_coll_group_t *g)
{
    if (g->watch_done) return 0;
    int done = 0;
    xdev_status_t st;
    if (xdev_test(&g->watch, &done, &st) != XDEV_OK || !done) return 0;
    /* XDEV_FLAG_WILDCARD_FAILS: some rank died or finalized, which is no
     * notice; the collectives' own receives name their sources and fail
     * by themselves where that rank mattered. */
    if (st.error == XDEV_ERR_PEER_PENDING && coll_post_watch(g) == XDEV_OK) return 0;
    /* A notice of a call this member has not begun: its sender finished
     * the running one, so owes nothing there, and failing it would leave
     * the members disagreeing on which call failed. The named call fails
     * as it begins (coll_begin); the watch goes on for notices of this one. */
    if (st.error == XDEV_OK && st.count == sizeof g->notice) {
        uint32_t call = xdev_get_le32(g->notice);
        if (after(call, g->calls)) {
            if (!g->failed_ahead || after(g->failed_call, call)) g->failed_call = call;
            g->failed_ahead = 1;
            if (coll_post_watch(g) == XDEV_OK) return 0;
        }
    }
    g->watch_done = 1;
    return 1;
}

int coll_mismatch(xdev_coll_group_t *g)
{
    int rc = coll_begin(g);
    return rc ? rc : coll_end(g, XDEV_ERR_TRUNCATE);
}

/* The notice is looked at once a call has posted its requests, in its
 * first wait: a look before would run progress while they are not posted,
 * and the call's messages already there would be taken as unexpected
 * (with shm's reader stopping after a message a receive took, 2-rank
 * 8-byte bcast per call 0.39 us against 0.50). */
int coll_begin(xdev_coll_group_t *g)
{
    if (g->broken) return g->broken;
    g->calls++;
    /* A member failed this call: it will not take its part (and has told
     * everyone, so this member tells nobody). */
    if (g->failed_ahead && !after(g->failed_call, g->calls)) return g->broken = XDEV_ERR_PEER;
    g->nreq = 0;
    g->watch_due = 1;
    return XDEV_OK;
}

/* Tell every other member this collective failed here, so that nobody
 * waits for a message this rank will never send. */
static void send_notices(xdev_coll_group_t *g)
{
    /* the requests, then the number they send */
    xdev_request_t *reqs = calloc(1, (size_t)g->size * sizeof *reqs + sizeof g->notice);
    if (!reqs) return;
    unsigned char *call = (unsigned char *)(reqs + g->size);
    xdev_put_le32(call, g->calls);
    for (int i = 0; i < g->size; i++)
        if (i != g->rank) {
            reqs[i].user = XDEV_COLL_REQUEST;
            xdev_isend(g->dev, call, sizeof g->notice, g->ranks[i], XDEV_COLL_NOTICE_TAG, g->ctx,
                       &reqs[i]);
        }
    /* Sends to dead or unreachable members may take the peer timeout to
     * fail; nobody waits for them. */
    coll_bury(reqs);
}

int coll_end(xdev_coll_group_t *g, int rc)
{
    if (rc == XDEV_OK) return rc;
    /* A notice received means its sender has told every member already
     * (and a group of one has nobody to tell). */
    int noticed = g->watch_done;
    g->broken = rc;
    if (g->nreq > 0) {
        /* Requests still posted belong to xdev: hand the array over. */
        coll_bury(g->reqs);
        g->reqs = calloc((size_t)g->cap, sizeof *g->reqs);
        if (!g->reqs) g->cap = 0;
        g->nreq = 0;
    }
    if (!noticed) send_notices(g);
    return rc;
}

static int post(xdev_coll_group_t *g, int is_send, void *buf, size_t len, int peer, int phase,
                int want_tag)
{
    if (g->nreq >= g->cap) return XDEV_ERR_NOMEM; /* the group lost its array */
    xdev_request_t *r = &g->reqs[g->nreq];
    r->user = XDEV_COLL_REQUEST;
    /* The tag is the phase alone, the same in every call: messages between
     * two ranks on one tag and context never overtake each other, and every
     * message a collective sends is received in that same collective, so
     * successive collectives match in order. A tag per call would make the
     * match tables create and sweep out keys for every call instead. */
    int rc = is_send ? xdev_isend(g->dev, buf, len, g->ranks[peer], phase, g->ctx, r)
                     : xdev_irecv(g->dev, buf, len, g->ranks[peer], phase, g->ctx, r);
    if (rc) return rc;
    g->expect[g->nreq++] = (struct coll_expect){ is_send ? SEND_MARK : len, want_tag };
    return XDEV_OK;
}

int coll_isend(xdev_coll_group_t *g, const void *buf, size_t len, int peer, int phase)
{
    return post(g, 1, (void *)buf, len, peer, phase, -1);
}

int coll_irecv(xdev_coll_group_t *g, void *buf, size_t len, int peer, int phase)
{
    return post(g, 0, buf, len, peer, phase, -1);
}

int coll_irecv_tagged(xdev_coll_group_t *g, void *buf, size_t len, int peer, int tag)
{
    return post(g, 0, buf, len, peer, XDEV_ANY_TAG, tag);
}

/* What a completed receive's status says of the collective. */
static int received(const struct coll_expect *e, const xdev_status_t *st)
{
    /* a notice (longer than a short block: no truncation to report) */
    if (e->tag >= 0 && st->tag == XDEV_COLL_NOTICE_TAG) return XDEV_ERR_PEER;
    if (st->error) return st->error;
    if (e->tag >= 0 && st->tag != e->tag) return XDEV_ERR_TRUNCATE; /* a member out of step */
    return st->count == e->bytes ? XDEV_OK : XDEV_ERR_TRUNCATE;
}

/* Requests are tested in place (an active request must not move); a reaped
 * one is marked, and the batch shrinks from its end. */
static long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* The kernel's timer slack (50 us by default) stretches a nap; shorter
 * ones would only cost more wake-ups. */
#define NAP_NS 20000

static void nap(void)
{
    nanosleep(&(struct timespec){.tv_nsec = NAP_NS}, NULL);
}

/* Wait for the call's requests. from_all: this member waits on every
 * other one (an exchange; the linear barrier). When ranks outnumber
 * cores (no spin), whichever member the scheduler runs instead then has
 * work for us, so an idle member yields at once: 8 ranks on 2 cores,
 * 8-byte alltoall, allgather and allreduce back to back took 0.90-0.92 of
 * the time. Below a root a yield hands the core to a sibling as likely
 * as to the root, and there yielding at once made 8-byte gather, scatter
 * and reduce at 8 ranks 1.1-3.6 times slower back to back, so there the
 * first yield waits for the second clock read, 2 * CLOCK_EVERY idle polls
 * in. */
static int waitall(xdev_coll_group_t *g, bool from_all)
{
    bool yield_at_once = from_all && g->cfg.spin_ns == 0;
    int spins = 0;
    long idle_since = 0;
    bool backing_off = yield_at_once;
    int first_error = XDEV_OK;
    if (g->watch_due) {
        g->watch_due = 0;
        if (watch_fired(g)) return g->broken = XDEV_ERR_PEER;
    }
    while (g->nreq > 0) {
        int progressed = 0;
        for (int i = 0; i < g->nreq; i++) {
            if (g->expect[i].bytes == REAPED) continue;
            int done = 0;
            xdev_status_t st;
            int rc = xdev_test(&g->reqs[i], &done, &st);
            if (rc) return rc;
            if (!done) continue;
            progressed = 1;
            if (!first_error)
                first_error = g->expect[i].bytes == SEND_MARK ? st.error
                                                              : received(&g->expect[i], &st);
            g->expect[i].bytes = REAPED;
        }
        while (g->nreq > 0 && g->expect[g->nreq - 1].bytes == REAPED) g->nreq--;
        if (first_error) return first_error;
        if (g->nreq == 0) break;
        /* The watch is only for failures: look at it when idle a while. */
        if (spins % WATCH_EVERY == WATCH_EVERY - 1 && watch_fired(g))
            return g->broken = XDEV_ERR_PEER;
        /* Busy-poll for cfg.spin_ns of idleness, then yield each poll:
         * ranks may outnumber cores, and the one we wait for may need ours;
         * after cfg.yield_ns more, nap instead (see config.c). While
         * busy-polling the clock is read every CLOCK_EVERY polls only: a
         * poll of idle rings costs a few ns, the clock about twenty. */
        if (progressed) {
            spins = 0;
            idle_since = 0;
            backing_off = yield_at_once;
        } else if (++spins > 1 && (backing_off || spins % CLOCK_EVERY == 0)) {
            long t = now_ns();
            if (!idle_since) idle_since = t;
            else if (t - idle_since >= g->cfg.spin_ns + g->cfg.yield_ns) nap();
            else if (t - idle_since >= g->cfg.spin_ns) {
                backing_off = true;
                sched_yield();
            }
        }
    }
    return XDEV_OK;
}

int coll_waitall(xdev_coll_group_t *g)
{
    return waitall(g, false);
}

int coll_waitall_from_all(xdev_coll_group_t *g)
{
    return waitall(g, true);
}

/* A stream into this process moves only while it polls, and a member's
 * offer waits for its answer: so a gather's root copies its own block in
 * pieces with a progress pass between them, and its members' data moves
 * meanwhile. Against the block copied whole, 1 MiB per call (a barrier
 * between calls), 9 rounds: 2 ranks 169 to 135 us (0.80), 4 ranks 0.88,
 * 8 ranks 0.91 (5 rounds); over tcp, 2 ranks, 3 rounds, 263-284 to
 * 179-193. Back to back, where the members' data is already waiting,
 * 1.03. In scatter, alltoall and the allgather ring it measured even, and
 * is not used. */
#define OWN_COPY_PIECE (64 * 1024)

void coll_copy_polling(xdev_coll_group_t *g, void *dst, const void *src, size_t n)
{
    if (dst == src) return;
    while (n > OWN_COPY_PIECE && g->nreq > 0) {
        memcpy(dst, src, OWN_COPY_PIECE);
        dst = (char *)dst + OWN_COPY_PIECE;
        src = (const char *)src + OWN_COPY_PIECE;
        n -= OWN_COPY_PIECE;
        xdev_progress(g->dev);
    }
    coll_copy(dst, src, n);
}

int coll_sendrecv(xdev_coll_group_t *g, const void *sbuf, size_t slen, int dst, void *rbuf,
                  size_t rlen, int src, int phase)
{
    int rc = coll_irecv(g, rbuf, rlen, src, phase);
    if (!rc) rc = coll_isend(g, sbuf, slen, dst, phase);
    if (!rc) rc = coll_waitall(g);
    return rc;
}

int coll_exchange_all(xdev_coll_group_t *g, const void *sbuf, size_t len, void *rbuf, int phase)
{
    int p = g->size, r = g->rank, rc = XDEV_OK;
    for (int q = 0; q < p && !rc; q++)
        if (q != r) rc = coll_irecv(g, coll_at(rbuf, (size_t)q * len), len, q, phase);
    for (int i = 1; i < p && !rc; i++) /* each to a different member first */
        rc = coll_isend(g, sbuf, len, (r + i) % p, phase);
    return rc ? rc : coll_waitall_from_all(g);
}
