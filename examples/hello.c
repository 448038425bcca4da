/*
 * hello.c - pass a token around the ring of ranks.
 *
 *   xdevrun -n 4 build/examples/hello
 */
#include <stdio.h>
#include <xdev.h>

int main(void)
{
    xdev_t *dev;
    int rc = xdev_init(NULL, &dev);
    if (rc != XDEV_OK) {
        fprintf(stderr, "xdev_init: %s\n", xdev_strerror(rc));
        return 1;
    }
    int rank = xdev_rank(dev), size = xdev_size(dev);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    const int tag = 1, ctx = 0;
    int token = 0;

    if (rank == 0)
        rc = xdev_send(dev, &token, sizeof token, next, tag, ctx);
    if (rc == XDEV_OK)
        rc = xdev_recv(dev, &token, sizeof token, prev, tag, ctx, NULL);
    if (rc == XDEV_OK && rank != 0) {
        token++;
        rc = xdev_send(dev, &token, sizeof token, next, tag, ctx);
    }
    if (rc != XDEV_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, xdev_strerror(rc));
        return 1;
    }
    if (rank == 0)
        printf("token went around %d ranks and came back as %d\n", size, token);
    return xdev_finalize(dev) == XDEV_OK ? 0 : 1;
}
