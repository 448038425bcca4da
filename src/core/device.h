/*
 * device.h - the insides of a device, shared by the core's files.
 */
#ifndef XDEV_DEVICE_H
#define XDEV_DEVICE_H

#include <pthread.h>
#include <sys/single_threaded.h>
#include <stdbool.h>
#include "../kit/hot.h"
#include "match.h"
#include "payloads.h"
#include "transport.h"
#include "xdev.h"

enum req_kind { REQ_SEND = 1, REQ_RECV = 2 };

/* Where a request is in its protocol. */
enum req_phase {
    PH_SEND_EAGER,    /* eager message queued in the transport */
    PH_SEND_SYNC,     /* eager-sync: waiting for F_WRITTEN and F_ACKED */
    PH_WAIT_REPLY,    /* RNDZ_START on its way; waiting for the receiver's
                       * RNDZ_REPLY, or RNDZ_END after it read the data */
    PH_RNDZ_DATA,     /* RNDZ_DATA or RNDZ_WRITTEN queued in the transport */
    PH_RMA,           /* a transport rma op carries the data */
    PH_SELF_WAIT,     /* send to self waiting in the unexpected queue */
    PH_RECV_POSTED,   /* in the posted queue */
    PH_RECV_FILLING,  /* matched; payload on its way into the buffer */
    PH_WAIT_DATA,     /* RNDZ_REPLY on its way; waiting for RNDZ_DATA, or
                       * RNDZ_WRITTEN once the sender wrote the data */
    PH_DONE,
};

enum req_flag {
    F_SYNC = 1 << 0,
    F_WRITTEN = 1 << 1, /* eager-sync data has left */
    F_ACKED = 1 << 2,   /* eager-sync: the receiver matched it */
    F_IN_CQ = 1 << 3,   /* on the completion queue, not yet handed out */
    F_MEM = 1 << 4,     /* buf is exposed to the peer (xreq_t.mem) */
    F_PRIVATE = 1 << 5, /* a blocking call's own: never on the completion
                         * queue, so xdev_peek cannot hand it to another
                         * thread */
    F_OPEN = 1 << 6,    /* a matched rendezvous receive: on its sender's
                         * open list (peer_t) until its data is in */
    F_HELD = 1 << 7,    /* a receive whose data is in (or that failed),
                         * held back on its sender's held list behind an
                         * open one */
    F_FETCH = 1 << 8,   /* the core's own receive of a claimed
                         * rendezvous (claims.c: fetch_claim): it completes
                         * into the message, never to a caller */
    F_LISTED = 1 << 9,  /* met already in the list xdev_testsome or
                         * xdev_waitsome is checking (some.c), for that
                         * check alone */
};

/* What a txop carries (xdev_txop_t.owner). */
/* A request's own op carries its data (EAGER, RNDZ_DATA) or its last word
 * (RNDZ_WRITTEN); messages that other messages may overtake on their way
 * back (a SYNC_ACK, RNDZ_START, RNDZ_REPLY, RNDZ_END) travel in malloc'd
 * control ops, so a reply can never find the request's op still queued. */
enum op_owner { OP_REQ = 1, OP_CONTROL = 2 }; /* never XDEV_OP_OWN */

typedef struct xreq {
    uint64_t magic;       /* REQ_MAGIC ^ its address while active; cleared
                           * when reaped */
    xdev_t *dev;
    uint64_t id;          /* handle peers use to name this request */
    /* A completed request is on the completion queue; a receive is on its
     * sender's open or held list (F_OPEN, F_HELD) before it completes. */
    union {
        struct { struct xreq *cq_prev, *cq_next; };
        struct { struct xreq *pl_prev, *pl_next; };
    };
    void *buf;            /* a vector request's xdev_iov_t array when niov */
    size_t len;           /* bytes in all (a vector's total) */
    int peer, tag, ctx;
    uint8_t kind, phase;
    uint16_t flags;
    uint8_t rndz_mode;    /* XDEV_RNDZ_* a rendezvous send asked for */
    uint8_t niov;         /* pieces of a vector request, 0 for one buffer */
    uint8_t ctl_claim;    /* a receive's claim on cached control ops */
    union {
        uint64_t seq;     /* posted: posting order, for wildcard fairness */
        uint64_t arrival; /* matched: the message's place in its sender's
                           * stream (peer_t.arrivals) */
    };
    xdev_mnode_t mnode;   /* posted-queue link */
    uint64_t remote_id;   /* the peer's request id */
    xdev_status_t status;
    xdev_txop_t op;
    /* A rendezvous either moves the data by rma from this side or exposes
     * buf for the peer to do it, never both. */
    union {
        xdev_rmaop_t rma;
        xdev_mem_t mem;   /* valid with F_MEM */
    };
} xreq_t;

