/*
 * test_explicit_config.c - bootstrap from an explicit xdev_config_t, the
 * way a host library with its own launcher starts xdev (IBVX's IBV_Init):
 * rank, size, secret and a "host:port" table, no xdevrun, no environment.
 * Forks N ranks that pass a token around a ring and exchange a rendezvous-
 * size message with their neighbour; also checks that a rank whose secret
 * differs cannot talk to the others.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "xdev.h"

#define N 3
#define BIG (256 * 1024)

/* A port nobody listens on right now (the kernel picks it). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &len))
        exit(2);
    close(fd);
    return ntohs(a.sin_port);
}

static int fail(int rank, const char *what, int rc)
{
    fprintf(stderr, "rank %d: %s: %s\n", rank, what, xdev_strerror(rc));
    return 1;
}

static int run_rank(int rank, const char *const *peers)
{
    xdev_config_t cfg;
    unsetenv("XDEV_BOOT_DIR");
    if (xdev_config_init(&cfg) != XDEV_OK)
        return 1;
    cfg.rank = rank;
    cfg.size = N;
    cfg.peers = peers;
    cfg.transport = "tcp";
    cfg.job_secret = "explicit-config-test-secret";
    cfg.peer_timeout_ms = 10000;
    xdev_t *dev;
    int rc = xdev_init(&cfg, &dev);
    if (rc != XDEV_OK)
        return fail(rank, "init", rc);

    int next = (rank + 1) % N, prev = (rank + N - 1) % N, token = 0;
    if (rank == 0 && (rc = xdev_send(dev, &token, sizeof token, next, 1, 0)))
        return fail(rank, "send", rc);
    if ((rc = xdev_recv(dev, &token, sizeof token, prev, 1, 0, NULL)))
        return fail(rank, "recv", rc);
    token++;
    if (rank != 0 && (rc = xdev_send(dev, &token, sizeof token, next, 1, 0)))
        return fail(rank, "send", rc);
    if (rank == 0 && token != N) {
        fprintf(stderr, "token came back as %d, want %d\n", token, N);
        return 1;
    }

    unsigned char *out = malloc(BIG), *in = malloc(BIG);
    for (int i = 0; i < BIG; i++)
        out[i] = (unsigned char)(i * 7 + rank);
    xdev_request_t r;
    xdev_status_t st;
    if ((rc = xdev_irecv(dev, in, BIG, prev, 2, 0, &r)) || (rc = xdev_send(dev, out, BIG, next, 2, 0)) ||
        (rc = xdev_wait(&r, &st)) || (rc = st.error))
        return fail(rank, "rendezvous exchange", rc);
    for (int i = 0; i < BIG; i++) {
        if (in[i] != (unsigned char)(i * 7 + prev)) {
            fprintf(stderr, "rank %d: byte %d wrong\n", rank, i);
            return 1;
        }
    }
    free(out);
    free(in);
    return xdev_finalize(dev) == XDEV_OK ? 0 : fail(rank, "finalize", rc);
}

/* A rank that does not know the job's secret gets nowhere. */
static int run_impostor(const char *const *peers)
{
    xdev_config_t cfg;
    xdev_config_init(&cfg);
    cfg.rank = 1;
    cfg.size = 2;
    cfg.peers = peers;
    cfg.transport = "tcp";
    cfg.job_secret = "not-the-secret-of-that-job";
    cfg.peer_timeout_ms = 1500;
    xdev_t *dev;
    if (xdev_init(&cfg, &dev) != XDEV_OK)
        return 1;
    int x = 1, rc = xdev_send(dev, &x, sizeof x, 0, 1, 0);
    xdev_finalize(dev);
    if (rc != XDEV_ERR_PEER) {
        fprintf(stderr, "impostor's send returned %s, want XDEV_ERR_PEER\n", xdev_strerror(rc));
        return 1;
    }
    return 0;
}

static int wait_all(pid_t *pids, int n)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        int status;
        waitpid(pids[i], &status, 0);
        bad += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    return bad;
}

int main(void)
{
    static char addr[N][32];
    const char *peers[N];
    for (int i = 0; i < N; i++) {
        snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", free_port());
        peers[i] = addr[i];
    }
    pid_t pids[N];
    for (int i = 0; i < N; i++)
        if ((pids[i] = fork()) == 0)
            _exit(run_rank(i, peers));
    int bad = wait_all(pids, N);

    /* Rank 0 of a real job listens; an impostor with the wrong secret
     * dials it and must be turned away. */
    static char a0[32], a1[32];
    snprintf(a0, sizeof a0, "127.0.0.1:%d", free_port());
    snprintf(a1, sizeof a1, "127.0.0.1:%d", free_port());
    const char *pair[2] = { a0, a1 };
    pid_t p[2];
    if ((p[0] = fork()) == 0) {
        xdev_config_t cfg;
        xdev_config_init(&cfg);
        cfg.rank = 0;
        cfg.size = 2;
        cfg.peers = pair;
        cfg.transport = "tcp";
        cfg.job_secret = "explicit-config-test-secret";
        xdev_t *dev;
        if (xdev_init(&cfg, &dev) != XDEV_OK)
            _exit(1);
        int found = 0;
        xdev_status_t st;
        for (int i = 0; i < 300; i++) { /* 3 s of progress, nothing may arrive */
            xdev_iprobe(dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, 0, &found, &st);
            if (found)
                break;
            usleep(10000);
        }
        xdev_finalize(dev);
        _exit(found ? 1 : 0);
    }
    if ((p[1] = fork()) == 0)
        _exit(run_impostor(pair));
    bad += wait_all(p, 2);

    if (bad) {
        fprintf(stderr, "explicit config: %d process(es) failed\n", bad);
        return 1;
    }
    printf("explicit config: %d-rank ring and rendezvous over a peer table, impostor refused\n", N);
    return 0;
}
