/*
 * test_liveness.c - xdev_process_exited, which shm and ofi ask about their
 * peers: a live child has not exited, not even while signals keep cutting
 * the pidfd's poll short (EINTR once took a live peer for a dead one); an
 * exited one has, before it is reaped (pidfd) and after (kill(pid, 0)); a
 * pid not known yet (0) has not. And xdev_process_leaving, which ofi asks
 * before it maps a peer: not of a live child, but of one that has exited,
 * reaped or not.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "transport.h"
#include "unit_check.h"

static volatile sig_atomic_t ticks;

static void on_tick(int sig)
{
    (void)sig;
    ticks++;
}

/* Ask about a live child over and over while a timer interrupts us every
 * 20 us; stop after enough interruptions, or a wrong answer. */
static void ask_under_signals(int pidfd, int pid)
{
    struct sigaction sa = { .sa_handler = on_tick }; /* no SA_RESTART: poll sees EINTR */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval every = { .it_interval = { 0, 20 }, .it_value = { 0, 20 } };
    setitimer(ITIMER_REAL, &every, NULL);
    long asked = 0;
    bool exited = false;
    while (ticks < 20000 && asked < 50000000 && !exited) {
        exited = xdev_process_exited(pidfd, pid);
        asked++;
    }
    setitimer(ITIMER_REAL, &(struct itimerval){ 0 }, NULL);
    CHECK(!exited);
    CHECK(ticks >= 20000);
    printf("asked %ld times through %d signals: %s\n", asked, (int)ticks,
           exited ? "EXITED (wrong)" : "alive");
}

int main(void)
{
    int child = fork();
    if (child == 0) {
        pause(); /* until killed */
        _exit(0);
    }
    int pidfd = xdev_pidfd_open(child);
    CHECK(!xdev_process_exited(pidfd, child));
    CHECK(!xdev_process_exited(-1, child));
    CHECK(!xdev_process_exited(-1, 0));
    CHECK(!xdev_process_leaving(child));
    if (pidfd >= 0)
        ask_under_signals(pidfd, child);
    else
        printf("no pidfds here: the signal case is the pidfd's\n");

    kill(child, SIGKILL);
    siginfo_t info;
    waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT); /* a zombie, not reaped */
    if (pidfd >= 0)
        CHECK(xdev_process_exited(pidfd, child));
    CHECK(xdev_process_leaving(child));
    waitpid(child, NULL, 0);
    CHECK(xdev_process_exited(-1, child));
    CHECK(xdev_process_leaving(child));
    if (pidfd >= 0) {
        CHECK(xdev_process_exited(pidfd, child));
        close(pidfd);
    }
    if (failures)
        fprintf(stderr, "%d checks failed\n", failures);
    return failures != 0;
}
