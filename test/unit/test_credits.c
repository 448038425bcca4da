/*
 * test_credits.c - the credit window ibv and ofi share (src/kit/credits.h):
 * its size within bounds and the pool, a peer that hands back more than
 * it was given refused, and credits counted back only once sent.
 */
#include "../../src/kit/credits.h"
#include "unit_check.h"

static void test_window(void)
{
    CHECK(xdev_credits_window(256, 1, 2, 1, 64) == 64);   /* the most */
    CHECK(xdev_credits_window(256, 8, 2, 1, 64) == 30);   /* a share, less the reserve */
    CHECK(xdev_credits_window(256, 200, 2, 1, 64) == 1);  /* the least, pool or not */
    CHECK(xdev_credits_window(255, 15, 3, 4, 16) == 14);
    CHECK(xdev_credits_window((size_t)1 << 40, 1, 3, 4, 16) == 16); /* no overflow */
    for (int n = 1; n < 300; n++) { /* every window fits its pool, unless at the least */
        int w = xdev_credits_window(256, n, 2, 1, 64);
        CHECK(w >= 1 && w <= 64 && (w == 1 || n * (w + 2) <= 256));
    }
}

static void test_returned(void)
{
    xdev_credits_t c = { .avail = 16 };
    CHECK(!xdev_credits_returned(&c, 1, 16) && c.avail == 16); /* none taken yet */
    xdev_credits_sent(&c, 0, true);
    xdev_credits_sent(&c, 0, true);
    CHECK(c.avail == 14);
    CHECK(!xdev_credits_returned(&c, 3, 16) && c.avail == 14);
    CHECK(!xdev_credits_returned(&c, 0xffffffffu, 16) && c.avail == 14);
    CHECK(xdev_credits_returned(&c, 2, 16) && c.avail == 16);
}

static void test_owed(void)
{
    xdev_credits_t c = { .avail = 5 };
    CHECK(!xdev_credits_due(&c, 5));
    c.owed = 2;
    CHECK(!xdev_credits_due(&c, 5)); /* under half */
    c.owed = 3;
    CHECK(xdev_credits_due(&c, 5));
    c.owed = 1;
    CHECK(xdev_credits_due(&c, 1));
    c.owed = 0; /* freed buffers not yet counted as owed */
    CHECK(!xdev_credits_due_after(&c, 0, 5));
    CHECK(!xdev_credits_due_after(&c, 2, 5));
    CHECK(xdev_credits_due_after(&c, 3, 5));
    c.owed = 1;
    CHECK(xdev_credits_due_after(&c, 2, 5) && !xdev_credits_due(&c, 5));
    c.owed = 70000;
    unsigned back = xdev_credits_to_return(&c, 0xffff);
    CHECK(back == 0xffff && c.owed == 70000); /* nothing counted until sent */
    xdev_credits_sent(&c, back, false);       /* a frame of credits alone */
    CHECK(c.owed == 70000 - 0xffff && c.avail == 5);
    CHECK(xdev_credits_to_return(&c, 0xffff) == 70000 - 0xffff);
}

int main(void)
{
    test_window();
    test_returned();
    test_owed();
    if (failures)
        fprintf(stderr, "%d checks failed\n", failures);
    return failures != 0;
}
