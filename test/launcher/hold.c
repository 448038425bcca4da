/*
 * hold.c - a rank that connects to every peer, says so, and stays until
 * released: for tests that look at a running job from outside.
 *
 *   xdevrun -n N hold DIR
 *
 * Each rank writes DIR/ready.<rank> (its pid) once it has exchanged a
 * message with every peer, waits for DIR/release (at most 60 s), exchanges
 * once more and finalizes; it exits 0 only if every call succeeded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "xdev.h"

static int exchange(xdev_t *dev)
{
    int me = xdev_rank(dev), n = xdev_size(dev);
    for (int p = 0; p < n; p++) {
        if (p == me)
            continue;
        char out = (char)me, in = -1;
        xdev_request_t r;
        if (xdev_irecv(dev, &in, 1, p, 0, 0, &r) != XDEV_OK ||
            xdev_send(dev, &out, 1, p, 0, 0) != XDEV_OK || xdev_wait(&r, NULL) != XDEV_OK ||
            in != (char)p)
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: hold DIR\n");
        return 2;
    }
    xdev_t *dev;
    if (xdev_init(NULL, &dev) != XDEV_OK || exchange(dev) != 0)
        return 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/ready.%d", argv[1], xdev_rank(dev));
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0)
        return 1;
    snprintf(path, sizeof path, "%s/release", argv[1]);
    for (int i = 0; i < 6000 && access(path, F_OK) != 0; i++)
        usleep(10000);
    int rc = exchange(dev);
    return xdev_finalize(dev) == XDEV_OK && rc == 0 ? 0 : 1;
}
