/*
 * transport.h - the seam between the protocol core and a transport.
 *
 * A transport moves opaque messages (an encoded head plus a payload) to a
 * peer rank and hands the messages that arrive to the core in two steps:
 * first the head (xdev_core_rx_begin, which says where the payload goes),
 * then, once the payload is in place, xdev_core_rx_end. It knows nothing of
 * matching, requests or protocols; the core knows nothing of sockets.
 *
 * Every function here is called with the device lock held. A transport's
 * callbacks into the core happen only from inside its progress function,
 * never from inside send/resume/watch/rma. The core may call send, resume
 * and watch from inside a callback (e.g. to answer a message), so a
 * transport keeps its own state consistent before it calls back.
 *
 * One device may drive several transports at once (shm to ranks on this
 * host, tcp to the others); each peer is served by exactly one of them.
 */
#ifndef XDEV_TRANSPORT_H
#define XDEV_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "../kit/copy.h"
#include "options.h"
#include "wire.h"
#include "xdev.h"

/* Room a transport may use in front of the head for its own framing. */
#define XDEV_TP_PREFIX_MAX 8

/* The most of one long payload a progress call moves (copies, reads or
 * writes). A call that moved all of it would keep the device lock
 * throughout, and another thread would wait for the whole message: a
 * loopback socket may never run dry or fill up while the peer keeps
 * pace, and one process_vm_readv may be 256 MiB. Both ways at 2-4 MiB,
 * shm's reads made at once moved 6-9% more than in 1 MiB pieces. */
#define XDEV_TP_PASS_BYTES ((size_t)4 << 20)

/*
 * One outgoing message. The core fills head/head_len and the payload and
 * keeps the op alive until the transport hands it back; the transport owns
 * `next`, `sent` and the prefix bytes while the op is queued.
 */
typedef struct xdev_txop {
    struct xdev_txop *next;
    size_t sent;          /* transport's progress through prefix+head+payload */
    /* A vector message's payload (payload_niov > 0) is pieces instead: a
     * transport reads it with xdev_txop_copy, or gathers the pieces itself
     * where it can (tcp's sendmsg). */
    union {
        const void *payload;
        const xdev_iov_t *payload_iov;
    };
    size_t payload_len;
    uint32_t head_len;
    uint32_t prefix_len;  /* set by the transport */
    uint8_t owner;        /* core's: which protocol step this op carries;
                           * XDEV_OP_OWN for a transport's own op */
    uint8_t payload_niov; /* pieces of payload_iov; 0: payload is one buffer */
    uint8_t wire[XDEV_TP_PREFIX_MAX + XDEV_HEAD_MAX]; /* head starts at XDEV_TP_PREFIX_MAX */
} xdev_txop_t;

static inline uint8_t *xdev_txop_head(xdev_txop_t *op) { return op->wire + XDEV_TP_PREFIX_MAX; }

/* An op a transport made itself (tcp's copy of the rest of a short send
 * the socket took part of) and queues with the core's: the core ignores
 * it when it comes back through xdev_core_tx_done. */
#define XDEV_OP_OWN 0

/* Vector payloads (iov.c): copy n bytes at offset off of the pieces'
 * concatenation out of them (gather) or into them (scatter). */
void xdev_iov_gather(void *dst, const xdev_iov_t *iov, unsigned niov, size_t off, size_t n);
void xdev_iov_scatter(const xdev_iov_t *iov, unsigned niov, size_t off, const void *src,
                      size_t n);
/* The piece holding offset off: how many bytes from there on lie in it,
 * where they start, and (piece may be NULL) its index (0, NULL and niov
 * past the end). */
size_t xdev_iov_span(const xdev_iov_t *iov, unsigned niov, size_t off, void **at,
                     unsigned *piece);

/* Copy n payload bytes from offset off into dst. A zero-byte send may
 * carry a null buffer, which memcpy must not be given even for 0 bytes. */
static inline void xdev_txop_copy(void *dst, const xdev_txop_t *op, size_t off, size_t n)
{
    if (op->payload_niov)
        xdev_iov_gather(dst, op->payload_iov, op->payload_niov, off, n);
    else if (n)
        xdev_copy(dst, (const char *)op->payload + off, n);
}

