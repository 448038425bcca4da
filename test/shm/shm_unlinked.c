/*
 * shm_unlinked.c - shared-memory segments are private to the job and gone
 * from /dev/shm as soon as every rank has mapped them: checked from inside
 * the running job (so xdevrun's clean-up cannot be what removed them),
 * after which rank 1 dies by SIGKILL; the driver then checks nothing of
 * the job is left.
 */
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "xdev.h"

static void all_to_zero_and_back(xdev_t *dev)
{
    int me = xdev_rank(dev), n = xdev_size(dev), x = 0;
    for (int p = 1; me == 0 && p < n; p++)
        xdev_recv(dev, &x, sizeof x, p, 1, 0, NULL);
    if (me != 0)
        xdev_send(dev, &x, sizeof x, 0, 1, 0);
    for (int p = 1; me == 0 && p < n; p++)
        xdev_send(dev, &x, sizeof x, p, 2, 0);
    if (me != 0)
        xdev_recv(dev, &x, sizeof x, 0, 2, 0, NULL);
}

int main(void)
{
    xdev_t *dev;
    if (xdev_init(NULL, &dev) != XDEV_OK)
        return 1;
    all_to_zero_and_back(dev); /* every rank has opened, so mapped, all */
    int bad = 0;
    if (xdev_rank(dev) == 0) {
        char pattern[256];
        snprintf(pattern, sizeof pattern, "/dev/shm/xdev-%s-*", getenv("XDEV_JOB_ID"));
        glob_t g;
        if (glob(pattern, 0, NULL, &g) == 0) {
            for (size_t i = 0; i < g.gl_pathc; i++)
                fprintf(stderr, "still in /dev/shm while the job runs: %s\n", g.gl_pathv[i]);
            bad = 1;
            globfree(&g);
        }
    }
    all_to_zero_and_back(dev);
    if (xdev_rank(dev) == 1)
        raise(SIGKILL);
    xdev_finalize(dev);
    return bad;
}
