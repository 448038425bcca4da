/*
 * shm_left_early.c - a rank that has come and gone before a peer maps its
 * segment is taken for a peer that left, not for a dead job's leftover
 * that its owner is about to replace: the late rank's xdev_init returns at
 * once instead of waiting out the peer timeout, it still receives what the
 * early rank left in its ring, and a send to the early rank fails. Run by
 * shm_left_early.sh, which starts the two ranks by hand and stops rank 0
 * between creating its segment and mapping rank 1's.
 *
 *   rank 1: post one send to rank 0, finalize (the send cannot complete:
 *           rank 0 has not read its ring yet), exit
 *   rank 0: init (timed), receive that message, send to rank 1, finalize
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "xdev.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void)
{
    static const char note[] = "left in the ring";
    double t0 = now_s();
    xdev_t *dev;
    int rc = xdev_init(NULL, &dev);
    double took = now_s() - t0;
    if (rc != XDEV_OK) {
        fprintf(stderr, "init: %s\n", xdev_strerror(rc));
        return 1;
    }
    if (xdev_rank(dev) == 1) {
        xdev_request_t req;
        rc = xdev_isend(dev, note, sizeof note, 0, 5, 0, &req);
        xdev_finalize(dev);
        return rc == XDEV_OK ? 0 : 1;
    }
    /* The driver set the peer timeout to 30 s; waiting it out would take
     * all of it. The time rank 0 spent stopped, while rank 1 ran its
     * whole life, counts too. */
    printf("rank 0: xdev_init took %.3f s\n", took);
    int bad = took > 10.0;
    if (bad)
        fprintf(stderr, "rank 0 waited %.1f s in xdev_init for a peer that had left\n", took);
    char got[64] = "";
    xdev_status_t st;
    rc = xdev_recv(dev, got, sizeof got, 1, 5, 0, &st);
    if (rc != XDEV_OK || st.count != sizeof note || memcmp(got, note, sizeof note) != 0) {
        fprintf(stderr, "rank 0 lost rank 1's message: %s, %zu bytes\n", xdev_strerror(rc), st.count);
        bad = 1;
    }
    int x = 0;
    if ((rc = xdev_send(dev, &x, sizeof x, 1, 6, 0)) != XDEV_ERR_PEER) {
        fprintf(stderr, "a send to the rank that left returned %s\n", xdev_strerror(rc));
        bad = 1;
    }
    xdev_finalize(dev);
    return bad;
}