/*
 * An arriving message, as the transport has read it so far. The transport
 * fills head, len and payload; xdev_core_rx_begin fills dst, dst_len and
 * cookie. Unless the core took the message whole (XDEV_RX_DONE), the
 * transport places the first dst_len payload bytes at dst and discards
 * the rest (a truncated receive), then calls xdev_core_rx_end with the
 * same struct.
 */
typedef struct xdev_rx {
    xdev_head_t head;
    size_t len;      /* payload bytes that follow the head */
    const void *payload; /* all len of them, where they are already all in
                          * memory (a record, a whole frame), else NULL:
                          * the core may then place them itself */
    void *dst;
    size_t dst_len;  /* <= len */
    const xdev_iov_t *dst_iov; /* a vector receive's pieces, in place of dst */
    unsigned dst_niov;
    void *cookie;    /* the core's */
    bool unexpected; /* set by the core: no receive was posted for it, so
                      * it is being buffered; a transport may leave what
                      * follows in its ring for now, so that a receiver
                      * that lags pushes back on its sender instead of
                      * buffering everything the sender gets ahead */
} xdev_rx_t;

/* Place n payload bytes that start at offset off of the message: what
 * falls within the first dst_len bytes goes to dst (or the pieces of
 * dst_iov), the rest is dropped (a truncated receive). The one copy into
 * place that every transport makes. */
static inline void xdev_rx_place(const xdev_rx_t *rx, size_t off, const void *src, size_t n)
{
    if (off >= rx->dst_len)
        return;
    if (n > rx->dst_len - off)
        n = rx->dst_len - off;
    if (rx->dst_iov)
        xdev_iov_scatter(rx->dst_iov, rx->dst_niov, off, src, n);
    else
        xdev_copy((char *)rx->dst + off, src, n);
}

/* A resumed message's destination, as ops->resume is given it. */
static inline void xdev_rx_set_dst(xdev_rx_t *rx, const xdev_rx_t *to)
{
    rx->dst = to->dst;
    rx->dst_len = to->dst_len;
    rx->dst_iov = to->dst_iov;
    rx->dst_niov = to->dst_niov;
}

/* Where payload bytes from offset off on may be read straight into place
 * (a socket's recv): how many fit there contiguously, 0 past dst_len. */
static inline size_t xdev_rx_span(const xdev_rx_t *rx, size_t off, void **at)
{
    if (off >= rx->dst_len)
        return 0;
    if (!rx->dst_iov) {
        *at = (char *)rx->dst + off;
        return rx->dst_len - off;
    }
    size_t n = xdev_iov_span(rx->dst_iov, rx->dst_niov, off, at, NULL);
    return n < rx->dst_len - off ? n : rx->dst_len - off;
}

/* Results of xdev_core_rx_begin. */
enum {
    XDEV_RX_DELIVER = 0, /* place the payload now */
    XDEV_RX_DEFER = 1,   /* keep it where it is (socket, ring): stop reading
                          * from this peer until ops->resume is called */
    XDEV_RX_DONE = 2,    /* rx->payload was given and the core has placed
                          * it and ended the message: no rx_end */
    /* negative: the peer broke the protocol; drop it */
};

/* What a transport is told at open time. */
typedef struct xdev_tp_params {
    int rank;
    int size;
    size_t eager_limit;
    int peer_timeout_ms;
    const char *job_secret;
    const char *job_id;       /* names per-job resources (shm segments) */
    const char *const *peers; /* explicit table, or NULL */
    const bool *serve;        /* serve[r]: this transport carries traffic
                               * to rank r (our own rank only for one that
                               * carries_self) */
    bool many_hosts;          /* the launcher (PMIx) may have put peers on
                               * other hosts: listen where they can reach */
    const bool *gone;         /* gone[r]: the core failed rank r before open
                               * (it published nothing in time), or NULL.
                               * Hold it dead; should it turn up after all,
                               * tell it so, that it fails us in turn
                               * rather than wait for answers. */
} xdev_tp_params_t;

typedef struct xdev_tp xdev_tp_t; /* a transport's own state */