#define REQ_MAGIC 0x78646576726571ull /* "xdevreq" */

_Static_assert(sizeof(xreq_t) <= sizeof(((xdev_request_t *)0)->opaque_),
               "xdev_request_t has room for a request");

static inline xreq_t *xreq_of(xdev_request_t *r) { return (xreq_t *)(void *)r->opaque_; }
static inline xdev_request_t *public_of(xreq_t *r)
{
    return (xdev_request_t *)(void *)((char *)r - offsetof(xdev_request_t, opaque_));
}

enum ux_state {
    UX_ARRIVING, /* payload being placed into data */
    UX_READY,    /* complete: eager data buffered, or a rendezvous offer */
    UX_DEFERRED, /* payload still with the transport (or a self sender) */
    UX_LOST,     /* its sender died before it could arrive whole: the
                  * receive that matches it fails with XDEV_ERR_PEER */
};

/* Unexpected payloads up to this long are kept in their entry: a burst of
 * short messages that arrive before their receives (a collective's root
 * running ahead) needs no allocation per message for them. */
#define UX_SMALL 64

/* An unexpected message: arrived before a receive matched it. */
typedef struct uxmsg {
    xdev_mnode_t node[4];        /* see match.h: exact and the 3 wildcard keys */
    struct uxmsg *prev, *next;   /* all entries, in arrival order */
    int src, tag, ctx;
    uint32_t type;
    uint8_t state;
    bool claimed;                /* taken out of matching by a matched
                                  * probe: only its handle receives it */
    bool kept;                   /* claimed and whole when its sender died:
                                  * still received (xdev_core_peer_failed) */
    uint64_t claim;              /* which claim, for the handle to check */
    struct uxmsg *cl_prev, *cl_next; /* xdev.claimed, while claimed */
    struct claim_fetch *fetch;   /* the core reading a claimed rendezvous's
                                  * data ahead of its handle (claims.c) */
    uint64_t arrival;            /* place in its sender's stream */
    bool queued;                 /* still in the match lists */
    size_t len;                  /* full message length */
    uint64_t remote_id;          /* sender's request id (sync, rendezvous) */
    uint64_t remote_addr;        /* rendezvous: the sender's exposed buffer */
    uint64_t remote_key;
    uint8_t rndz_mode;           /* rendezvous: XDEV_RNDZ_* the sender asked for */
    void *data;                  /* buffered payload (small, or from
                                  * xdev_payload_get), or NULL */
    size_t data_cap;             /* bytes of data from xdev_payload_get */
    size_t charge;               /* bytes counted against the bound */
    xreq_t *rreq;                /* receive that matched it before it was READY */
    void *token;                 /* transport connection holding a deferred payload */
    xreq_t *self_sreq;           /* deferred send to self */
    unsigned char small[UX_SMALL]; /* a short payload, in the entry itself */
} uxmsg_t;

/*
 * What a receiver has of a sender is always a prefix of what it sent, also
 * when the sender dies: receives of one sender's messages complete in the
 * order the messages arrived. A message is numbered as it arrives
 * (arrivals); a matched rendezvous receive stays on `open` until its data
 * is in, and a later message's receive that is done meanwhile waits on
 * `held`. When the sender dies, the first message that cannot be completed
 * is the cut: it and everything after it fail (peer_failed.c).
 */
