/*
 * shm_middle_threads.c - two threads per rank ping-pong 8-32 KiB messages
 * on tags of their own while shm's choice of ring or single copy for
 * those sizes (shm_middle.c) changes under them: the core's threshold is
 * written under the device lock and read without it by xdev_send's short
 * tier. Every byte arrives, some go by rendezvous (the tries, at least),
 * and under TSan (whose selection takes this test by its name) no race
 * is reported. Skipped (77) where the single copy is not allowed (Yama)
 * or the two ranks cannot run at once (one CPU).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xdev.h"
#include "../check.h"
#include "single_copy.h"

#define CTX 13
#define THREADS 2
#define ROUNDS 1500
#define MAXLEN (32u << 10)

static xdev_t *dev;
static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned char pattern(size_t i, int from, int tag, int round)
{
    return (unsigned char)(i * 3 + (size_t)from * 41 + (size_t)tag * 17 + (size_t)round + 9);
}

static size_t size_of(int round)
{
    return (8u << 10) + (size_t)round * 97 % (MAXLEN - (8u << 10));
}

static int exchange(int tag, int round, unsigned char *out, unsigned char *in)
{
    int me = xdev_rank(dev), peer = 1 - me;
    size_t len = size_of(round);
    xdev_status_t st = { 0 };
    for (size_t i = 0; i < len; i++) out[i] = pattern(i, me, tag, round);
    int rc = me == 0 ? xdev_send(dev, out, len, peer, tag, CTX) : xdev_recv(dev, in, len, peer, tag, CTX, &st);
    if (rc == XDEV_OK)
        rc = me == 0 ? xdev_recv(dev, in, len, peer, tag, CTX, &st) : xdev_send(dev, out, len, peer, tag, CTX);
    if (rc != XDEV_OK || st.error != XDEV_OK || st.count != len)
        return -1;
    size_t i = 0;
    while (i < len && in[i] == pattern(i, peer, tag, round)) i++;
    return i == len ? 0 : (int)i + 1;
}

static void *thread_main(void *arg)
{
    int tag = (int)(long)arg;
    unsigned char *out = malloc(MAXLEN), *in = malloc(MAXLEN);
    for (int round = 0; out && in && round < ROUNDS; round++) {
        int bad = exchange(tag, round, out, in);
        if (bad) {
            pthread_mutex_lock(&check_lock);
            CHECK(0, "tag %d, round %d (%zu bytes): %s %d", tag, round, size_of(round),
                  bad < 0 ? "failed" : "wrong byte", bad - 1);
            pthread_mutex_unlock(&check_lock);
            break;
        }
    }
    free(out);
    free(in);
    return NULL;
}

int main(void)
{
    if (!single_copy_allowed() || sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        printf("shm_middle_threads: skipped: no single copy, or one CPU\n");
        return 77;
    }
    int rc = xdev_init(NULL, &dev);
    if (rc != XDEV_OK) {
        fprintf(stderr, "shm_middle_threads: xdev_init: %s\n", xdev_strerror(rc));
        return 1;
    }
    if (xdev_size(dev) != 2) {
        CHECK(0, "run with 2 ranks");
    } else {
        pthread_t t[THREADS];
        for (long i = 0; i < THREADS; i++)
            CHECK(pthread_create(&t[i], NULL, thread_main, (void *)(i + 1)) == 0, "thread %ld", i);
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
        xdev_stats_t s;
        CHECK(xdev_stats(dev, &s) == XDEV_OK && s.rendezvous_sent > 0,
              "%d messages of 8-32 KiB: none sent by rendezvous", THREADS * ROUNDS);
    }
    CHECK(xdev_finalize(dev) == XDEV_OK, "finalize");
    if (!failures) printf("shm_middle_threads: rank ok\n");
    return failures ? 1 : 0;
}
