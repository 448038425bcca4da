/*
 * dlist.h - unlink and append for the doubly linked lists the core and
 * the transports keep of their own structs (the match table's buckets,
 * unexpected and claimed messages, completed requests, RDMA transfers,
 * exposed regions, messages in flight).
 *
 * The lists are intrusive: the element type has its own link members
 * (named by the caller, since one struct may sit on two lists), so a walk
 * needs no container_of and the hot lists keep their layout. A list is a
 * head pointer and, where the owner appends, a tail. Unlinking leaves the
 * element's own links as they were, for a walk that is still using them.
 */
#ifndef XDEV_KIT_DLIST_H
#define XDEV_KIT_DLIST_H

#define XDEV_DLIST_APPEND(head, tail, n, PREV, NEXT)                                              \
    do {                                                                                          \
        (n)->NEXT = NULL;                                                                         \
        (n)->PREV = (tail);                                                                       \
        if (tail)                                                                                 \
            (tail)->NEXT = (n);                                                                   \
        else                                                                                      \
            (head) = (n);                                                                         \
        (tail) = (n);                                                                             \
    } while (0)

/* Put n first on a list kept without a tail. */
#define XDEV_DLIST_PUSH(head, n, PREV, NEXT)                                                      \
    do {                                                                                          \
        (n)->PREV = NULL;                                                                         \
        (n)->NEXT = (head);                                                                       \
        if (head)                                                                                 \
            (head)->PREV = (n);                                                                   \
        (head) = (n);                                                                             \
    } while (0)

/* Unlink n from a list kept without a tail. */
#define XDEV_DLIST_UNLINK_HEAD(head, n, PREV, NEXT)                                               \
    do {                                                                                          \
        if ((n)->PREV)                                                                            \
            (n)->PREV->NEXT = (n)->NEXT;                                                          \
        else                                                                                      \
            (head) = (n)->NEXT;                                                                   \
        if ((n)->NEXT)                                                                            \
            (n)->NEXT->PREV = (n)->PREV;                                                          \
    } while (0)

/* The tail moves back only when n was last; the rest is UNLINK_HEAD,
 * which leaves n's own links alone. */
#define XDEV_DLIST_UNLINK(head, tail, n, PREV, NEXT)                                              \
    do {                                                                                          \
        if (!(n)->NEXT)                                                                           \
            (tail) = (n)->PREV;                                                                   \
        XDEV_DLIST_UNLINK_HEAD(head, n, PREV, NEXT);                                              \
    } while (0)

#endif
