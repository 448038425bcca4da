/*
 * scale.c - what starting a job costs per rank: xdev_init, the first
 * message (a ring exchange right after init), and memory once connected
 * to every peer (an all-to-all of 8-byte messages). Rank 0 prints one CSV
 * line: ranks, transport, slowest init (ms), slowest first message (ms
 * from the start of init), mean resident memory after init and after the
 * all-to-all (KiB, VmRSS), and their mean growth over the process before
 * init. Started by xdevrun or by a PMIx launcher alike:
 *
 *   xdevrun -n 32 --transport tcp xdev-scale
 *   mpirun -np 32 xdev-scale            (scale.sh runs the whole table)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xdev.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static double rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kib = atof(line + 6);
    if (f)
        fclose(f);
    return kib;
}

int main(void)
{
    double rss0 = rss_kib(), t0 = now_ms();
    xdev_t *dev;
    int rc = xdev_init(NULL, &dev);
    if (rc != XDEV_OK) {
        fprintf(stderr, "xdev-scale: xdev_init: %s\n", xdev_strerror(rc));
        return 1;
    }
    double t_init = now_ms() - t0, rss_init = rss_kib();
    int rank = xdev_rank(dev), size = xdev_size(dev);
    uint64_t token = (uint64_t)rank;
    rc = xdev_send(dev, &token, sizeof token, (rank + 1) % size, 1, 0);
    if (rc == XDEV_OK)
        rc = xdev_recv(dev, &token, sizeof token, (rank + size - 1) % size, 1, 0, NULL);
    double t_first = now_ms() - t0;

    uint64_t *in = calloc((size_t)size, sizeof *in);
    xdev_request_t *reqs = calloc(2 * (size_t)size, sizeof *reqs);
    for (int p = 0; rc == XDEV_OK && p < size; p++) {
        rc = xdev_irecv(dev, &in[p], sizeof in[p], p, 2, 0, &reqs[2 * p]);
        if (rc == XDEV_OK)
            rc = xdev_isend(dev, &token, sizeof token, p, 2, 0, &reqs[2 * p + 1]);
    }
    for (int i = 0; rc == XDEV_OK && i < 2 * size; i++)
        rc = xdev_wait(&reqs[i], NULL);
    double rss_all = rss_kib();

    double mine[4] = { t_init, t_first, rss_init - rss0, rss_all - rss0 }, abs_all = rss_all;
    if (rc == XDEV_OK && rank != 0)
        rc = xdev_send(dev, mine, sizeof mine, 0, 3, 0);
    if (rc == XDEV_OK && rank == 0) {
        double worst_init = t_init, worst_first = t_first, grow_init = mine[2],
               grow_all = mine[3], sum_abs = abs_all;
        for (int p = 1; rc == XDEV_OK && p < size; p++) {
            double theirs[4];
            rc = xdev_recv(dev, theirs, sizeof theirs, XDEV_ANY_SOURCE, 3, 0, NULL);
            worst_init = theirs[0] > worst_init ? theirs[0] : worst_init;
            worst_first = theirs[1] > worst_first ? theirs[1] : worst_first;
            grow_init += theirs[2];
            grow_all += theirs[3];
            sum_abs += theirs[3] + rss0; /* close enough: every rank starts alike */
        }
        const char *t = getenv("XDEV_TRANSPORT");
        printf("ranks,transport,init_ms_max,first_msg_ms_max,rss_kib_mean,rss_growth_init_kib,"
               "rss_growth_all_kib\n%d,%s,%.1f,%.1f,%.0f,%.0f,%.0f\n",
               size, t && *t ? t : "auto", worst_init, worst_first, sum_abs / size,
               grow_init / size, grow_all / size);
    }
    free(in);
    free(reqs);
    int frc = xdev_finalize(dev);
    if (rc != XDEV_OK)
        fprintf(stderr, "xdev-scale: %s\n", xdev_strerror(rc));
    return rc == XDEV_OK && frc == XDEV_OK ? 0 : 1;
}
