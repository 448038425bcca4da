/* soak_send.c - sender threads; see soak_send.h. */
#include "soak_send.h"

#include <stdint.h>
#include <stdlib.h>

#include "soak.h"
#include "soak_msg.h"

#define WINDOW 4

struct slot {
    xdev_request_t req;
    unsigned char *buf;
    size_t len;
    int dst;
    double posted; /* fault_now() */
};

struct sender {
    int t;
    uint64_t rng;
    int next[SOAK_MAX_RANKS][K_COUNT];
    bool dead[SOAK_MAX_RANKS];
    struct slot slot[WINDOW];
    xdev_request_t *busy[WINDOW]; /* &slot[i].req while in flight, else NULL */
};

/* The next stream to send on: a random one that has messages left. */
static bool pick(struct sender *s, int *dst, int *kind)
{
    int n = soak.size * K_COUNT, start = (int)(soak_rand(&s->rng) % (uint64_t)n);
    for (int i = 0; i < n; i++) {
        int c = (start + i) % n, d = c / K_COUNT, kd = c % K_COUNT;
        if (!s->dead[d] && s->next[d][kd] < soak.nmsgs[kd]) {
            *dst = d;
            *kind = kd;
            return true;
        }
    }
    return false;
}

/* A send to dst of len bytes, begun at since, ended with error err. */
static void ended(struct sender *s, int dst, size_t len, int err, double since)
{
    if (err == XDEV_OK) {
        atomic_fetch_add(&soak_count.sent_msgs, 1);
        atomic_fetch_add(&soak_count.sent_bytes, len);
    } else if (!soak_peer_failed(dst, err, "a send", since)) {
        fault_abort();
    } else {
        s->dead[dst] = true;
    }
}

static void reap(struct sender *s, int i, const xdev_status_t *st)
{
    struct slot *sl = &s->slot[i];
    if (st->error == XDEV_OK && (st->count != sl->len || st->source != sl->dst))
        SOAK_FAIL("seed %llu thread %d: a send of %zu bytes to %d completed with count %zu "
                  "source %d", (unsigned long long)soak.seed, s->t, sl->len, sl->dst, st->count,
                  st->source);
    ended(s, sl->dst, sl->len, st->error, sl->posted);
    free(sl->buf);
    s->busy[i] = NULL;
}

/* Wait for at least one send in flight (any == true) or for all. */
static void wait_window(struct sender *s, bool any)
{
    for (;;) {
        int n = 0, idx[WINDOW];
        xdev_status_t st[WINDOW];
        for (int i = 0; i < WINDOW; i++)
            n += s->busy[i] != NULL;
        if (n == 0 || (any && n < WINDOW))
            return;
        int rc = xdev_waitsome(WINDOW, s->busy, &n, idx, st);
        if (soak_woken(rc))
            continue;
        if (rc != XDEV_OK) {
            SOAK_FAIL("seed %llu thread %d: xdev_waitsome on sends returned %d (%s)",
                      (unsigned long long)soak.seed, s->t, rc, xdev_strerror(rc));
            fault_abort();
        }
        for (int j = 0; j < n; j++)
            reap(s, idx[j], &st[j]);
    }
}

/* Post into a free slot; one in sixteen is cancelled at once, which only
 * a send to oneself that no receive has matched may allow: it must then
 * come back XDEV_ERR_CANCELED, unsent, and is posted again. */
static void post(struct sender *s, unsigned char *buf, size_t len, int dst, int tag, int ctx,
                 bool sync)
{
    int i = 0;
    while (s->busy[i])
        i++;
    struct slot *sl = &s->slot[i];
    sl->posted = fault_now();
    for (bool try_cancel = soak_rand(&s->rng) % 16 == 0;; try_cancel = false) {
        int rc = (sync ? xdev_issend : xdev_isend)(soak.dev, buf, len, dst, tag, ctx, &sl->req);
        if (rc != XDEV_OK) {
            ended(s, dst, len, rc, sl->posted);
            free(buf);
            return;
        }
        if (!try_cancel)
            break;
        rc = xdev_cancel(&sl->req);
        if (rc == XDEV_ERR_TOO_LATE) {
            atomic_fetch_add(&soak_count.cancel_late, 1);
            break;
        }
        xdev_status_t st;
        while (soak_woken(rc = xdev_wait(&sl->req, &st)))
            ;
        if (rc != XDEV_OK || st.error != XDEV_ERR_CANCELED || st.count != 0) {
            SOAK_FAIL("seed %llu thread %d: a send of %zu bytes to %d that xdev_cancel "
                      "cancelled: wait %d, error %d, count %zu; want XDEV_OK, XDEV_ERR_CANCELED, "
                      "0", (unsigned long long)soak.seed, s->t, len, dst, rc, st.error, st.count);
            fault_abort();
        }
        atomic_fetch_add(&soak_count.cancelled, 1);
    }
    sl->buf = buf;
    sl->len = len;
    sl->dst = dst;
    s->busy[i] = &sl->req;
}

static void send_one(struct sender *s, int dst, int kind)
{
    int k = s->next[dst][kind]++;
    uint64_t key = soak_key(soak.rank, dst, kind, s->t, k);
    size_t len = soak_len(kind, key);
    unsigned char *buf = malloc(len ? len : 1);
    if (!buf) {
        SOAK_FAIL("out of memory for a %zu-byte send", len);
        fault_abort();
    }
    fault_fill_keyed(buf, len, key);
    int tag = soak_tag(s->t, k), ctx = soak_ctx(kind, s->t);
    enum soak_mode mode = soak_mode(key);
    if (mode == M_SEND || mode == M_SSEND) {
        double since = fault_now();
        int rc;
        while (soak_woken(rc = (mode == M_SSEND ? xdev_ssend : xdev_send)(soak.dev, buf, len, dst,
                                                                           tag, ctx)))
            ;
        ended(s, dst, len, rc, since);
        free(buf);
        return;
    }
    wait_window(s, true);
    post(s, buf, len, dst, tag, ctx, mode == M_ISSEND);
}

void *soak_sender(void *arg)
{
    static struct sender senders[SOAK_MAX_THREADS];
    struct sender *s = &senders[(intptr_t)arg];
    s->t = (int)(intptr_t)arg;
    s->rng = soak.seed ^ ((uint64_t)soak.rank << 32) ^ (uint64_t)s->t;
    int dst, kind;
    while (pick(s, &dst, &kind))
        send_one(s, dst, kind);
    wait_window(s, false);
    return NULL;
}