typedef struct peer {
    bool dead;
    bool ordering;      /* open or cut: its receives take the ordered
                         * path (recv_order.c); else they need not */
    uint8_t tp;         /* index into xdev.tps of the transport serving it */
    size_t eager_limit; /* largest eager message the peer may send us */
    size_t rndz_from;   /* smallest message we send it by rendezvous: past our
                         * eager limit, or lower where its transport copies
                         * such messages once (xdev_core_peer_rndz_from) */
    uint64_t arrivals;  /* messages (eager, rendezvous offers) it sent us */
    uint64_t bytes_received, msgs_sent, bytes_sent; /* for xdev_stats */
    uint64_t cut;       /* arrival number of its first lost message, or
                         * UINT64_MAX while nothing is lost */
    struct xreq *open;  /* by arrival: see above */
    struct xreq *held;
    uint32_t claimed_offers; /* claimed rendezvous offers whose data is
                              * neither received nor fetched */
    uint32_t posted;    /* posted receives that name it as their source */
} peer_t;

#define XDEV_MAX_TRANSPORTS 2

typedef struct req_slot {
    xreq_t *req;
    uint32_t gen;
    uint32_t next_free;
} req_slot_t;

struct xdev {
    int rank, size;
    unsigned flags;
    bool watching_all;      /* every peer watched, for a wildcard receive
                             * that a death must fail (proto_watch_all) */
    unsigned deaths;        /* peers found dead, ever: a blocking wildcard
                             * probe that sees it move fails (probe_done) */
    xdev_config_t cfg;      /* with strings owned by the device */
    char *cfg_strings;
    char **options;         /* per xdev_vars entry: its value, or NULL */
    char *boot_dir;         /* XDEV_BOOT_DIR as at init, or NULL */
    unsigned boot_nth;      /* devices this process started before this one
                             * from the same launcher (xdev_boot_load) */
    pthread_mutex_t lock;
    bool lock_skipped;      /* the call in progress took no lock (dev_lock) */
    unsigned lock_waiters;  /* threads blocked in dev_lock (atomic) */
    unsigned lock_turns;    /* times a blocked thread got it, ever (atomic) */
    unsigned clock_stride;  /* a spinning wait's polls per clock reading */
    bool finalizing;
    uint64_t activity;      /* arrivals and finished sends, ever: a waiter
                             * that sees it move keeps spinning */
    uint64_t moved;         /* the same for parts of long messages
                             * (xdev_core_moved), seen by waiters only */
    uint64_t completions;   /* requests completed, ever: waitsome looks at
                             * its requests only when this moved */
    xdev_txop_t *ctl_free;  /* cached control ops (proto_claim_ctl) */
    size_t ctl_nfree, ctl_claimed;

    struct {
        const xdev_tp_ops_t *ops;
        xdev_tp_t *tp;
        size_t short_max; /* ops->short_max, at most the eager limit */
    } tps[XDEV_MAX_TRANSPORTS];
    uint64_t self_msgs, rndz_sent, rndz_received;
    int ntps;
    bool tps_armed;         /* arm_transports since the last progress_once */
    bool self_by_tp;        /* a transport carries our messages to
                             * ourselves (carries_self), not the core */
    peer_t *peers;

    req_slot_t *slots;
    uint32_t nslots, free_slot;
    size_t nactive;
    xreq_t *cq_head, *cq_tail;

    xdev_mtable_t posted, unexpected;
    uint64_t post_seq;
    unsigned posted_wild[4];   /* posted receives per wildcard kind */
    uxmsg_t *ux_head, *ux_tail;
    uxmsg_t *claimed;          /* matched-probed messages not yet received */
    uint64_t claims;
    size_t ux_bytes, ux_peak, ux_deferred;
    uxmsg_t *ux_spare;         /* freed entries kept for reuse, by next */
    size_t ux_nspare;
    xdev_payloads_t payloads;  /* unexpected payloads' buffers, for reuse */

    uint64_t auth_key[2];

    pthread_t progress_thread;
    bool progress_thread_running;
    bool progress_thread_stop; /* read and written atomically */

    unsigned wakeups;           /* xdev_wakeup calls, ever (atomic) */
    int wake_fd;                /* eventfd written by xdev_wakeup, or -1 */

    struct boot_pmix *pmix;     /* started by a PMIx server (boot_pmix.c), or NULL */
    int event_fd;               /* xdev_fd's epoll set, made on first use, or -1 */
    int tick_fd;                /* a timerfd in it: transports' timers keep running */
    /* With a progress thread, what it does behind the caller's event loop
     * must wake the loop (event.c): */
    uint64_t loop_seen;         /* activity + completions at xdev_progress */
    bool loop_armed;            /* xdev_arm said OK; nothing woke it yet */
};

