/*
 * thread.h - start a thread of the library's own (the progress thread, the
 * registration cache's event thread) with every signal blocked.
 *
 * A thread inherits the signal mask of the thread that creates it, and
 * ours are created inside whatever call first needs them: a rendezvous
 * send, xdev_init. With signals open there, a process-directed signal
 * (SIGINT, SIGTERM, SIGCHLD, a JVM's SIGQUIT) may be delivered to our
 * thread, and the application's handler then runs where it never expects
 * to, beside a thread that holds the device lock or waits on a munmap.
 * Blocked, the kernel picks one of the application's threads instead.
 */
#ifndef XDEV_KIT_THREAD_H
#define XDEV_KIT_THREAD_H

#include <pthread.h>
#include <signal.h>

/* pthread_create's result. The caller's mask is left as it was. */
static inline int xdev_thread_start(pthread_t *t, void *(*run)(void *), void *arg)
{
    sigset_t all, was;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &was);
    int rc = pthread_create(t, NULL, run, arg);
    pthread_sigmask(SIG_SETMASK, &was, NULL);
    return rc;
}

#endif
