/*
 * stress.c - case "stress": a seeded random run across all ranks.
 *
 * In each of ROUNDS rounds every rank sends 25..75 messages of random size
 * (0 to 1 MiB, mostly small, some right at the eager limit), random tag and
 * random destination; every rank knows the whole plan from the seed. Each
 * receiver takes its messages with a random mix of specific, (source,
 * ANY_TAG) or (ANY_SOURCE, tag), and (ANY_SOURCE, ANY_TAG) receives, posted
 * most specific first so that every posting order can be satisfied, before
 * or after its own sends; then completes them in random order. Each
 * received message is identified by source, tag, count and content: every
 * message is received exactly once with every byte right, and receives
 * posted earlier get earlier messages of a sender (non-overtaking with
 * wildcards). A send's buffer is overwritten as soon as the send completes.
 * A barrier separates rounds.
 *
 * The seed is printed; XDEV_STRESS_SEED=n reruns one.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "harness.h"

enum { CTX_STRESS = 100, ROUNDS = 40, NTAGS = 8 };
enum { KIND_SPECIFIC, KIND_MIDDLE, KIND_ANY };

struct msg {
    int src, dst, tag, k; /* k: index among this round's src -> dst messages */
    size_t len;
    uint64_t seed;
    int claimed;
};

struct rcv {
    int kind, src, tag; /* the receive's envelope; src/tag may be wildcards */
    size_t cap;
    unsigned char *buf;
    xdev_request_t req;
    xdev_status_t st;
    int msg; /* index of the message it was found to hold */
};

static uint64_t gseed;

static size_t random_len(h_rng_t *r)
{
    size_t e = h_eager < 1 * MiB ? h_eager : 1 * MiB;
    unsigned x = (unsigned)h_rand_below(r, 1000);
    if (x < 50)
        return 0;
    if (x < 450)
        return 1 + h_rand_below(r, 64);
    if (x < 750)
        return 65 + h_rand_below(r, 4096 - 64);
    if (x < 900)
        return 4097 + h_rand_below(r, 64 * KiB - 4096);
    if (x < 930)
        return e + h_rand_below(r, 3) - (e ? 1 : 0);
    if (x < 980)
        return 64 * KiB + 1 + h_rand_below(r, 192 * KiB);
    return 256 * KiB + 1 + h_rand_below(r, 768 * KiB + 17);
}

/* The round's plan: every message of every sender, in send order. */
static int plan(int round, struct msg *m, int max)
{
    h_rng_t r = {gseed * 0x9e3779b97f4a7c15ull + (uint64_t)round};
    int n = 0;
    int *count = calloc((size_t)h_size * (size_t)h_size, sizeof(int));
    CHECK(count != NULL, "calloc");
    for (int s = 0; s < h_size; s++) {
        int c = 25 + (int)h_rand_below(&r, 51);
        for (int i = 0; i < c; i++, n++) {
            CHECK(n < max, "plan too big");
            m[n].src = s;
            m[n].dst = (s + 1 + (int)h_rand_below(&r, (uint64_t)h_size - 1)) % h_size;
            m[n].tag = (int)h_rand_below(&r, NTAGS);
            m[n].len = random_len(&r);
            m[n].k = count[s * h_size + m[n].dst]++;
            m[n].seed = gseed ^ ((uint64_t)round << 40) ^ ((uint64_t)m[n].dst << 32) ^
                        (uint64_t)m[n].k;
            m[n].claimed = 0;
        }
    }
    free(count);
    return n;
}

