/* soak_msg.c - the messages of the soak; see soak_msg.h. */
#include "soak_msg.h"

#include <stdlib.h>
#include <string.h>

#include "soak.h"

uint64_t soak_rand(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return fault_mix(*state);
}

uint64_t soak_key(int src, int dst, int kind, int t, int k)
{
    return fault_mix(soak.seed ^ fault_mix(((uint64_t)src << 48) ^ ((uint64_t)dst << 40) ^
                                           ((uint64_t)kind << 36) ^ ((uint64_t)t << 32) ^ (uint64_t)k));
}

/* The limits the run crosses: eager (64 KiB by default) and shm's single
 * copy (256 KiB as the driver sets it), each from both sides. */
static const size_t edges[] = {0, 1, (64 << 10) - 1, 64 << 10, (64 << 10) + 1,
                               (256 << 10) - 1, 256 << 10, (256 << 10) + 1,
                               SOAK_WILD_MAX_LEN, SOAK_MAX_LEN};

/* Mostly small and eager; one in six rendezvous; one in a hundred from
 * 2 to 16 MiB. */
size_t soak_len(int kind, uint64_t key)
{
    unsigned c = (unsigned)(key % 1000);
    uint64_t r = key >> 10;
    size_t len;
    if (c < 40)
        len = edges[r % (sizeof edges / sizeof edges[0])];
    else if (c < 500)
        len = r % 513;
    else if (c < 830)
        len = 513 + r % ((64 << 10) - 512);
    else if (c < 930)
        len = (64 << 10) + 1 + r % (192 << 10);
    else if (c < 990)
        len = (256 << 10) + r % (1792 << 10);
    else
        len = ((size_t)2 << 20) + r % (SOAK_MAX_LEN - ((size_t)2 << 20) + 1);
    if (kind == K_WILD && len > SOAK_WILD_MAX_LEN)
        len = (256 << 10) + r % (SOAK_WILD_MAX_LEN - (256 << 10) + 1);
    return len;
}

/* One in eight of each blocking or synchronous kind. */
enum soak_mode soak_mode(uint64_t key)
{
    switch ((key >> 56) & 7) {
    case 0: return M_SSEND;
    case 1: return M_ISSEND;
    case 2: return M_SEND;
    default: return M_ISEND;
    }
}

/* K_NAMED and K_WILD streams of different sender threads are apart (a
 * receiver posted ahead knows what each receive gets); K_PROBE and
 * K_MPROBE share one context, where the tag tells them apart. */
int soak_ctx(int kind, int t)
{
    switch (kind) {
    case K_NAMED: return 100 + t;
    case K_WILD: return 110 + t;
    case K_PROBE: return 120;
    default: return 130;
    }
}

int soak_tag(int t, int k) { return t << 24 | k; }
int soak_tag_thread(int tag) { return tag >> 24; }
int soak_tag_seq(int tag) { return tag & 0xffffff; }

unsigned char *soak_rbuf(size_t cap)
{
    unsigned char *b = malloc(cap + SOAK_GUARD);
    if (!b) {
        SOAK_FAIL("out of memory for a %zu-byte receive buffer", cap);
        fault_abort();
    }
    memset(b, SOAK_GUARD_BYTE, cap + SOAK_GUARD);
    return b;
}

size_t soak_untouched(const unsigned char *buf, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (buf[i] != SOAK_GUARD_BYTE)
            return i;
    return (size_t)-1;
}
