/*
 * regcache.h - a registration (pin-down) cache for transports whose
 * hardware must register memory before it moves it (ibv, ofi).
 *
 * Registering a buffer pins its pages and costs a system call and page
 * table walk per page; applications send from the same buffers again and
 * again, so a registration is kept after use and found again (IBVX 4.4.5).
 * The danger is an application that frees a buffer and gets the same
 * address back for new memory: a kept registration still points at the
 * old pages, so a transfer would send stale data or write into memory the
 * application no longer owns. A cache must therefore learn when memory
 * goes away. Hooking malloc/free is not an option (JVMs and custom
 * allocators crash under it); what remains:
 *
 *   off   register for each use, deregister after: always correct.
 *   uffd  the kernel tells us: the cached ranges are registered with a
 *         userfaultfd (write-protect mode, which intercepts no fault since
 *         nothing is ever write-protected) asking only for its UNMAP,
 *         REMOVE (madvise DONTNEED/free trimming) and REMAP events. The
 *         kernel holds an munmap until its event has been read, so a
 *         thread of ours reads them and drops the overlapping entries
 *         before the application can map anything new there. Memory that
 *         userfaultfd cannot watch (file mappings) is never cached.
 *
 * XDEV_REGCACHE=off|uffd|auto (default auto: uffd where the kernel allows
 * it to this process, else off). The transport passes its reg/dereg
 * callbacks; entries are found by linear search among at most
 * XDEV_REGCACHE_MAX (default 64) ranges, least recently used evicted.
 */
#ifndef XDEV_REGCACHE_H
#define XDEV_REGCACHE_H

#include <stddef.h>
#include <stdint.h>

/* A registration, as the transport's callback made it. */
typedef struct xdev_reg {
    void *handle;       /* transport's (an ibv_mr, a fid_mr) */
    uint64_t lkey;      /* what local work requests name */
    uint64_t rkey;      /* what a peer names in remote access */
    /* the cache's own */
    uintptr_t start, end;
    unsigned refs;
    uint64_t last_use;
    int valid;          /* 0: the memory went away; dropped at refs 0 */
    int cached;
    struct xdev_reg *next;
} xdev_reg_t;

/* In the order of the choices of XDEV_REGCACHE and XDEV_IBV_REGCACHE
 * (vars.c), so that the option's index is the mode. */
enum { XDEV_REGCACHE_OFF = 0, XDEV_REGCACHE_UFFD = 1, XDEV_REGCACHE_AUTO = 2 };

typedef struct xdev_regcache_params {
    /* Register [addr, addr+len) filling handle, lkey, rkey: XDEV_OK or an
     * error. May be called with the cache's lock held, never from the
     * event thread. */
    int (*reg)(void *ctx, void *addr, size_t len, xdev_reg_t *r);
    void (*dereg)(void *ctx, xdev_reg_t *r);
    void *ctx;
    int mode;           /* XDEV_REGCACHE_* */
    unsigned max_entries; /* 0: 64 */
} xdev_regcache_params_t;

typedef struct xdev_regcache xdev_regcache_t;

/* In mode uffd (or auto, where allowed) this opens the userfaultfd; the
 * event thread that reads it starts with the first range cached. */
int xdev_regcache_open(const xdev_regcache_params_t *p, xdev_regcache_t **out);
/* The mode in force (auto resolved). */
int xdev_regcache_mode(const xdev_regcache_t *c);
/* A registration covering [addr, addr+len), held until put. */
int xdev_regcache_get(xdev_regcache_t *c, void *addr, size_t len, xdev_reg_t **r);
void xdev_regcache_put(xdev_regcache_t *c, xdev_reg_t *r);
/* r leaves the cache: its last put deregisters it, so that a key a peer
 * was given stops working once the request that exposed it ends. */
void xdev_regcache_revoke(xdev_regcache_t *c, xdev_reg_t *r);
/* Counters, for tests and the benchmark: registrations made, hits. */
void xdev_regcache_stats(xdev_regcache_t *c, uint64_t *regs, uint64_t *hits);
void xdev_regcache_close(xdev_regcache_t *c);

#endif