/* Receives for the messages addressed to me, in posting order. */
static int make_recvs(const struct msg *m, int n, struct rcv *rv, h_rng_t *r)
{
    int family = (int)h_rand_below(r, 2), nr = 0;
    /* draw kinds, then order: all specific, then middle, then any */
    int *kind_of = h_malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) {
        unsigned x = (unsigned)h_rand_below(r, 10);
        kind_of[i] = x < 5 ? KIND_SPECIFIC : x < 8 ? KIND_MIDDLE : KIND_ANY;
    }
    for (int kind = KIND_SPECIFIC; kind <= KIND_ANY; kind++) {
        int first = nr;
        for (int i = 0; i < n; i++) {
            if (m[i].dst != h_rank || kind_of[i] != kind)
                continue;
            struct rcv *v = &rv[nr++];
            v->kind = kind;
            v->src = kind == KIND_ANY || (kind == KIND_MIDDLE && family == 1) ? XDEV_ANY_SOURCE
                                                                              : m[i].src;
            v->tag = kind == KIND_ANY || (kind == KIND_MIDDLE && family == 0) ? XDEV_ANY_TAG
                                                                              : m[i].tag;
            v->msg = -1;
        }
        /* shuffle within the kind */
        for (int j = nr - first; j > 1; j--) {
            int x = first + (int)h_rand_below(r, (uint64_t)j);
            struct rcv t = rv[first + j - 1];
            rv[first + j - 1] = rv[x];
            rv[x] = t;
        }
    }
    free(kind_of);
    /* a buffer big enough for any message the envelope could match */
    for (int j = 0; j < nr; j++) {
        size_t cap = 0;
        for (int i = 0; i < n; i++)
            if (m[i].dst == h_rank &&
                (rv[j].src == XDEV_ANY_SOURCE || rv[j].src == m[i].src) &&
                (rv[j].tag == XDEV_ANY_TAG || rv[j].tag == m[i].tag) && m[i].len > cap)
                cap = m[i].len;
        rv[j].cap = cap + h_rand_below(r, 8);
        rv[j].buf = h_malloc(rv[j].cap);
    }
    return nr;
}

static int accepts(const struct rcv *v, int src, int tag)
{
    return (v->src == XDEV_ANY_SOURCE || v->src == src) &&
           (v->tag == XDEV_ANY_TAG || v->tag == tag);
}

/* Which message does receive j hold? The first unclaimed one from that
 * source with that tag and length whose content matches. */
static void identify(struct msg *m, int n, struct rcv *rv, int j, int round)
{
    struct rcv *v = &rv[j];
    const xdev_status_t *st = &v->st;
    char what[160];
    snprintf(what, sizeof what, "round %d receive #%d (src %d, tag %d, %zu-byte buffer)", round, j,
             v->src, v->tag, v->cap);
    CHECK(st->error == XDEV_OK, "%s: status.error %d (%s)", what, st->error,
          xdev_strerror(st->error));
    CHECK(st->ctx == CTX_STRESS, "%s: status.ctx %d", what, st->ctx);
    CHECK(st->source >= 0 && st->source < h_size && st->source != h_rank,
          "%s: status.source %d is not a sender", what, st->source);
    CHECK(accepts(v, st->source, st->tag), "%s: got a message from %d with tag %d, which it "
          "does not match", what, st->source, st->tag);
    int first_candidate = -1;
    for (int i = 0; i < n; i++) {
        if (m[i].dst != h_rank || m[i].claimed || m[i].src != st->source ||
            m[i].tag != st->tag || m[i].len != st->count)
            continue;
        if (first_candidate < 0)
            first_candidate = i;
        if (h_verify(v->buf, st->count, m[i].seed, m[i].src) == H_GOOD) {
            m[i].claimed = 1;
            v->msg = i;
            return;
        }
    }
    if (first_candidate >= 0) /* report the bytes against the likeliest one */
        CHECK_DATA(v->buf, st->count, m[first_candidate].seed, st->source, what);
    CHECK(0, "%s: got %zu bytes from %d with tag %d, but no unreceived message of rank %d has "
          "that tag and length", what, st->count, st->source, st->tag, st->source);
}

/* Receives posted earlier get earlier messages of one sender, whenever the
 * earlier receive could have matched the later one's message. */
static void check_order(const struct msg *m, const struct rcv *rv, int nr, int round)
{
    for (int b = 0; b < nr; b++) {
        const struct msg *mb = &m[rv[b].msg];
        for (int a = 0; a < b; a++) {
            const struct msg *ma = &m[rv[a].msg];
            if (ma->src != mb->src || !accepts(&rv[a], mb->src, mb->tag))
                continue;
            CHECK(ma->k < mb->k, "round %d: receive #%d (src %d, tag %d), posted before receive "
                  "#%d, got message #%d of rank %d but #%d went to the later receive "
                  "(overtaking)", round, a, rv[a].src, rv[a].tag, b, ma->k, mb->src, mb->k);
        }
    }
}

