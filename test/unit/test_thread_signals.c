/*
 * test_thread_signals.c - the library's own threads take no
 * process-directed signal.
 *
 * An application that handles a signal through a signalfd blocks it in its
 * own threads and reads it from the fd. A thread of ours that left it open
 * would be the one the kernel delivers it to, and the default action
 * (terminate, for SIGUSR1) would end the process instead. Both threads the
 * library starts are checked: the progress thread (XDEV_FLAG_PROGRESS_THREAD,
 * started by xdev_init) and the registration cache's event thread (started
 * by its first watched range). Each is started while SIGUSR1 is open in
 * the calling thread, as an application's would be before it blocks it.
 */
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "../../src/kit/regcache.h"
#include "xdev.h"

static int failures;
#define CHECK(c) \
    do { if (!(c)) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); failures++; } } while (0)

/* Whether every other thread of the process is asleep. A thread just
 * created runs with every signal blocked until glibc sets the mask it
 * inherited, so a signal sent before then would pass the test; ours go
 * to sleep (poll, a nap) only after that. */
static int others_asleep(void)
{
    DIR *dir = opendir("/proc/self/task");
    int asleep = dir != NULL;
    for (struct dirent *e; dir && (e = readdir(dir));) {
        if (e->d_name[0] == '.' || atoi(e->d_name) == (int)syscall(SYS_gettid))
            continue;
        char path[64], stat[512] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            size_t n = fread(stat, 1, sizeof stat - 1, f);
            stat[n] = 0;
            fclose(f);
        }
        const char *state = strrchr(stat, ')'); /* after the name, which may hold one */
        asleep &= !f || (state && state[1] == ' ' && state[2] == 'S');
    }
    if (dir)
        closedir(dir);
    return asleep;
}

/* Block SIGUSR1 here, send it to the process, and read it from a
 * signalfd. Were it open in another thread, the kernel would deliver it
 * there and the process would end. */
static int reaches_signalfd(void)
{
    for (int i = 0; i < 2000 && !others_asleep(); i++)
        usleep(1000);
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &usr1, NULL);
    int fd = signalfd(-1, &usr1, SFD_CLOEXEC);
    int ok = fd >= 0 && kill(getpid(), SIGUSR1) == 0;
    struct pollfd p = { .fd = fd, .events = POLLIN };
    struct signalfd_siginfo si;
    ok = ok && poll(&p, 1, 5000) == 1 && read(fd, &si, sizeof si) == sizeof si &&
         si.ssi_signo == SIGUSR1;
    if (fd >= 0)
        close(fd);
    pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
    return ok;
}

static void open_usr1(void)
{
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
}

static void test_progress_thread(void)
{
    xdev_config_t cfg;
    xdev_config_init(&cfg);
    cfg.flags |= XDEV_FLAG_PROGRESS_THREAD;
    xdev_t *dev;
    open_usr1();
    CHECK(xdev_init(&cfg, &dev) == XDEV_OK);
    CHECK(reaches_signalfd());
    CHECK(xdev_finalize(dev) == XDEV_OK);
}

static int fake_reg(void *ctx, void *addr, size_t len, xdev_reg_t *r)
{
    (void)ctx, (void)addr, (void)len;
    r->lkey = r->rkey = 1;
    return XDEV_OK;
}

static void fake_dereg(void *ctx, xdev_reg_t *r)
{
    (void)ctx, (void)r;
}

static void test_regcache_thread(void)
{
    xdev_regcache_params_t p = { .reg = fake_reg, .dereg = fake_dereg,
                                 .mode = XDEV_REGCACHE_UFFD };
    xdev_regcache_t *c;
    if (xdev_regcache_open(&p, &c) != XDEV_OK) {
        fprintf(stderr, "userfaultfd is not available to this process\n");
        failures++;
        return;
    }
    static char page[4096] __attribute__((aligned(4096)));
    open_usr1();
    xdev_reg_t *r;
    CHECK(xdev_regcache_get(c, page, sizeof page, &r) == XDEV_OK);
    xdev_regcache_put(c, r);
    CHECK(reaches_signalfd());
    xdev_regcache_close(c);
}

int main(void)
{
    test_progress_thread();
    test_regcache_thread();
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures != 0;
}
