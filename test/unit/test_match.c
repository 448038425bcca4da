/*
 * test_match.c - the keyed FIFO table under matching: order per key,
 * wildcard keys kept apart from exact ones, removal from the middle, and
 * many distinct keys (growth) without losing any.
 */
#include <stdio.h>
#include <stdlib.h>
#include "match.h"
#include "unit_check.h"


static void test_fifo_and_keys(void)
{
    xdev_mtable_t t;
    xdev_mnode_t n[4];
    CHECK(xdev_mtable_init(&t) == 0);
    CHECK(xdev_mtable_append(&t, 1, 2, 3, &n[0]) == 0);
    CHECK(xdev_mtable_append(&t, 1, 2, 3, &n[1]) == 0);
    CHECK(xdev_mtable_append(&t, -1, 2, 3, &n[2]) == 0);
    CHECK(xdev_mtable_append(&t, 1, 2, 4, &n[3]) == 0);
    CHECK(xdev_mtable_head(&t, 1, 2, 3) == &n[0]);
    CHECK(xdev_mtable_head(&t, -1, 2, 3) == &n[2]);
    CHECK(xdev_mtable_head(&t, 1, 2, 4) == &n[3]);
    CHECK(xdev_mtable_head(&t, 1, -1, 3) == NULL);
    xdev_mtable_remove(&t, &n[0]);
    CHECK(xdev_mtable_head(&t, 1, 2, 3) == &n[1]);
    xdev_mtable_remove(&t, &n[1]);
    CHECK(xdev_mtable_head(&t, 1, 2, 3) == NULL);
    CHECK(t.nbuckets == 3); /* the emptied key's bucket waits to be reused */
    CHECK(xdev_mtable_append(&t, 1, 2, 3, &n[0]) == 0);
    CHECK(xdev_mtable_head(&t, 1, 2, 3) == &n[0] && t.nbuckets == 3);
    xdev_mtable_destroy(&t);
}

static void test_middle_removal(void)
{
    xdev_mtable_t t;
    xdev_mnode_t n[3];
    xdev_mtable_init(&t);
    for (int i = 0; i < 3; i++)
        xdev_mtable_append(&t, 0, 0, 0, &n[i]);
    xdev_mtable_remove(&t, &n[1]);
    CHECK(xdev_mtable_head(&t, 0, 0, 0) == &n[0]);
    CHECK(n[0].next == &n[2] && n[2].prev == &n[0]);
    xdev_mtable_remove(&t, &n[2]);
    CHECK(n[0].next == NULL);
    xdev_mtable_destroy(&t);
}

static void test_many_keys(void)
{
    enum { N = 20000 };
    xdev_mtable_t t;
    xdev_mnode_t *n = calloc(N, sizeof *n);
    xdev_mtable_init(&t);
    for (int i = 0; i < N; i++)
        CHECK(xdev_mtable_append(&t, i % 7, i, i % 3, &n[i]) == 0);
    CHECK(t.nslots >= N); /* grew instead of chaining everything */
    for (int i = 0; i < N; i++)
        CHECK(xdev_mtable_head(&t, i % 7, i, i % 3) == &n[i]);
    for (int i = 0; i < N; i++)
        xdev_mtable_remove(&t, &n[i]);
    for (int i = 0; i < N; i++)
        CHECK(xdev_mtable_head(&t, i % 7, i, i % 3) == NULL);
    xdev_mtable_destroy(&t);
    free(n);
}

/* A new key per message, one live at a time (a tag that counts up): the
 * emptied buckets are swept, so neither they nor the slots pile up. */
static void test_keys_come_and_go(void)
{
    xdev_mtable_t t;
    xdev_mnode_t n;
    xdev_mtable_init(&t);
    for (int i = 0; i < 100000; i++) {
        CHECK(xdev_mtable_append(&t, 0, i, 0, &n) == 0);
        CHECK(xdev_mtable_head(&t, 0, i, 0) == &n);
        xdev_mtable_remove(&t, &n);
    }
    CHECK(t.nslots == 64 && t.nbuckets <= 64);
    xdev_mtable_destroy(&t);
}

/* The bucket remembered from the last lookup must not outlive a sweep,
 * nor answer for another key. */
static void test_remembered_bucket(void)
{
    enum { N = 200 };
    static xdev_mnode_t live[N];
    xdev_mnode_t a, b;
    xdev_mtable_t t;
    xdev_mtable_init(&t);
    CHECK(xdev_mtable_append(&t, 1, 7, 0, &a) == 0);
    CHECK(xdev_mtable_append(&t, 1, 8, 0, &b) == 0);
    CHECK(xdev_mtable_head(&t, 1, 7, 0) == &a);
    CHECK(xdev_mtable_head(&t, 1, 8, 0) == &b);
    CHECK(xdev_mtable_head(&t, 2, 7, 0) == NULL);
    CHECK(xdev_mtable_head(&t, 1, 7, 1) == NULL);
    xdev_mtable_remove(&t, &a);
    CHECK(xdev_mtable_head(&t, 1, 7, 0) == NULL); /* empty, and remembered */
    for (int i = 0; i < N; i++) /* enough new keys to sweep the empty bucket out */
        CHECK(xdev_mtable_append(&t, 3, i, 0, &live[i]) == 0);
    CHECK(xdev_mtable_head(&t, 1, 7, 0) == NULL);
    CHECK(xdev_mtable_append(&t, 1, 7, 0, &a) == 0);
    CHECK(xdev_mtable_head(&t, 1, 7, 0) == &a);
    CHECK(xdev_mtable_head(&t, 1, 8, 0) == &b);
    CHECK(xdev_mtable_head(&t, 3, N - 1, 0) == &live[N - 1]);
    xdev_mtable_destroy(&t);
}

int main(void)
{
    test_fifo_and_keys();
    test_middle_removal();
    test_many_keys();
    test_keys_come_and_go();
    test_remembered_bucket();
    if (failures)
        return 1;
    printf("match: all checks passed\n");
    return 0;
}