/* Locking: a no-op for single-threaded devices. Threads that have to
 * block are counted, so that a busy waiter gives them a turn (progress.c).
 * In a process of one thread nothing can contend, so the call takes no
 * lock: glibc's, though a plain store there, cost 1.2% of the 8-byte shm
 * latency, 1.8% of its message rate and 0.8% of tcp's latency. Only the
 * calling thread exists then; should something start another during the
 * call (a library may), lock_skipped still pairs this call's unlock with
 * its lock, and later calls lock. None of xdev's own threads that lock
 * the device starts inside a call. */
static inline void dev_lock(xdev_t *d)
{
    if (d->flags & XDEV_FLAG_SINGLE_THREAD)
        return;
    if (__libc_single_threaded) {
        d->lock_skipped = true;
        return;
    }
    if (pthread_mutex_trylock(&d->lock) == 0)
        return;
    __atomic_add_fetch(&d->lock_waiters, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&d->lock);
    __atomic_sub_fetch(&d->lock_waiters, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&d->lock_turns, 1, __ATOMIC_RELAXED);
}
static inline void dev_unlock(xdev_t *d)
{
    if (d->flags & XDEV_FLAG_SINGLE_THREAD)
        return;
    if (d->lock_skipped)
        d->lock_skipped = false;
    else
        pthread_mutex_unlock(&d->lock);
}

/* The transport that carries traffic to peer (our own rank only when
 * self_by_tp). */
static inline const xdev_tp_ops_t *peer_ops(const xdev_t *d, int peer)
{
    return d->tps[d->peers[peer].tp].ops;
}
static inline xdev_tp_t *peer_tp(const xdev_t *d, int peer)
{
    return d->tps[d->peers[peer].tp].tp;
}
void proto_watch_all(xdev_t *d); /* (proto.c) */
/* A receive or probe naming src fails when src dies, and with
 * XDEV_FLAG_WILDCARD_FAILS a wildcard one when any peer does, but tcp, ofi
 * and ibv hear of a death only from a peer they reach: ask them to. */
static inline void peer_watch(xdev_t *d, int src)
{
    if (src != XDEV_ANY_SOURCE && src != d->rank && !d->peers[src].dead)
        peer_ops(d, src)->watch(peer_tp(d, src), src);
    else if (src == XDEV_ANY_SOURCE && (d->flags & XDEV_FLAG_WILDCARD_FAILS) && !d->watching_all)
        proto_watch_all(d);
}
/* Whether a message of len payload bytes to peer may go as its
 * transport's short tier (XDEV_TX_NOW): never where it has none, nor
 * from where it goes by rendezvous, which its transport may move (read
 * without the lock: either answer sends the message correctly). */
static inline bool peer_fits_short(const xdev_t *d, int peer, size_t len)
{
    int t = d->peers[peer].tp;
    return d->tps[t].ops->short_max && len <= d->tps[t].short_max &&
           len < __atomic_load_n(&d->peers[peer].rndz_from, __ATOMIC_RELAXED);
}

/* device.c: free a device's memory, the unexpected queue with it (its
 * transports already closed). */
void device_free(xdev_t *d);

/* request.c */
int req_start(xdev_t *d, xreq_t *r, int kind, void *buf, size_t len, int peer, int tag, int ctx);
void req_complete(xdev_t *d, xreq_t *r, int err);
void req_reap(xdev_t *d, xreq_t *r, xdev_status_t *st);
xreq_t *req_cq_pop(xdev_t *d);
xreq_t *req_lookup(xdev_t *d, uint64_t id);
bool req_is_active(const xreq_t *r);
/* The device of an active request, else NULL; no lock needed. */
xdev_t *req_device(const xreq_t *r);
int req_table_init(xdev_t *d);
void req_table_destroy(xdev_t *d);

/* proto.c and its neighbours (proto.h) */
int proto_send(xdev_t *d, xreq_t *r, bool sync);
/* A blocking send's shortcut, for a message that peer_fits_short (the
 * caller asks, without the lock; that keeps it within the eager limit): 1
 * if it went whole at once as the transport's XDEV_TX_NOW (no request
 * needed), 0 to take the usual path. */
