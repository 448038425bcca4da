/*
 * auth.c - proof that a connection belongs to the job.
 *
 * Connection handshakes carry a MAC keyed with the job secret, so a
 * stranger can neither join nor learn anything from a listening rank. The
 * MAC is SipHash-2-4 (Aumasson and Bernstein), a keyed hash made for short
 * inputs; the 128-bit key is derived from the secret string at init.
 */
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include "device.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static void sip_round(uint64_t v[4])
{
    v[0] += v[1]; v[1] = ROTL(v[1], 13); v[1] ^= v[0]; v[0] = ROTL(v[0], 32);
    v[2] += v[3]; v[3] = ROTL(v[3], 16); v[3] ^= v[2];
    v[0] += v[3]; v[3] = ROTL(v[3], 21); v[3] ^= v[0];
    v[2] += v[1]; v[1] = ROTL(v[1], 17); v[1] ^= v[2]; v[2] = ROTL(v[2], 32);
}

static uint64_t siphash24(const uint64_t k[2], const void *msg, size_t len)
{
    const uint8_t *p = msg;
    uint64_t v[4] = { k[0] ^ 0x736f6d6570736575ull, k[1] ^ 0x646f72616e646f6dull,
                      k[0] ^ 0x6c7967656e657261ull, k[1] ^ 0x7465646279746573ull };
    size_t full = len & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8) {
        uint64_t m = xdev_get_le64(p + i);
        v[3] ^= m;
        sip_round(v);
        sip_round(v);
        v[0] ^= m;
    }
    uint64_t last = (uint64_t)len << 56;
    for (size_t i = 0; i < (len & 7); i++)
        last |= (uint64_t)p[full + i] << (8 * i);
    v[3] ^= last;
    sip_round(v);
    sip_round(v);
    v[0] ^= last;
    v[2] ^= 0xff;
    for (int i = 0; i < 4; i++)
        sip_round(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

void auth_init(xdev_t *d)
{
    static const uint64_t derive[2] = { 0x7864657661757468ull, 0x6b65796465726976ull };
    const char *s = d->cfg.job_secret;
    /* the launcher's nth device of every rank has a key of its own (boot.c) */
    uint64_t k0 = siphash24((const uint64_t[2]){ derive[0], derive[1] ^ d->boot_nth }, s,
                            strlen(s));
    uint64_t k1 = siphash24((const uint64_t[2]){ derive[1], k0 }, s, strlen(s));
    d->auth_key[0] = k0;
    d->auth_key[1] = k1;
}

uint64_t xdev_auth_mac(xdev_t *d, const void *msg, size_t len)
{
    return siphash24(d->auth_key, msg, len);
}

uint64_t xdev_auth_nonce(void)
{
    uint64_t n;
    if (getrandom(&n, sizeof n, 0) == (ssize_t)sizeof n)
        return n;
    /* No entropy source: a nonce only has to differ between handshakes. */
    static uint64_t counter;
    uint64_t c = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    return siphash24((const uint64_t[2]){ xdev_now_ms(), (uint64_t)getpid() }, &c, sizeof c);
}
