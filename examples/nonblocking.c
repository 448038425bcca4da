/*
 * nonblocking.c - overlap: every rank posts a receive from and a send to
 * every other rank, then waits for all of them.
 *
 *   xdevrun -n 4 build/examples/nonblocking
 */
#include <stdio.h>
#include <stdlib.h>
#include <xdev.h>

int main(void)
{
    xdev_t *dev;
    if (xdev_init(NULL, &dev) != XDEV_OK)
        return 1;
    int rank = xdev_rank(dev), size = xdev_size(dev);
    int *in = calloc((size_t)size, sizeof *in);
    xdev_request_t *reqs = calloc(2 * (size_t)size, sizeof *reqs);
    int n = 0, bad = 0;

    for (int peer = 0; peer < size; peer++) {
        xdev_irecv(dev, &in[peer], sizeof in[peer], peer, 7, 0, &reqs[n++]);
        xdev_isend(dev, &rank, sizeof rank, peer, 7, 0, &reqs[n++]);
    }
    for (int i = 0; i < n; i++) {
        xdev_status_t st;
        if (xdev_wait(&reqs[i], &st) != XDEV_OK || st.error != XDEV_OK)
            bad++;
    }
    for (int peer = 0; peer < size; peer++)
        bad += in[peer] != peer;
    printf("rank %d: exchanged with %d ranks, %d errors\n", rank, size, bad);
    free(in);
    free(reqs);
    return xdev_finalize(dev) == XDEV_OK && !bad ? 0 : 1;
}
