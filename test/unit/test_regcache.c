/*
 * test_regcache.c - the registration cache never hands out a registration
 * of memory that went away, and does reuse one of memory that did not.
 *
 * The callbacks stand in for a transport: each registration gets a new
 * number. Memory is freed and allocated again at the same address by
 * munmap + mmap, by free + malloc of large blocks, by madvise(DONTNEED)
 * and by mremap; after each, a get must register anew (a different
 * number), while a get of untouched memory must hit. With the cache off
 * every get registers. And no unmap ever waits for an event nobody reads:
 * not one that close's deregistrations cause, nor one after close while a
 * child forked from this process lives on.
 */
#include <dirent.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "regcache.h"
#include "xdev.h"
#include "unit_check.h"


static uint64_t next_id, live;

static int fake_reg(void *ctx, void *addr, size_t len, xdev_reg_t *r)
{
    (void)ctx, (void)addr, (void)len;
    r->lkey = ++next_id;
    r->rkey = r->lkey;
    live++;
    return XDEV_OK;
}

static void *unmap_at_dereg; /* set: the next deregistration unmaps it */
static size_t unmap_len;

static void fake_dereg(void *ctx, xdev_reg_t *r)
{
    (void)ctx, (void)r;
    live--;
    if (unmap_at_dereg) { /* as a transport's free may give pages back */
        munmap(unmap_at_dereg, unmap_len);
        unmap_at_dereg = NULL;
    }
}

static uint64_t use(xdev_regcache_t *c, void *buf, size_t len)
{
    xdev_reg_t *r;
    if (xdev_regcache_get(c, buf, len, &r) != XDEV_OK)
        return 0;
    uint64_t id = r->lkey;
    xdev_regcache_put(c, r);
    return id;
}

#define LEN (4u << 20)

