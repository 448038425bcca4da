/*
 * match.c - the keyed FIFO table of match.h: chained hashing with buckets
 * made on first use.
 *
 * A bucket whose list empties stays where it is: a ping-pong posts and
 * matches one receive per message under the same key, and unlinking and
 * relinking the bucket each time (a hash and a chain walk, or a malloc)
 * was a tenth of the instructions of a small message. Empty buckets are
 * swept out when the table would otherwise grow, so a job that uses many
 * distinct tags over time keeps memory only for the keys in use (at most
 * twice as many buckets, plus the initial 64 slots).
 *
 * Traffic mostly repeats a key (a ping-pong, a window under one tag), so
 * the bucket found last is checked before anything is hashed: three
 * compares instead of a hash and a chain walk, on each of the three
 * lookups a small message makes.
 */
#include <stdbool.h>
#include <stdlib.h>
#include "match.h"
#include "xdev.h"
#include "../kit/dlist.h"
#include "../kit/hot.h"

struct xdev_mbucket {
    int src, tag, ctx;
    xdev_mnode_t *head, *tail;
    xdev_mbucket_t *chain;
};

static size_t key_hash(int src, int tag, int ctx)
{
    uint64_t h = (uint64_t)(uint32_t)src * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)(uint32_t)tag * 0xc2b2ae3d27d4eb4full;
    h ^= (uint64_t)(uint32_t)ctx * 0x165667b19e3779f9ull;
    return (size_t)(h ^ (h >> 29));
}

int xdev_mtable_init(xdev_mtable_t *t)
{
    t->nslots = 64;
    t->nbuckets = 0;
    t->last = NULL;
    t->slots = calloc(t->nslots, sizeof *t->slots);
    return t->slots ? 0 : XDEV_ERR_NOMEM;
}

void xdev_mtable_destroy(xdev_mtable_t *t)
{
    for (size_t i = 0; i < t->nslots; i++) {
        xdev_mbucket_t *b = t->slots[i];
        while (b) {
            xdev_mbucket_t *next = b->chain;
            free(b);
            b = next;
        }
    }
    free(t->slots);
    t->slots = NULL;
}

static xdev_mbucket_t **find_slot(const xdev_mtable_t *t, int src, int tag, int ctx)
{
    xdev_mbucket_t **p = &t->slots[key_hash(src, tag, ctx) & (t->nslots - 1)];
    while (*p && !((*p)->src == src && (*p)->tag == tag && (*p)->ctx == ctx))
        p = &(*p)->chain;
    return p;
}

static bool is_key(const xdev_mbucket_t *b, int src, int tag, int ctx)
{
    return b && b->src == src && b->tag == tag && b->ctx == ctx;
}

XDEV_HOT xdev_mnode_t *xdev_mtable_head(xdev_mtable_t *t, int src, int tag, int ctx)
{
    xdev_mbucket_t *b = t->last;
    if (!is_key(b, src, tag, ctx)) {
        b = *find_slot(t, src, tag, ctx);
        if (!b)
            return NULL;
        t->last = b;
    }
    return b->head;
}

/* Free the empty buckets. */
static void sweep(xdev_mtable_t *t)
{
    t->last = NULL;
    for (size_t i = 0; i < t->nslots; i++) {
        xdev_mbucket_t **p = &t->slots[i];
        while (*p) {
            xdev_mbucket_t *b = *p;
            if (b->head) {
                p = &b->chain;
                continue;
            }
            *p = b->chain;
            free(b);
            t->nbuckets--;
        }
    }
}

/* Keep chains short as the number of keys grows: first drop the empty
 * buckets, and double the slots only if the live ones still fill half.
 * A failed grow is harmless (chains just get longer). */
static void maybe_grow(xdev_mtable_t *t)
{
    if (t->nbuckets < t->nslots)
        return;
    sweep(t);
    if (t->nbuckets < t->nslots / 2)
        return;
    size_t n = t->nslots * 2;
    xdev_mbucket_t **slots = calloc(n, sizeof *slots);
    if (!slots)
        return;
    for (size_t i = 0; i < t->nslots; i++) {
        xdev_mbucket_t *b = t->slots[i];
        while (b) {
            xdev_mbucket_t *next = b->chain;
            size_t j = key_hash(b->src, b->tag, b->ctx) & (n - 1);
            b->chain = slots[j];
            slots[j] = b;
            b = next;
        }
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = n;
}

XDEV_HOT int xdev_mtable_append(xdev_mtable_t *t, int src, int tag, int ctx, xdev_mnode_t *n)
{
    xdev_mbucket_t **p = NULL, *b = t->last;
    if (!is_key(b, src, tag, ctx)) {
        p = find_slot(t, src, tag, ctx);
        b = *p;
    }
    bool made = !b;
    if (made) {
        b = calloc(1, sizeof *b);
        if (!b)
            return XDEV_ERR_NOMEM;
        b->src = src;
        b->tag = tag;
        b->ctx = ctx;
        *p = b;
        t->nbuckets++;
    }
    t->last = b;
    n->bucket = b;
    XDEV_DLIST_APPEND(b->head, b->tail, n, prev, next);
    if (made)
        maybe_grow(t); /* after n is in: the sweep keeps b */
    return 0;
}

void xdev_mtable_append_like(xdev_mtable_t *t, const xdev_mnode_t *like, xdev_mnode_t *n)
{
    xdev_mbucket_t *b = like->bucket;
    t->last = b;
    n->bucket = b;
    XDEV_DLIST_APPEND(b->head, b->tail, n, prev, next);
}

XDEV_HOT void xdev_mtable_remove(xdev_mtable_t *t, xdev_mnode_t *n)
{
    (void)t;
    xdev_mbucket_t *b = n->bucket;
    XDEV_DLIST_UNLINK(b->head, b->tail, n, prev, next);
    n->bucket = NULL;
}
