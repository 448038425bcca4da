/*
 * shm_kill_midway.c - a sender killed in the middle of a long message.
 *
 * Run as the 2 ranks of `xdevrun --keep-going -n 2 --transport shm` with
 * XDEV_SHM_CMA_MIN=never, so the data streams through the ring in
 * fragments. Rank 1 sends rank 0 its pid, then 256 MiB. Rank 0 receives
 * into a zeroed buffer, and once the first 16 MiB have landed it kills
 * rank 1 with SIGKILL. The half-placed receive must then fail with
 * XDEV_ERR_PEER (not hang, not complete), a new send to rank 1 must fail
 * too, and xdev_finalize must return XDEV_OK. Rank 0 prints PASS; the
 * driver (shm_kill_midway.sh) checks for it and for rank 1's SIGKILL.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "xdev.h"

#define BIG ((size_t)256 << 20)
#define SEEN ((size_t)16 << 20) /* kill once this much has arrived */
#define CTX 9

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(const char *what, int v)
{
    fprintf(stderr, "[rank 0] shm_kill_midway: FAIL %s (%d)\n", what, v);
    return 1;
}

static int receiver(xdev_t *dev)
{
    int pid = 0, done = 0, rc;
    xdev_request_t req;
    xdev_status_t st;
    unsigned char *buf = calloc(1, BIG);
    if (!buf || xdev_recv(dev, &pid, sizeof pid, 1, 1, CTX, NULL) != XDEV_OK || pid <= 1)
        return fail("getting the sender's pid", pid);
    if ((rc = xdev_irecv(dev, buf, BIG, 1, 2, CTX, &req)) != XDEV_OK)
        return fail("irecv", rc);
    /* Drive the transfer until part of it has landed, then kill the sender. */
    while (!done && !buf[SEEN - 1])
        if ((rc = xdev_test(&req, &done, &st)) != XDEV_OK)
            return fail("xdev_test before the kill", rc);
    if (done)
        return fail("the whole message arrived before the kill: make BIG larger", (int)st.count);
    kill(pid, SIGKILL);
    double t0 = now();
    while (!done && now() - t0 < 20)
        if ((rc = xdev_test(&req, &done, &st)) != XDEV_OK)
            return fail("xdev_test after the kill", rc);
    if (!done)
        return fail("the receive from the killed sender is still pending after 20 s", 0);
    if (st.error != XDEV_ERR_PEER)
        return fail("receive status.error, want XDEV_ERR_PEER", st.error);
    printf("[rank 0] receive failed with XDEV_ERR_PEER %.3f s after the kill\n", now() - t0);
    char c = 0;
    if ((rc = xdev_send(dev, &c, 1, 1, 3, CTX)) != XDEV_ERR_PEER)
        return fail("new send to the killed rank, want XDEV_ERR_PEER", rc);
    if ((rc = xdev_finalize(dev)) != XDEV_OK)
        return fail("xdev_finalize", rc);
    free(buf);
    printf("[rank 0] shm_kill_midway: PASS\n");
    return 0;
}

static int sender(xdev_t *dev)
{
    int pid = (int)getpid();
    unsigned char *buf = malloc(BIG);
    if (!buf)
        return 1;
    memset(buf, 0x5a, BIG);
    xdev_send(dev, &pid, sizeof pid, 0, 1, CTX);
    xdev_send(dev, buf, BIG, 0, 2, CTX); /* killed in here */
    fprintf(stderr, "[rank 1] shm_kill_midway: the send finished, the kill never came\n");
    return 1;
}

int main(void)
{
    xdev_t *dev;
    alarm(60); /* a hang is a failure, not a stuck test */
    if (xdev_init(NULL, &dev) != XDEV_OK || xdev_size(dev) != 2)
        return fail("xdev_init of a 2-rank job", 0);
    return xdev_rank(dev) == 0 ? receiver(dev) : sender(dev);
}