/* How ops->send may send an op: its send tiers (as UCT's am_short and
 * am_bcopy; the zero-copy tier is the rendezvous, through rma). */
enum {
    XDEV_TX_QUEUE = 0, /* whole now where it can, else queued: the op is
                        * the transport's until xdev_core_tx_done */
    XDEV_TX_NOW = 1,   /* the short tier: whole now, or nothing written
                        * and nothing queued. The op is only borrowed (it
                        * may live on the caller's stack), so a blocking
                        * send of a short message needs no request. */
};

/* How a rendezvous moves its bulk data (ops->rndz_mode chooses per message;
 * the value travels in RNDZ_START and RNDZ_REPLY). */
enum {
    XDEV_RNDZ_SEND = 0,  /* the core streams the payload as RNDZ_DATA */
    XDEV_RNDZ_READ = 1,  /* the receiver reads the sender's exposed buffer */
    XDEV_RNDZ_WRITE = 2, /* the sender writes into the receiver's exposed buffer */
};

/* Memory a transport made remotely accessible. addr and key travel on the
 * wire and mean what the transport says (a virtual address or an offset,
 * an rkey or a libfabric key); handle is the transport's own. */
typedef struct xdev_mem {
    uint64_t addr;
    uint64_t key;
    void *handle;
} xdev_mem_t;

/* One one-sided transfer. The core fills it and keeps it alive until the
 * transport hands it back; `next` is the transport's while queued. The
 * transport registers `local` itself if its hardware needs that. */
typedef struct xdev_rmaop {
    struct xdev_rmaop *next;
    void *local;
    size_t len;
    uint64_t remote_addr; /* the peer's xdev_mem_t addr and key */
    uint64_t remote_key;
    bool write;           /* true: local -> remote; false: remote -> local */
} xdev_rmaop_t;