int proto_send_now(xdev_t *d, const void *buf, size_t len, int dst, int tag, int ctx);
int proto_recv(xdev_t *d, xreq_t *r);
/* A receive's claim on the control ops it may send (see control.c). */
int proto_claim_ctl(xdev_t *d, xreq_t *r);
void proto_unclaim_ctl(xdev_t *d, xreq_t *r);
void proto_free_ctl(xdev_t *d);
uxmsg_t *proto_probe(xdev_t *d, int src, int tag, int ctx);
/* Is e a message its dead sender could not complete (see
 * xdev_core_peer_failed)? A receive or probe that finds it fails. */
bool proto_lost(const xdev_t *d, const uxmsg_t *e);
/* Matched probe: take e out of matching (a claim), find a claim again by
 * its handle's words (NULL if it is not one), receive it into r, or drop
 * a lost marker the probe found instead of claiming it. */
void proto_claim(xdev_t *d, uxmsg_t *e);
uxmsg_t *proto_find_claim(xdev_t *d, const void *e, uint64_t claim);
void proto_recv_claimed(xdev_t *d, uxmsg_t *e, xreq_t *r);
void proto_drop(xdev_t *d, uxmsg_t *e);
/* A receive of src's message `before` in its stream is done: fetch the
 * claimed offers that came earlier, so that it can wait for them; and a
 * fetch of ours finished (from req_complete). */
void proto_fetch_claims(xdev_t *d, int src, uint64_t before);
void proto_fetch_done(xdev_t *d, xreq_t *r);
/* Cancel r if nothing of it has happened yet: XDEV_OK (r completed with
 * XDEV_ERR_CANCELED) or XDEV_ERR_TOO_LATE (r goes on as usual). */
int proto_cancel(xdev_t *d, xreq_t *r);
void proto_drop_unexpected(xdev_t *d);
/* End r's exposure of its buffer, if it has one (when r completes). */
void proto_release_mem(xdev_t *d, xreq_t *r);

/* boot_pmix.c: the bootstrap under a PMIx server (mpirun, srun). Without
 * PMIx at build time, never wanted. */
typedef struct boot_pmix boot_pmix_t;
#ifdef XDEV_HAVE_PMIX
bool boot_pmix_wanted(void);
int boot_pmix_open(xdev_config_t *c, boot_pmix_t **out);
void boot_pmix_close(boot_pmix_t *b);
int boot_pmix_fence(boot_pmix_t *b);
int boot_pmix_publish(boot_pmix_t *b, const char *key, const char *value);
int boot_pmix_lookup(boot_pmix_t *b, int rank, const char *key, char *out, size_t cap);
/* The bootstrap is over: copy every rank's value of each key this rank
 * published, then finalize PMIx; lookups read the copy from here on. */
int boot_pmix_let_go(boot_pmix_t *b, int size);
const char *boot_pmix_job_id(const boot_pmix_t *b);
const char *boot_pmix_node(const boot_pmix_t *b); /* "" if PMIx did not say */
#else /* never wanted, so the rest is never called */
static inline bool boot_pmix_wanted(void) { return false; }
#define boot_pmix_open(c, out) XDEV_ERR_INIT
#define boot_pmix_close(b) ((void)(b))
#define boot_pmix_fence(b) XDEV_ERR_INIT
#define boot_pmix_publish(b, key, value) XDEV_ERR_INIT
#define boot_pmix_lookup(b, rank, key, out, cap) XDEV_ERR_INIT
#define boot_pmix_let_go(b, size) XDEV_ERR_INIT
#define boot_pmix_job_id(b) "nojob"
#define boot_pmix_node(b) ""
#endif
/* boot.c: the boot directory as the environment gives it at init; a point
 * every rank reaches, where what was published before it can be looked up
 * after it (a PMIx fence; nothing for the boot directory). */
int xdev_boot_load(xdev_t *d);
int xdev_boot_sync(xdev_t *d);
/* After the last sync of xdev_init: what the bootstrap needs no more is
 * let go of (boot.c says what and why). */
int xdev_boot_done(xdev_t *d);

