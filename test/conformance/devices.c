/*
 * devices.c - case "devices": a process starts several devices from its
 * launcher, at once and one after another, and its ranks are not in step.
 *
 * Beside the harness's device every rank starts two more, and passes a
 * ring message on each in the other order, with one on the harness's
 * device between them. Each message carries its device's seed, so one
 * that reached the wrong device fails the data check: the nth device of
 * a rank must reach the nth of every other.
 *
 * Then four short lifetimes one after another, in each of which one rank
 * waits 150 ms before it finalizes. Its neighbour's next device sends to
 * it while it is still in the last one: that send must wait for its next
 * device, not fail or reach the old one.
 */
#include <stdio.h>

#include "cases.h"
#include "harness.h"

enum { CTX_DEVICES = 120, TAG = 1, LIFETIMES = 4, LATE_MS = 150 };

static void ring(xdev_t *dev, uint64_t seed, const char *what)
{
    unsigned char sb[64], rb[64];
    xdev_request_t rq;
    xdev_status_t st;
    h_fill(sb, sizeof sb, seed, h_rank);
    CHECK_RC(xdev_irecv(dev, rb, sizeof rb, h_prev(), TAG, CTX_DEVICES, &rq));
    CHECK_RC(xdev_send(dev, sb, sizeof sb, h_next(), TAG, CTX_DEVICES));
    CHECK_RC(xdev_wait(&rq, &st));
    CHECK_STATUS(&st, h_prev(), TAG, CTX_DEVICES, XDEV_OK, sizeof rb, what);
    CHECK_DATA(rb, sizeof rb, seed, h_prev(), what);
}

static xdev_t *start(void)
{
    xdev_t *dev = NULL;
    CHECK_RC(xdev_init(NULL, &dev));
    CHECK(xdev_rank(dev) == h_rank && xdev_size(dev) == h_size,
          "a second device is rank %d of %d", xdev_rank(dev), xdev_size(dev));
    return dev;
}

static void at_once(void)
{
    h_phase("devices: two more at once");
    xdev_t *a = start(), *b = start();
    ring(b, 2, "the ring on the third device");
    ring(h_dev, 0, "the ring on the harness's device");
    ring(a, 1, "the ring on the second device");
    CHECK_RC(xdev_finalize(a));
    CHECK_RC(xdev_finalize(b));
}

static void one_after_another(void)
{
    for (int i = 0; i < LIFETIMES; i++) {
        int late = i % h_size;
        h_phase("devices: lifetime %d of %d, rank %d late", i + 1, LIFETIMES, late);
        xdev_t *dev = start();
        char what[64];
        snprintf(what, sizeof what, "the ring in lifetime %d", i + 1);
        ring(dev, 10 + (uint64_t)i, what);
        if (h_rank == late)
            h_sleep_ms(LATE_MS);
        CHECK_RC(xdev_finalize(dev));
    }
}

void case_devices(void)
{
    at_once();
    one_after_another();
}