static void round_run(int round, struct msg *m, int maxmsg, struct rcv *rv)
{
    h_phase("stress: seed %" PRIu64 " round %d", gseed, round);
    int n = plan(round, m, maxmsg);
    h_rng_t r = {gseed ^ ((uint64_t)round << 20) ^ ((uint64_t)h_rank << 8) ^ 0xabcdefu};
    int nr = make_recvs(m, n, rv, &r);

    int ns = 0;
    for (int i = 0; i < n; i++)
        ns += m[i].src == h_rank;
    xdev_request_t *sq = h_malloc(sizeof *sq * (size_t)ns);
    unsigned char **sb = h_malloc(sizeof *sb * (size_t)ns);
    size_t *slen = h_malloc(sizeof *slen * (size_t)ns);

    int recv_first = (int)h_rand_below(&r, 2);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == recv_first) {
            for (int j = 0; j < nr; j++)
                CHECK_RC(xdev_irecv(h_dev, rv[j].buf, rv[j].cap, rv[j].src, rv[j].tag,
                                    CTX_STRESS, &rv[j].req));
        } else {
            for (int i = 0, s = 0; i < n; i++) {
                if (m[i].src != h_rank)
                    continue;
                sb[s] = h_malloc(m[i].len);
                slen[s] = m[i].len;
                h_fill(sb[s], m[i].len, m[i].seed, h_rank);
                CHECK_RC(xdev_isend(h_dev, sb[s], m[i].len, m[i].dst, m[i].tag, CTX_STRESS,
                                    &sq[s]));
                s++;
            }
        }
    }

    /* complete everything in a random order, by wait or by passes of test */
    int total = nr + ns, left = total;
    int *order = h_malloc(sizeof(int) * (size_t)total);
    for (int i = 0; i < total; i++)
        order[i] = i;
    h_shuffle(order, (size_t)total, &r);
    while (left > 0) {
        int kept = 0;
        for (int j = 0; j < left; j++) {
            int idx = order[j], done = 0;
            xdev_request_t *q = idx < nr ? &rv[idx].req : &sq[idx - nr];
            xdev_status_t st;
            if (h_rand_below(&r, 4) == 0) {
                CHECK_RC(xdev_wait(q, &st));
                done = 1;
            } else {
                CHECK_RC(xdev_test(q, &done, &st));
            }
            if (!done) {
                order[kept++] = idx;
                continue;
            }
            if (idx < nr)
                rv[idx].st = st;
            else {
                CHECK_SEND_STATUS(&st, slen[idx - nr], "stress send");
                memset(sb[idx - nr], 0xEE, slen[idx - nr]); /* the buffer is ours again */
            }
        }
        left = kept;
    }

    for (int j = 0; j < nr; j++)
        identify(m, n, rv, j, round);
    for (int i = 0; i < n; i++)
        CHECK(m[i].dst != h_rank || m[i].claimed, "round %d: message #%d of rank %d (tag %d, %zu "
              "bytes) was never received", round, m[i].k, m[i].src, m[i].tag, m[i].len);
    check_order(m, rv, nr, round);

    for (int j = 0; j < nr; j++)
        free(rv[j].buf);
    for (int s = 0; s < ns; s++)
        free(sb[s]);
    free(sq), free(sb), free(slen), free(order);
    h_barrier();
}

void case_stress(void)
{
    const char *env = getenv("XDEV_STRESS_SEED");
    if (h_rank == 0) {
        gseed = env && *env ? strtoull(env, NULL, 0)
                            : (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
        printf("stress: seed %" PRIu64 " (rerun with XDEV_STRESS_SEED=%" PRIu64 ")\n", gseed,
               gseed);
        for (int r = 1; r < h_size; r++)
            h_send_u64(r, 3, gseed);
    } else {
        gseed = h_recv_u64(0, 3);
    }
    int maxmsg = h_size * 76;
    struct msg *m = h_malloc(sizeof *m * (size_t)maxmsg);
    struct rcv *rv = h_malloc(sizeof *rv * (size_t)maxmsg);
    for (int round = 0; round < ROUNDS; round++)
        round_run(round, m, maxmsg, rv);
    free(m), free(rv);
}
