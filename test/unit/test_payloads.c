/*
 * test_payloads.c - the unexpected payloads' buffer cache: what it keeps
 * (4 KiB up, 32 buffers and 4 MiB at most), what a new payload takes from
 * it (a kept buffer that holds it, at most twice its size), and that
 * draining frees everything (ASan's leak check sees the rest).
 */
#include <stdio.h>
#include <stdlib.h>
#include "payloads.h"
#include "unit_check.h"

static void test_reuse_and_fit(void)
{
    xdev_payloads_t p = { 0 };
    size_t cap;
    void *a = xdev_payload_get(&p, 64 << 10, &cap);
    CHECK(a && cap == 64 << 10);
    xdev_payload_put(&p, a, cap);
    CHECK(p.nkept == 1 && p.bytes == 64 << 10);
    CHECK(xdev_payload_get(&p, 64 << 10, &cap) == a && cap == 64 << 10 && p.nkept == 0);
    xdev_payload_put(&p, a, cap);
    /* too big for 16 KiB (it would waste three quarters), fits 40 KiB */
    void *b = xdev_payload_get(&p, 16 << 10, &cap);
    CHECK(b != a && cap == 16 << 10 && p.nkept == 1);
    CHECK(xdev_payload_get(&p, 40 << 10, &cap) == a && cap == 64 << 10 && p.nkept == 0);
    /* too small for 100 KiB */
    xdev_payload_put(&p, a, cap);
    void *c = xdev_payload_get(&p, 100 << 10, &cap);
    CHECK(c != a && cap == 100 << 10 && p.nkept == 1);
    free(b);
    free(c);
    xdev_payloads_drain(&p);
    CHECK(p.nkept == 0 && p.bytes == 0);
}

static void test_bounds(void)
{
    xdev_payloads_t p = { 0 };
    size_t cap;
    /* small buffers are malloc's business */
    void *s = xdev_payload_get(&p, PAYLOADS_MIN - 1, &cap);
    xdev_payload_put(&p, s, cap);
    CHECK(p.nkept == 0 && p.bytes == 0);
    xdev_payload_put(&p, NULL, 0);
    CHECK(p.nkept == 0);
    /* at most PAYLOADS_SLOTS buffers */
    for (int i = 0; i < PAYLOADS_SLOTS + 8; i++) {
        void *b = xdev_payload_get(&p, PAYLOADS_MIN, &cap);
        CHECK(b != NULL);
        xdev_payload_put(&p, b, cap);
        b = malloc(PAYLOADS_MIN);
        xdev_payload_put(&p, b, PAYLOADS_MIN);
    }
    CHECK(p.nkept == PAYLOADS_SLOTS && p.bytes == PAYLOADS_SLOTS * PAYLOADS_MIN);
    xdev_payloads_drain(&p);
    /* at most PAYLOADS_BYTES */
    size_t big = PAYLOADS_BYTES / 4 + 1;
    for (int i = 0; i < 5; i++)
        xdev_payload_put(&p, malloc(big), big);
    CHECK(p.nkept == 3 && p.bytes == 3 * big);
    xdev_payloads_drain(&p);
    CHECK(p.nkept == 0 && p.bytes == 0);
}

int main(void)
{
    test_reuse_and_fit();
    test_bounds();
    if (failures)
        return 1;
    printf("payloads: all checks passed\n");
    return 0;
}