typedef struct xdev_tp_ops {
    const char *name;
    /* The transport serves this rank too: the core sends a rank's
     * messages to itself through it rather than matching them in place
     * (src/loop, which exercises the protocol in one process). */
    bool carries_self;
    /* The transport publishes after open, as it connects (ibv: a key per
     * peer it wants): the bootstrap's store must stay open for it. */
    bool publishes_late;
    int (*open)(xdev_t *dev, const xdev_tp_params_t *params, xdev_tp_t **tp);
    /* Send op to peer as `how` (XDEV_TX_*) says. Returns 1 if the op is
     * the core's again and its message is the transport's to deliver: it
     * was sent completely before returning, or (XDEV_TX_NOW) what the
     * transport could not send at once it copied, to send itself; 0 if it
     * was queued and will come back through xdev_core_tx_done (with
     * XDEV_TX_NOW: it could not go now, and nothing of it was written or
     * queued); XDEV_ERR_PEER if the peer is known to be dead (the op is
     * the core's again). */
    int (*send)(xdev_tp_t *tp, int peer, xdev_txop_t *op, int how);
    /* Optional: the largest payload XDEV_TX_NOW may take, once open (one
     * ring record, one inline or buffered work request, one fi_inject, one
     * socket write and a copy of what it left); larger ones, and any past
     * the eager limit, the core sends only as XDEV_TX_QUEUE. Without it
     * the transport has no short tier and is never asked for XDEV_TX_NOW. */
    size_t (*short_max)(xdev_tp_t *tp);
    /* Deliver arrived messages and finish queued sends, without waiting.
     * woke: the first call since arm, so the caller may have slept on
     * wait_fd, and what woke it may be what a transport looks at only now
     * and then (tcp's accepts, timers read off a clock read every so many
     * calls): look at all of it. A call moves at most
     * XDEV_TP_PASS_BYTES of a long payload, so that the device lock it
     * runs under is let go between pieces of a long message. A transport
     * that loses speed by stopping there may go on to the next piece while
     * no thread waits for the lock (xdev_core_lock_wanted). */
    void (*progress)(xdev_tp_t *tp, bool woke);
    /* A file descriptor, the same for the transport's whole life, that
     * becomes readable when progress may have work once arm has returned
     * XDEV_OK, so the core (or the caller's event loop, via xdev_fd) can
     * sleep without holding the device lock; -1 if the transport has none
     * (the core then sleeps in short ticks). */
    int (*wait_fd)(xdev_tp_t *tp);
    /* Get ready to sleep on wait_fd: XDEV_OK when whatever happens from
     * now on makes wait_fd readable; XDEV_ERR_BUSY when progress has work
     * already (nothing is lost: the caller calls progress and arms again).
     * Whatever made wait_fd readable last time is consumed here. The next
     * progress call ends the armed state, so that an armed transport costs
     * its peers something only while its process sleeps. */
    int (*arm)(xdev_tp_t *tp);
    /* Carry on with a message whose payload was deferred: place it where
     * `to` says (its dst, dst_len, dst_iov and dst_niov, as in rx_begin's
     * answer: first dst_len bytes, discard the rest). */
    void (*resume)(xdev_tp_t *tp, void *token, const xdev_rx_t *to);
    /* The core waits for a message from peer: make sure that peer's death
     * would be noticed (connect if not connected). */
    void (*watch)(xdev_tp_t *tp, int peer);
    /* Optional RMA for rendezvous (all NULL when the transport has none;
     * the core then streams every rendezvous as RNDZ_DATA). */
    /* How a rendezvous of len bytes to peer moves its data: XDEV_RNDZ_*. */
    int (*rndz_mode)(xdev_tp_t *tp, int peer, size_t len);
    /* Make [buf, buf+len) readable by peer, and writable too when
     * remote_write. XDEV_OK, or an error and the core streams this message
     * instead. */
    int (*mem_expose)(xdev_tp_t *tp, int peer, void *buf, size_t len, bool remote_write,
                      xdev_mem_t *mem);
    /* Optional even with RMA: end an exposure. */
    void (*mem_release)(xdev_tp_t *tp, xdev_mem_t *mem);
    /* Start a one-sided transfer. 1: done before returning (the op is the
     * core's again); 0: queued, it comes back through xdev_core_rma_done;
     * < 0: failed before anything moved (the core streams instead). */
    int (*rma)(xdev_tp_t *tp, int peer, xdev_rmaop_t *op);
    /* Optional: true when this transport reaches other hosts over a
     * high-speed network here; `auto` then prefers it to tcp for them.
     * Called before open, with the device's options already read. */
    bool (*fast_network)(const xdev_t *dev);
    /* Optional: say on out what this transport finds on this machine
     * (devices, interfaces, providers, limits), for xdev-info. */
    void (*info)(FILE *out);
    /* Begin an orderly close: finish queued sends, then tell every peer we
     * are done. Returns 1 once every connection is closed. */
    int (*shutdown)(xdev_tp_t *tp);
    /* Free everything, including exposures (mem_expose) of requests the
     * caller abandoned at finalize: the core does not touch those again. */
    void (*close)(xdev_tp_t *tp);
} xdev_tp_ops_t;

/* Calls from a transport into the core. */

/* The one way in for an arriving message (see xdev_rx_t). `token`
 * identifies the connection for a later ops->resume. */
int xdev_core_rx_begin(xdev_t *dev, int peer, void *token, xdev_rx_t *rx);
void xdev_core_rx_end(xdev_t *dev, xdev_rx_t *rx);
/* A queued op is done (err == XDEV_OK) or failed (XDEV_ERR_PEER). */
void xdev_core_tx_done(xdev_t *dev, xdev_txop_t *op, int err);
/* A queued rma op finished (XDEV_OK) or failed: XDEV_ERR_PEER, the peer is
 * gone; XDEV_ERR_SYSTEM, the copy was refused (the kernel, the device) but
 * the peer lives, and the core streams the message instead. */
void xdev_core_rma_done(xdev_t *dev, xdev_rmaop_t *op, int err);
/* xdev_core_tx_done(XDEV_ERR_PEER) for every op of a list linked by next
 * (a dead peer's queue). */
void xdev_core_tx_fail_all(xdev_t *dev, xdev_txop_t *list);
/* The peer is gone. Every op (send or rma) queued for it has been handed
 * back first. */
