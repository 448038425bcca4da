/*
 * wake_ref.c - the reference for xdev_fd's wake-up latency: two processes
 * ping-pong one byte over a pair of pipes, each asleep in poll() until the
 * byte comes. What the kernel charges for a sleep and a wake-up on this
 * machine, to set beside examples/event_loop.
 *
 *   wake-ref [ROUNDS]
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int hop(int in, int out, char *c, int wait_first)
{
    struct pollfd p = { .fd = in, .events = POLLIN };
    if (!wait_first && write(out, c, 1) != 1)
        return -1;
    if (poll(&p, 1, -1) != 1 || read(in, c, 1) != 1)
        return -1;
    if (wait_first && write(out, c, 1) != 1)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5000, there[2], back[2];
    char c = 'x';
    if (rounds < 1 || pipe(there) || pipe(back))
        return 2;
    pid_t child = fork();
    if (child < 0)
        return 2;
    if (child == 0) {
        for (int i = 0; i < rounds; i++)
            if (hop(there[0], back[1], &c, 1))
                _exit(1);
        _exit(0);
    }
    struct timespec t0, t1;
    int rc = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < rounds && !rc; i++)
        rc = hop(back[0], there[1], &c, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int status = 1;
    waitpid(child, &status, 0);
    if (rc || status)
        return 1;
    double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3;
    printf("pipe + poll() ping-pong            one-way latency %8.2f us\n", us / rounds / 2);
    return 0;
}
