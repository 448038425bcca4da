/*
 * liveness.c - is a process on this host still there? For transports that
 * know their peers' pids (shm, and ofi for peers in our PID namespace).
 *
 * A pidfd (Linux 5.3) becomes readable when the process exits, zombie or
 * not, and cannot be fooled by a reused pid. Without one, kill(pid, 0)
 * failing with ESRCH says the same, a little later (once the zombie is
 * reaped).
 */
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "transport.h"

int xdev_pidfd_open(int pid)
{
#ifdef SYS_pidfd_open
    return pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
#else
    (void)pid;
    return -1;
#endif
}

bool xdev_process_gone(int pid)
{
    return pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH);
}
