/*
 * group.c - groups: members, context, the failure-notice receive.
 */
#include <pthread.h>
#include <stdlib.h>

#include "coll.h"

void *coll_alloc(size_t n) { return malloc(n ? n : 1); }

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
    free(g->ranks);
    free(g->reqs);
    free(g->expect);
    free(g);
    return rc;
}

int xdev_coll_group_rank(const xdev_coll_group_t *g) { return g ? g->rank : XDEV_ERR_ARG; }
int xdev_coll_group_size(const xdev_coll_group_t *g) { return g ? g->size : XDEV_ERR_ARG; }
