/* match.c - the keyed FIFO table of match.h: chained hashing, buckets made
 * on first use and given up when their list empties so that a job that
 * uses many distinct tags does not keep memory for all of them. A few
 * emptied buckets are kept for reuse: a ping-pong posts and matches one
 * receive per message, and a malloc/free pair per message showed up in
 * its profile. */
#include <stdlib.h>
#include "match.h"
#include "xdev.h"

#define MTABLE_SPARE_MAX 16

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
    t->spare = NULL;
    t->nspare = 0;
    t->slots = calloc(t->nslots, sizeof *t->slots);
    return t->slots ? 0 : XDEV_ERR_NOMEM;
}

static void free_chain(xdev_mbucket_t *b)
{
    while (b) {
        xdev_mbucket_t *next = b->chain;
        free(b);
        b = next;
    }
}

void xdev_mtable_destroy(xdev_mtable_t *t)
{
    free_chain(t->spare);
    for (size_t i = 0; i < t->nslots; i++)
        free_chain(t->slots[i]);
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

xdev_mnode_t *xdev_mtable_head(const xdev_mtable_t *t, int src, int tag, int ctx)
{
    xdev_mbucket_t *b = *find_slot(t, src, tag, ctx);
    return b ? b->head : NULL;
}

/* Keep chains short as the number of live keys grows; a failed grow is
 * harmless (chains just get longer). */
static void maybe_grow(xdev_mtable_t *t)
{
    if (t->nbuckets < t->nslots)
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

int xdev_mtable_append(xdev_mtable_t *t, int src, int tag, int ctx, xdev_mnode_t *n)
{
    xdev_mbucket_t **p = find_slot(t, src, tag, ctx);
    xdev_mbucket_t *b = *p;
    if (!b) {
        if (t->spare) {
            b = t->spare;
            t->spare = b->chain;
            t->nspare--;
        } else if (!(b = malloc(sizeof *b))) {
            return XDEV_ERR_NOMEM;
        }
        b->chain = NULL;
        b->head = b->tail = NULL;
        b->src = src;
        b->tag = tag;
        b->ctx = ctx;
        *p = b;
        t->nbuckets++;
        maybe_grow(t);
    }
    n->bucket = b;
    n->next = NULL;
    n->prev = b->tail;
    if (b->tail)
        b->tail->next = n;
    else
        b->head = n;
    b->tail = n;
    return 0;
}

void xdev_mtable_remove(xdev_mtable_t *t, xdev_mnode_t *n)
{
    xdev_mbucket_t *b = n->bucket;
    if (n->prev)
        n->prev->next = n->next;
    else
        b->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        b->tail = n->prev;
    n->bucket = NULL;
    if (b->head)
        return;
    xdev_mbucket_t **p = find_slot(t, b->src, b->tag, b->ctx);
    *p = b->chain;
    t->nbuckets--;
    if (t->nspare < MTABLE_SPARE_MAX) {
        b->chain = t->spare;
        t->spare = b;
        t->nspare++;
    } else {
        free(b);
    }
}
