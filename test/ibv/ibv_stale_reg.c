/*
 * ibv_stale_reg.c - a registration cache must not outlive the memory it
 * registered. Two ranks; rank 0 sends rendezvous-sized messages to rank 1,
 * and both sides free their buffer after each message and get one at the
 * same address again (munmap + mmap there; free + malloc of a large
 * block), filled anew. A cache that kept the first registration would
 * move the old pages: rank 1 would see the first message's bytes again
 * (a stale source) or its own fill (the data written into memory that
 * is no longer its buffer).
 *
 * Run under xdevrun -n 2 with --transport ibv, once per XDEV_IBV_RNDZ
 * (write: the receiver's buffer is exposed, the sender's registered
 * locally; read: the other way round).
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "xdev.h"

#define LEN (4u << 20)
#define ROUNDS 4

static int fail(const char *what)
{
    fprintf(stderr, "stale-reg: FAIL: %s\n", what);
    return 1;
}

static uint8_t pattern(int round, size_t i)
{
    return (uint8_t)(round * 37 + (i * 131) % 251 + 1);
}

/* A buffer at `want` (NULL: anywhere) from mmap or malloc. */
static char *get_buf(int use_malloc, char *want)
{
    if (!use_malloc) {
        char *p = mmap(want, LEN, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | (want ? MAP_FIXED_NOREPLACE : 0), -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    /* glibc gives the block back by munmap and, asked again for the same
     * size, maps it at the same place; try a few times if it does not. */
    for (int i = 0; i < 8; i++) {
        char *p = malloc(LEN);
        if (!want || p == want)
            return p;
        free(p);
    }
    return NULL;
}

static void put_buf(int use_malloc, char *p)
{
    if (use_malloc)
        free(p);
    else
        munmap(p, LEN);
}

int main(void)
{
    xdev_t *dev;
    if (xdev_init(NULL, &dev) != XDEV_OK)
        return fail("init");
    int rank = xdev_rank(dev);
    if (xdev_size(dev) != 2)
        return fail("needs 2 ranks");
    mallopt(M_MMAP_THRESHOLD, 1 << 20); /* large blocks always by mmap */
    int bad = 0;
    for (int use_malloc = 0; use_malloc < 2 && !bad; use_malloc++) {
        char *first = NULL;
        for (int round = 0; round < ROUNDS && !bad; round++) {
            char *b = get_buf(use_malloc, first);
            if (!b) {
                bad = fail("no buffer at the address just freed");
                break;
            }
            if (!first)
                first = b;
            int tag = use_malloc * ROUNDS + round;
            xdev_status_t st;
            if (rank == 0) {
                for (size_t i = 0; i < LEN; i++)
                    b[i] = (char)pattern(round, i);
                if (xdev_send(dev, b, LEN, 1, tag, 0) != XDEV_OK)
                    bad = fail("send");
            } else {
                memset(b, 0xee, LEN);
                if (xdev_recv(dev, b, LEN, 0, tag, 0, &st) != XDEV_OK || st.error != XDEV_OK ||
                    st.count != LEN)
                    bad = fail("recv");
                for (size_t i = 0; i < LEN && !bad; i++) {
                    if ((uint8_t)b[i] != pattern(round, i)) {
                        fprintf(stderr, "stale-reg: %s round %d: byte %zu is %#x, want %#x%s\n",
                                use_malloc ? "malloc" : "mmap", round, i, (uint8_t)b[i],
                                pattern(round, i),
                                (uint8_t)b[i] == 0xee ? " (never written: written elsewhere)"
                                : round && (uint8_t)b[i] == pattern(round - 1, i)
                                    ? " (the previous message: stale source)" : "");
                        bad = 1;
                    }
                }
            }
            /* Both sides done with this round before buffers change. */
            char ack = 0;
            if (!bad && rank == 1)
                bad = xdev_send(dev, &ack, 1, 0, 1000 + tag, 0) != XDEV_OK;
            if (!bad && rank == 0)
                bad = xdev_recv(dev, &ack, 1, 1, 1000 + tag, 0, &st) != XDEV_OK;
            put_buf(use_malloc, b);
        }
        if (!bad && rank == 1)
            printf("stale-reg: %s: %d rounds at one address, all fresh\n",
                   use_malloc ? "malloc" : "mmap", ROUNDS);
    }
    xdev_finalize(dev);
    return bad;
}