static void test_mmap(xdev_regcache_t *c)
{
    char *a = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(a != MAP_FAILED);
    memset(a, 1, LEN);
    uint64_t first = use(c, a, LEN);
    CHECK(first && use(c, a, LEN) == first);       /* hit */
    CHECK(use(c, a + 4096, 100) == first);        /* inside: hit */
    munmap(a, LEN);
    char *b = mmap(a, LEN, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    CHECK(b == a);
    uint64_t again = use(c, b, LEN);
    CHECK(again && again != first);               /* registered anew */
    /* Part of it given back to the kernel: the registration is stale. */
    madvise(b + LEN / 2, 4096, MADV_DONTNEED);
    uint64_t third = use(c, b, LEN);
    CHECK(third && third != again);
    /* Moved away: the old address must not hit. */
    char *m = mremap(b, LEN, LEN, MREMAP_MAYMOVE | MREMAP_FIXED,
                     mmap(NULL, LEN, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    CHECK(m != MAP_FAILED);
    char *d = mmap(a, LEN, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    CHECK(d == a);
    uint64_t fourth = use(c, d, LEN);
    CHECK(fourth && fourth != third);
    munmap(d, LEN);
    munmap(m, LEN);
}

/* Large blocks come from mmap and go back by munmap. (glibc's threshold
 * would otherwise rise after the first free and serve them from the heap,
 * where a freed block keeps its pages: a hit is then right.) */
static void test_malloc(xdev_regcache_t *c)
{
    const size_t len = 8u << 20;
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    int same = 0;
    for (int i = 0; i < 8; i++) {
        char *p = malloc(len);
        memset(p, 2, len);
        uint64_t first = use(c, p, len);
        CHECK(first && use(c, p, len) == first);
        free(p);
        char *q = malloc(len);
        memset(q, 3, len);
        if (q == p) {
            same++;
            uint64_t again = use(c, q, len);
            CHECK(again && again != first);
        }
        free(q);
    }
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    /* The sanitizers' allocators keep freed blocks in quarantine: the same
     * address never comes back, so there is nothing stale to catch. */
    if (!same)
        fprintf(stderr, "malloc reuse: the sanitizer's allocator never reuses an address; "
                        "checked in the plain build\n");
#else
    CHECK(same > 0); /* otherwise this proved nothing */
#endif
}

/* A revoked registration serves its holder to the end, is deregistered at
 * its last put, and is not found again. */
static void test_revoke(xdev_regcache_t *c)
{
    char *a = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(a != MAP_FAILED);
    uint64_t first = use(c, a, LEN);
    xdev_reg_t *r, *s;
    CHECK(first && xdev_regcache_get(c, a, LEN, &r) == XDEV_OK && r->lkey == first);
    CHECK(xdev_regcache_get(c, a, 64, &s) == XDEV_OK && s == r); /* a second holder */
    uint64_t before = live;
    xdev_regcache_revoke(c, r);
    xdev_regcache_put(c, s);
    CHECK(live == before && r->lkey == first); /* still held */
    xdev_regcache_put(c, r);
    CHECK(live == before - 1);
    uint64_t again = use(c, a, LEN);
    CHECK(again && again != first);
    munmap(a, LEN);
}

static void test_off(void)
{
    xdev_regcache_params_t p = { .reg = fake_reg, .dereg = fake_dereg,
                                 .mode = XDEV_REGCACHE_OFF };
    xdev_regcache_t *c;
    CHECK(xdev_regcache_open(&p, &c) == XDEV_OK);
    static char buf[65536];
    uint64_t a = use(c, buf, sizeof buf), b = use(c, buf, sizeof buf);
    CHECK(a && b && a != b);
    CHECK(live == 0);
    /* held when the transport closes (a request abandoned at finalize):
     * close deregisters it, or the domain would not close */
    xdev_reg_t *held[2];
    CHECK(xdev_regcache_get(c, buf, 100, &held[0]) == XDEV_OK);
    CHECK(xdev_regcache_get(c, buf + 8192, 100, &held[1]) == XDEV_OK);
    xdev_regcache_put(c, held[1]); /* one put back first: off the list */
    CHECK(live == 1);
    xdev_regcache_close(c);
    CHECK(live == 0);
}

/* A thread, not a signal handler: a stuck munmap sleeps until a fatal
 * signal, and this thread's _exit is one. */
static void *hung(void *what)
{
    sleep(10);
    fprintf(stderr, "test_regcache: hung: %s waited for a userfaultfd reader\n",
            (const char *)what);
    _exit(1);
}

static pthread_t watchdog(const char *what)
{
    pthread_t t;
    if (pthread_create(&t, NULL, hung, (void *)what) != 0)
        _exit(1);
    return t;
}

static void watchdog_off(pthread_t t)
{
    pthread_cancel(t);
    pthread_join(t, NULL);
}

/* Two mappings, each registered and so watched, and one use of each. */
static void two_watched(xdev_regcache_t **c, char **a, char **b, size_t len)
{
    xdev_regcache_params_t p = { .reg = fake_reg, .dereg = fake_dereg,
                                 .mode = XDEV_REGCACHE_UFFD };
    CHECK(xdev_regcache_open(&p, c) == XDEV_OK);
    *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(*a != MAP_FAILED && *b != MAP_FAILED);
    memset(*a, 1, len);
    memset(*b, 1, len);
    CHECK(use(*c, *a, len) && use(*c, *b, len));
}

/* Close deregisters b's entry first (the newest), and that unmaps a. The
 * event thread is gone by then, so unless the userfaultfd was closed with
 * it the munmap waits for ever. */
static void test_close_unmaps(void)
{
    xdev_regcache_t *c;
    char *a, *b;
    size_t len = 64 * 1024;
    two_watched(&c, &a, &b, len);
    unmap_at_dereg = a;
    unmap_len = len;
    pthread_t t = watchdog("an unmap in close's deregistrations");
    xdev_regcache_close(c);
    watchdog_off(t);
    CHECK(unmap_at_dereg == NULL && live == 0);
    munmap(b, len);
}

/* A child forked with the cache open lives on past its close: the parent
 * then unmaps what it had registered, which must not wait. */
static void test_fork_child(void)
{
    xdev_regcache_t *c;
    char *a, *b;
    size_t len = 64 * 1024;
    two_watched(&c, &a, &b, len);
    int go[2];
    CHECK(pipe(go) == 0);
    pid_t child = fork();
    if (child == 0) { /* wait for the parent to be done, without exec */
        char x;
        close(go[1]);
        _exit(read(go[0], &x, 1) == 0 ? 0 : 1);
    }
    CHECK(child > 0);
    close(go[0]);
    pthread_t t = watchdog("an unmap after close, with a forked child alive,");
    xdev_regcache_close(c);
    munmap(a, len);
    munmap(b, len);
    watchdog_off(t);
    CHECK(live == 0);
    close(go[1]);
    int status;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0);
}

/* The threads of this process, as the kernel counts them. */
static int threads(void)
{
    DIR *dir = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; dir && (e = readdir(dir));)
        n += e->d_name[0] != '.';
    if (dir)
        closedir(dir);
    return n;
}

int main(void)
{
    test_off();
    xdev_regcache_params_t p = { .reg = fake_reg, .dereg = fake_dereg,
                                 .mode = XDEV_REGCACHE_UFFD };
    xdev_regcache_t *c;
    int before = threads();
    int rc = xdev_regcache_open(&p, &c);
    if (rc != XDEV_OK) {
        fprintf(stderr, "userfaultfd is not available to this process (%d); the cache "
                        "would run with XDEV_REGCACHE=off here\n", rc);
        return 1;
    }
    CHECK(xdev_regcache_mode(c) == XDEV_REGCACHE_UFFD);
    /* An open cache costs no thread (a process of one keeps glibc's
     * single-threaded locks) until it watches a range. (More than one
     * then: TSan starts a thread of its own with the first.) */
    CHECK(before > 0 && threads() == before);
    static char page[4096] __attribute__((aligned(4096)));
    CHECK(use(c, page, sizeof page) && threads() > before);
    test_mmap(c);
    test_malloc(c);
    test_revoke(c);
    uint64_t regs, hits;
    xdev_regcache_stats(c, &regs, &hits);
    CHECK(hits > 0 && regs > 0);
    xdev_regcache_close(c);
    CHECK(live == 0);
    test_close_unmaps();
    test_fork_child();
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures != 0;
}
