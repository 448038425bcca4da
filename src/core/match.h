/*
 * match.h - queues keyed by (source, tag, context).
 *
 * A table of FIFO lists, one per key, where the source and the tag of a key
 * may be the wildcard -1. Posted receives go into the list of their own key;
 * an unexpected message goes into the four lists a receive could look in:
 * (s,t,c), (ANY,t,c), (s,ANY,c), (ANY,ANY,c). Either way a match is a few
 * hash lookups, never a walk over everything queued.
 */
#ifndef XDEV_MATCH_H
#define XDEV_MATCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct xdev_mbucket xdev_mbucket_t;

typedef struct xdev_mnode {
    struct xdev_mnode *prev, *next;
    xdev_mbucket_t *bucket;
} xdev_mnode_t;

typedef struct xdev_mtable {
    xdev_mbucket_t **slots;
    size_t nslots;   /* a power of two */
    size_t nbuckets; /* including empty ones, until a sweep */
    xdev_mbucket_t *last; /* the bucket found last, or NULL */
} xdev_mtable_t;

int xdev_mtable_init(xdev_mtable_t *t);
void xdev_mtable_destroy(xdev_mtable_t *t);

/* First node queued under exactly this key, or NULL. */
xdev_mnode_t *xdev_mtable_head(xdev_mtable_t *t, int src, int tag, int ctx);

/* Queue n at the tail of key's list. Returns 0 or XDEV_ERR_NOMEM. */
int xdev_mtable_append(xdev_mtable_t *t, int src, int tag, int ctx, xdev_mnode_t *n);

/* Queue n at the tail of the list `like` is queued in: the same key,
 * without a lookup. */
void xdev_mtable_append_like(xdev_mtable_t *t, const xdev_mnode_t *like, xdev_mnode_t *n);

/* Unlink n from its list (n must be queued). */
void xdev_mtable_remove(xdev_mtable_t *t, xdev_mnode_t *n);

#endif
