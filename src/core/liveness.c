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
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "transport.h"

void xdev_host_token(char *out, size_t cap, const char *const *namespaces, int n)
{
    char boot[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f) {
        if (!fgets(boot, sizeof boot, f))
            boot[0] = '\0';
        fclose(f);
    }
    boot[strcspn(boot, "\n")] = '\0';
    size_t len = (size_t)snprintf(out, cap, "%s", boot[0] ? boot : "-");
    for (int i = 0; i < n && len < cap; i++) {
        char path[64], ns[64];
        snprintf(path, sizeof path, "/proc/self/ns/%s", namespaces[i]);
        ssize_t k = readlink(path, ns, sizeof ns - 1);
        ns[k > 0 ? k : 0] = '\0';
        len += (size_t)snprintf(out + len, cap - len, "/%s", ns[0] ? ns : "-");
    }
    for (char *c = out; *c; c++) /* it travels in space-separated records */
        if (*c == ' ')
            *c = '_';
}

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

/* A process being killed loses its memory before its pidfd turns readable
 * (the kernel tears the address space down first), and process_vm_readv
 * then fails with ESRCH. While the memory is there, reading address 0
 * fails with EFAULT instead (or EPERM, where ptrace rules forbid it). */
bool xdev_process_leaving(int pid)
{
    char byte;
    struct iovec local = { &byte, 1 }, remote = { NULL, 1 };
    return pid <= 0 || (process_vm_readv(pid, &local, 1, &remote, 1, 0) < 0 && errno == ESRCH);
}

bool xdev_process_exited(int pidfd, int pid)
{
    if (pidfd >= 0) {
        struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
        return poll(&pfd, 1, 0) > 0; /* -1 (a signal cut it short) says nothing */
    }
    return pid > 0 && xdev_process_gone(pid);
}
