/*
 * ofi_lib.c - libfabric, loaded when the ofi transport first needs it.
 *
 * libxdev does not link libfabric. Debian's pulls in the PSM libraries,
 * whose constructors replace the process's SIGSEGV, SIGBUS, SIGILL,
 * SIGABRT, SIGINT and SIGTERM handlers and spend about 200 ms pinning
 * and sleeping: linked, every program on libxdev paid that at start,
 * whether it used ofi or not. Loaded here, only a device that asks for
 * ofi (or auto looking for a fast network to another host) pays the time,
 * and the handlers are put back.
 *
 * Of libfabric's API only a few entry points are functions (the rest are
 * inline calls through each object's ops table); ofi_lib holds them.
 */
#include <dlfcn.h>
#include <pthread.h>

#include "ofi.h"

ofi_lib_t ofi_lib;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_rc = XDEV_ERR_INIT;

void ofi_signals_save(ofi_signals_t *s)
{
    for (int sig = 1; sig < NSIG; sig++)
        if (sigaction(sig, NULL, &s->act[sig]) != 0)
            s->act[sig].sa_handler = SIG_ERR; /* no such signal: nothing to keep */
}

void ofi_signals_restore(const ofi_signals_t *s)
{
    struct sigaction now;
    for (int sig = 1; sig < NSIG; sig++)
        if (s->act[sig].sa_handler != SIG_ERR && sigaction(sig, NULL, &now) == 0 &&
            now.sa_handler != s->act[sig].sa_handler)
            sigaction(sig, &s->act[sig], NULL);
}

static void load(void)
{
    ofi_signals_t saved;
    ofi_signals_save(&saved);
    void *h = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
    ofi_signals_restore(&saved);
    if (!h) {
        ofi_say("cannot load libfabric: %s", dlerror());
        return;
    }
    /* dlsym returns void *; POSIX guarantees it converts to a function. */
    *(void **)&ofi_lib.getinfo = dlsym(h, "fi_getinfo");
    *(void **)&ofi_lib.freeinfo = dlsym(h, "fi_freeinfo");
    *(void **)&ofi_lib.dupinfo = dlsym(h, "fi_dupinfo");
    *(void **)&ofi_lib.fabric = dlsym(h, "fi_fabric");
    *(void **)&ofi_lib.strerror = dlsym(h, "fi_strerror");
    if (!ofi_lib.getinfo || !ofi_lib.freeinfo || !ofi_lib.dupinfo || !ofi_lib.fabric ||
        !ofi_lib.strerror) {
        ofi_say("libfabric.so.1 lacks fi_getinfo, fi_freeinfo, fi_dupinfo, fi_fabric or fi_strerror");
        dlclose(h);
        return;
    }
    load_rc = XDEV_OK; /* kept loaded for the life of the process */
}

int ofi_lib_load(void)
{
    pthread_once(&load_once, load);
    return load_rc;
}