/* api.c, shared with the calls in files of their own */
bool match_args_ok(const xdev_t *d, int src, int tag, int ctx);
/* Post a send or a receive (flags: F_SYNC, F_PRIVATE); with niov > 0, buf
 * is a checked vector of niov pieces and len their total (vector.c). */
int post_send(xdev_t *d, const void *buf, size_t len, int dst, int tag, int ctx,
              xdev_request_t *req, unsigned flags, unsigned niov);
int post_recv(xdev_t *d, void *buf, size_t len, int src, int tag, int ctx, xdev_request_t *req,
              unsigned flags, unsigned niov);
/* A blocking probe's wait; takes the lock and returns with it held. The
 * message that matched (still unexpected), or NULL and in *rc
 * XDEV_ERR_WOKEN or the failed probe's result (its status in *st). */
uxmsg_t *probe_wait(xdev_t *d, int src, int tag, int ctx, xdev_status_t *st, int *rc);
/* A nonblocking probe's look: the unexpected queue, and again after one
 * progress pass if nothing matched. Lock held. */
uxmsg_t *probe_now(xdev_t *d, int src, int tag, int ctx);
/* A blocking call's wait on its own request (rc: the post's result;
 * woken: wake_mark before the post). */
int wait_result(int rc, xdev_request_t *req, xdev_status_t *st, unsigned woken);

/* recv_order.c: a receive from a peer completes through these, so that
 * one sender's receives complete in arrival order (see peer_t). */
void order_open(xdev_t *d, xreq_t *r);            /* matched rendezvous */
void order_done(xdev_t *d, xreq_t *r);            /* its data is in */
void order_fail(xdev_t *d, xreq_t *r, int err);   /* it failed */
uint64_t order_first_open(const peer_t *p);       /* UINT64_MAX if none */
/* the sender died: its stream is cut at `cut`; fail its open and held */
void order_sender_failed(xdev_t *d, int peer, uint64_t cut);
void order_claim(peer_t *p);    /* a rendezvous offer of p's was claimed */
void order_unclaim(peer_t *p);  /* ...and is received or being fetched */

/* progress.c */
void progress_once(xdev_t *d);
/* Polls between a spinning wait's readings of the clock, for what one
 * reading costs (progress_clock_reading_ns: the cheapest of five). */
unsigned progress_clock_stride(uint64_t reading_ns);
uint64_t progress_clock_reading_ns(void);
/* Arm every transport for sleeping on its wait_fd: XDEV_OK, or
 * XDEV_ERR_BUSY when one has work now (event.c has the event-loop side). */
int arm_transports(xdev_t *d);
/* event.c: another thread moved or completed something; wake an armed
 * caller's loop. */
void event_loop_poke(xdev_t *d);
/* Wait (dropping the lock while asleep) until done(d, arg) holds:
 * XDEV_OK; or until xdev_wakeup is called after wake_mark gave woken:
 * XDEV_ERR_WOKEN; or timeout_ms pass (< 0: never): XDEV_ERR_TIMEOUT. The
 * lock is held on entry and on return. */
int progress_until(xdev_t *d, bool (*done)(xdev_t *, void *), void *arg, int timeout_ms,
                   unsigned woken);
/* The count of xdev_wakeup calls (0 for NULL d), read without the lock.
 * A blocking call reads it on entry, before it waits for the lock or
 * posts, so that a wakeup while it does either is not lost. */
unsigned wake_mark(const xdev_t *d);
/* xdev_wakeup's work: no lock, async-signal-safe. */
void xdev_wakeup_signal(xdev_t *d);
int progress_thread_start(xdev_t *d);
void progress_thread_stop(xdev_t *d);

/* auth.c */
void auth_init(xdev_t *d);

/* select.c */
int select_transports(xdev_t *d);
const xdev_tp_ops_t *transport_find(const char *name);
const char *job_id(void);

/* config.c */
int config_from_env(xdev_config_t *cfg);
/* The caller's config, of whatever size it was built with, as this
 * release's struct: XDEV_ERR_ARG if it cannot be read. */
int config_from_caller(xdev_config_t *out, const xdev_config_t *cfg);
int config_validate(const xdev_config_t *cfg);
int config_copy(xdev_t *d, const xdev_config_t *cfg);

#endif
