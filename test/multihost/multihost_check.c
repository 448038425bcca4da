/*
 * multihost_check.c - run by multihost.sh as 4 ranks on 2 simulated hosts
 * (ranks 0,1 on one, 2,3 on the other). Checks that each pair uses the
 * transport it should (shm on a host, tcp across) and that eager and
 * rendezvous messages between every pair arrive intact, both ways at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "introspect.h"
#include "xdev.h"

#define SIZES 3
static const size_t sizes[SIZES] = { 8, 60000, 3 * 1024 * 1024 };

static unsigned char pattern(int from, int to, size_t i)
{
    return (unsigned char)(from * 31 + to * 7 + i * 13);
}

int main(void)
{
    xdev_t *dev;
    int rc = xdev_init(NULL, &dev);
    if (rc != XDEV_OK) {
        fprintf(stderr, "init: %s\n", xdev_strerror(rc));
        return 1;
    }
    int me = xdev_rank(dev), n = xdev_size(dev), bad = 0;
    for (int p = 0; p < n; p++) {
        const char *want = p == me ? "self" : (p / 2 == me / 2 ? "shm" : "tcp");
        const char *got = xdev_peer_transport(dev, p);
        if (strcmp(got, want)) {
            fprintf(stderr, "rank %d: peer %d over %s, want %s\n", me, p, got, want);
            bad++;
        }
    }
    size_t max = sizes[SIZES - 1];
    unsigned char **in = calloc((size_t)n, sizeof *in), **out = calloc((size_t)n, sizeof *out);
    xdev_request_t *req = calloc(2 * (size_t)n, sizeof *req);
    for (int s = 0; s < SIZES; s++) {
        size_t len = sizes[s];
        int k = 0;
        for (int p = 0; p < n; p++) {
            in[p] = in[p] ? in[p] : malloc(max);
            out[p] = out[p] ? out[p] : malloc(max);
            for (size_t i = 0; i < len; i++)
                out[p][i] = pattern(me, p, i);
            xdev_irecv(dev, in[p], len, p, s, 0, &req[k++]);
            xdev_isend(dev, out[p], len, p, s, 0, &req[k++]);
        }
        for (int i = 0; i < k; i++) {
            xdev_status_t st;
            if (xdev_wait(&req[i], &st) != XDEV_OK || st.error != XDEV_OK) {
                fprintf(stderr, "rank %d: size %zu request %d: %s\n", me, len, i,
                        xdev_strerror(st.error));
                bad++;
            }
        }
        for (int p = 0; p < n; p++)
            for (size_t i = 0; i < len; i++)
                if (in[p][i] != pattern(p, me, i)) {
                    fprintf(stderr, "rank %d: from %d size %zu: byte %zu wrong\n", me, p, len, i);
                    bad++;
                    break;
                }
    }
    for (int p = 0; p < n; p++) {
        free(in[p]);
        free(out[p]);
    }
    free(in);
    free(out);
    free(req);
    if (!bad)
        printf("rank %d: shm within the host, tcp across, all data intact\n", me);
    return xdev_finalize(dev) == XDEV_OK && !bad ? 0 : 1;
}