void xdev_core_peer_failed(xdev_t *dev, int peer);
/* The peer announced the largest eager message it will send. */
void xdev_core_peer_eager_limit(xdev_t *dev, int peer, size_t limit);
/* Send peer messages from `from` bytes up by rendezvous, under the eager
 * limit too (0 or past it: from past it, the default), where rndz_mode
 * copies them once; it may change at any time. The receiver reads such
 * an offer in as it arrives, as it would the eager message, so that the
 * send still completes without a receive posted for it. */
void xdev_core_peer_rndz_from(xdev_t *dev, int peer, size_t from);
/* Is a receive posted that names peer as its source? A transport that
 * has just delivered a short message from it may read on into the next
 * only then, so that the next does not arrive before its receive. */
bool xdev_core_posted_from(const xdev_t *dev, int peer);
/* Bytes of a message moved (written, or read into place) that may not
 * have finished anything: a waiter keeps polling rather than backing off
 * while one long message streams. */
void xdev_core_moved(xdev_t *dev);
/* Whether another thread is blocked waiting for the device lock now. */
bool xdev_core_lock_wanted(const xdev_t *dev);

/* Bootstrap: publish this rank's address under `key`, look up a peer's.
 * lookup returns 1 if found, 0 if not (yet), another XDEV_ERR_* if the
 * peer's entry is unusable. Both return XDEV_ERR_NOMEM when this process
 * is short of descriptors or memory now: try again later. */
int xdev_boot_publish(xdev_t *dev, const char *key, const char *value);
int xdev_boot_lookup(xdev_t *dev, int rank, const char *key, char *out, size_t cap);

/* Job authentication: a MAC over msg keyed with the job secret. */
uint64_t xdev_auth_mac(xdev_t *dev, const void *msg, size_t len);
uint64_t xdev_auth_nonce(void);

/* The name of a per-job resource in /dev/shm,
 * "xdev-<job id>-<rank>-<tag><what>": xdevrun removes what a killed job
 * leaves under its prefix, and a name that carries the job id cannot meet
 * a stale one from another job. The tag is a MAC of the rest keyed with
 * the job secret: /dev/shm is open to every local user, who sees the names
 * of the ranks that started first, and could take a later rank's name
 * before it does if names were predictable. XDEV_ERR_INIT if the job id
 * has characters a name cannot carry. */
int xdev_job_name(xdev_t *dev, const char *job_id, int rank, const char *what, char *out,
                  size_t cap);

/* Liveness of a process on this host (liveness.c): a pidfd that becomes
 * readable when pid exits, or -1 where the kernel has none; whether pid is
 * gone by kill(pid, 0) (a pid <= 0 counts as gone); and whether a peer
 * has exited by its pidfd, or by kill(pid, 0) where pidfd is -1 (a pid
 * <= 0, not known yet, has not); and whether pid has exited or is being
 * killed, its memory gone (sooner than the pidfd says so). */
int xdev_pidfd_open(int pid);
bool xdev_process_gone(int pid);
bool xdev_process_exited(int pidfd, int pid);
bool xdev_process_leaving(int pid);
/* This kernel's boot id and the named namespaces of ours ("pid", "ipc",
 * "mnt"), as one token: two ranks with equal tokens share them, so a pid
 * (with "pid") or a shared-memory name (with all three) means the same
 * thing to both. */
void xdev_host_token(char *out, size_t cap, const char *const *namespaces, int n);

/* Milliseconds (and nanoseconds) on the monotonic clock; the coarse one
 * costs a few ns and no system call, for transports that check timers
 * while they poll. xdev_clock_ns reads any clock_gettime clock. */
uint64_t xdev_clock_ns(clockid_t clock);
uint64_t xdev_now_ns(void);
uint64_t xdev_now_ms(void);
uint64_t xdev_now_coarse_ms(void);

extern const xdev_tp_ops_t xdev_tcp_ops;
extern const xdev_tp_ops_t xdev_shm_ops;
#ifdef XDEV_HAVE_OFI
extern const xdev_tp_ops_t xdev_ofi_ops;
#endif
#ifdef XDEV_HAVE_IBV
extern const xdev_tp_ops_t xdev_ibv_ops;
#endif

#endif
