/*
 * group.c - groups: members, context, the failure-notice receive.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include "coll.h"

/* Scratch blocks bigger than 16 MiB are given back after each call. It is
 * compared with malloc_usable_size, which adds malloc's rounding to what
 * was asked (a page, less its header, for glibc's mmap'd blocks): at 16 MiB
 * exactly the block was not kept. */
#define SPARE_MAX (((size_t)16 << 20) + 4096)

/* Long collectives need scratch as big as the message every call, and
 * new memory is slow to fill here: from malloc's mmap threshold (128 KiB
 * at first) up every block is new pages, and a single copy
 * (process_vm_readv) into pages it has not written before runs at about
 * 0.25 GB/s on these VMs against 4-13 into pages it has. A binomial reduce
 * of 1 MiB at 8 ranks, whose inner members receive whole vectors, took
 * 8-12 ms a call with a new block each time against 0.7-1.2 with the
 * blocks reused. So a group keeps its two biggest blocks, up to SPARE_MAX
 * each. */
static size_t cap(void *block) { return block ? malloc_usable_size(block) : 0; }

void *coll_alloc(xdev_coll_group_t *g, size_t n)
{
    int fit = -1; /* the smaller of the kept blocks that hold n */
    for (int i = 0; i < 2; i++)
        if (g->spare[i] && cap(g->spare[i]) >= n &&
            (fit < 0 || cap(g->spare[i]) < cap(g->spare[fit])))
            fit = i;
    if (fit < 0) return malloc(n ? n : 1);
    void *block = g->spare[fit];
    g->spare[fit] = NULL;
    return block;
}

void coll_free(xdev_coll_group_t *g, void *block)
{
    if (!block) return;
    if (g->nreq > 0) {
        coll_bury(block);
        return;
    }
    int smaller = cap(g->spare[0]) <= cap(g->spare[1]) ? 0 : 1; /* an empty slot first */
    if (cap(block) > SPARE_MAX || cap(g->spare[smaller]) >= cap(block)) {
        free(block);
        return;
    }
    free(g->spare[smaller]);
    g->spare[smaller] = block;
}

/* The groups that exist, so that a context already owned by a group of the
 * same device is refused: two groups on one context would take each
 * other's messages and failure notices. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static xdev_coll_group_t *live;

/* Add g unless its device and context are taken; 0 if they are. */
static int live_add(xdev_coll_group_t *g)
{
    pthread_mutex_lock(&live_lock);
    xdev_coll_group_t *o = live;
    while (o && !(o->dev == g->dev && o->ctx == g->ctx)) o = o->next_live;
    if (!o) {
        g->next_live = live;
        live = g;
    }
    pthread_mutex_unlock(&live_lock);
    return !o;
}

static void live_remove(xdev_coll_group_t *g)
{
    pthread_mutex_lock(&live_lock);
    xdev_coll_group_t **p = &live;
    while (*p != g) p = &(*p)->next_live;
    *p = g->next_live;
    pthread_mutex_unlock(&live_lock);
}

int xdev_coll_group_create(xdev_t *dev, const int *ranks, int n, int ctx,
                           xdev_coll_group_t **grp)
{
    if (!dev || !grp || ctx < 0) return XDEV_ERR_ARG;
    int dsize = xdev_size(dev), drank = xdev_rank(dev);
    if (dsize < 1 || n < 1 || n > dsize) return XDEV_ERR_ARG;
    int me = -1;
    for (int i = 0; i < n; i++) {
        int r = ranks ? ranks[i] : i;
        if (r < 0 || r >= dsize) return XDEV_ERR_ARG;
        for (int j = 0; ranks && j < i; j++)
            if (ranks[j] == r) return XDEV_ERR_ARG;
        if (r == drank) me = i;
    }
    if (me < 0) return XDEV_ERR_ARG;

    coll_config_t cfg;
    int rc = coll_config_load(&cfg, dev, n);
    if (rc) return rc;

    xdev_coll_group_t *g = calloc(1, sizeof *g);
    if (!g) return XDEV_ERR_NOMEM;
    g->dev = dev;
    g->ctx = ctx;
    g->size = n;
    g->rank = me;
    g->cfg = cfg;
    /* The linear algorithms post a send and a receive per member at most. */
    g->cap = 2 * n + 2;
    g->ranks = malloc(sizeof *g->ranks * (size_t)n);
    g->reqs = calloc((size_t)g->cap, sizeof *g->reqs);
    g->expect = malloc(sizeof *g->expect * (size_t)g->cap);
    if (!g->ranks || !g->reqs || !g->expect) {
        rc = XDEV_ERR_NOMEM;
        goto fail;
    }
    for (int i = 0; i < n; i++) g->ranks[i] = ranks ? ranks[i] : i;
    if (!live_add(g)) {
        rc = XDEV_ERR_ARG;
        goto fail;
    }
    g->watch_done = 1;
    if (n > 1 && (rc = coll_post_watch(g)) != XDEV_OK) {
        live_remove(g);
        goto fail;
    }
    *grp = g;
    return XDEV_OK;
fail:
    free(g->ranks);
    free(g->reqs);
    free(g->expect);
    free(g);
    return rc;
}

int xdev_coll_group_free(xdev_coll_group_t *g)
{
    if (!g) return XDEV_OK;
    int rc = XDEV_OK;
    if (!g->watch_done) {
        /* Too late means a notice came: the receive completes either way.
         * A wakeup must not end the wait: g holds the request. */
        xdev_cancel(&g->watch);
        while ((rc = xdev_wait(&g->watch, NULL)) == XDEV_ERR_WOKEN)
            ;
    }
    live_remove(g);
    free(g->spare[0]);
    free(g->spare[1]);
    free(g->ranks);
    free(g->reqs);
    free(g->expect);
    free(g);
    return rc;
}

int xdev_coll_group_rank(const xdev_coll_group_t *g) { return g ? g->rank : XDEV_ERR_ARG; }
int xdev_coll_group_size(const xdev_coll_group_t *g) { return g ? g->size : XDEV_ERR_ARG; }
