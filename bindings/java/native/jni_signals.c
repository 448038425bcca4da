/*
 * jni_signals.c - give the JVM back the signals a dependency took.
 *
 * Debian's libfabric, which libxdev links for its ofi transport, pulls in
 * libinfinipath, whose constructor installs crash-report handlers for
 * SIGINT, SIGILL, SIGABRT, SIGBUS, SIGSEGV and SIGTERM when it is loaded
 * (unless IPATH_NO_BACKTRACE is set in the environment). The JVM raises
 * SIGSEGV on purpose (implicit null checks, safepoint polls) and handles
 * SIGINT and SIGTERM itself (shutdown hooks), so with those handlers in
 * place the first such signal kills it: "java terminated with signal 11".
 *
 * By the time this library's code runs the JVM's own handlers are gone,
 * but the JVM installed the same ones on signals libinfinipath leaves
 * alone: its fault handler on SIGFPE, its shutdown handler on SIGHUP.
 * Every signal whose handler is libinfinipath's gets its sibling's back
 * (SIGABRT the default). Nothing is done where the sibling's handler is
 * not the JVM's (java -Xrs, or libjsig preloaded, which keeps the JVM's
 * handlers in place anyway), nor where libinfinipath took nothing.
 */
#include <dlfcn.h>
#include <signal.h>
#include <string.h>

#include "xdev_jni.h"

/* The library a signal's handler lives in, or "" for SIG_DFL, SIG_IGN. */
static const char *handler_library(const struct sigaction *sa)
{
    Dl_info info;
    void *fn = (sa->sa_flags & SA_SIGINFO) ? (void *)sa->sa_sigaction : (void *)sa->sa_handler;
    if (fn == (void *)SIG_DFL || fn == (void *)SIG_IGN || !dladdr(fn, &info) || !info.dli_fname)
        return "";
    return info.dli_fname;
}

static void take_back(int sig, int sibling)
{
    struct sigaction now, jvm;
    if (sigaction(sig, NULL, &now) != 0 || !strstr(handler_library(&now), "libinfinipath"))
        return;
    if (sibling == 0) {
        memset(&jvm, 0, sizeof jvm);
        jvm.sa_handler = SIG_DFL;
    } else if (sigaction(sibling, NULL, &jvm) != 0 || !strstr(handler_library(&jvm), "libjvm")) {
        return;
    }
    sigaction(sig, &jvm, NULL);
}

void restore_jvm_signals(void)
{
    take_back(SIGSEGV, SIGFPE);
    take_back(SIGBUS, SIGFPE);
    take_back(SIGILL, SIGFPE);
    take_back(SIGINT, SIGHUP);
    take_back(SIGTERM, SIGHUP);
    take_back(SIGABRT, 0);
}
