/*
 * ibv.h - the InfiniBand / RoCE transport (rdma-core libibverbs), shared by
 * its files:
 *   ibv.c      the ops table, open/close/shutdown, progress, waiting
 *   ibv_dev.c  which device, port and GID (XDEV_IBV_DEVICE/_PORT/_GID_INDEX)
 *   ibv_qp.c   one RC queue pair per peer, connected on first use through
 *              the bootstrap; noticing a dead peer
 *   ibv_rx.c   the shared receive queue and handing arrivals to the core
 *   ibv_tx.c   send queues, fragments, inline sends and credits
 *
 * Eager path (IBVX 4.4.3): every message is sent from / received into
 * fixed-size buffers of one registered pool. Receive buffers sit on one
 * shared receive queue (SRQ), so receive memory does not grow with the
 * number of peers; send and receive completions of every QP go to one CQ.
 *
 * A transport message is: an 8-byte little-endian length (head + payload),
 * the xdev head, the payload. One that does not fit a buffer goes in
 * several fragments; the first holds the length and the whole head. RC
 * delivers a QP's sends in order and a peer's queue sends one message's
 * fragments back to back, so the receiver needs no fragment header.
 *
 * Flow control: each peer may have at most `credits` messages (fragments)
 * on their way to us; we grant them back as we repost the buffers they
 * used, in the immediate data of any send to that peer, or in a send of
 * its own when many are owed. The SRQ holds every peer's credits plus
 * room for the credit-only messages in flight, so a sender never finds it
 * empty (no RNR NAKs).
 */
#ifndef XDEV_IBV_H
#define XDEV_IBV_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdio.h>
#include "../kit/credits.h"
#include "../kit/regcache.h"
#include "../kit/rxmsg.h"
#include "../core/transport.h"
#include "../kit/txq.h"

#define IBV_PREFIX 8

/* The immediate data of every send: credits granted back in the low bits;
 * a message that only carries credits says so. */
#define IMM_CREDITS_MASK 0xffffu
#define IMM_CREDIT_ONLY (1u << 16)

/* wr_id: what completed. Top byte kind, then the peer, then a value. */
enum wr_kind { WR_RECV = 1, WR_SEND_BUF = 2, WR_SEND_INLINE = 3, WR_RMA = 4 };

static inline uint64_t wr_id_make(unsigned kind, unsigned peer, uint32_t value)
{
    return (uint64_t)kind << 56 | (uint64_t)(peer & 0xffffffu) << 32 | value;
}
static inline unsigned wr_kind_of(uint64_t id) { return (unsigned)(id >> 56); }
static inline int wr_peer_of(uint64_t id) { return (int)((id >> 32) & 0xffffffu); }
static inline uint32_t wr_value_of(uint64_t id) { return (uint32_t)id; }

/* Where a peer's connection is. */
enum peer_state {
    PEER_IDLE,       /* nothing yet */
    PEER_CONNECTING, /* our QP exists and is published; waiting for the peer's */
    PEER_UP,         /* our QP is ready to send and receive */
    PEER_DEAD,
};

/* What one side publishes for the other (the bootstrap key "ibv-<peer>"). */
typedef struct ibv_addr {
    uint32_t qpn, psn;
    uint16_t lid;
    union ibv_gid gid;
    unsigned mtu;      /* enum ibv_mtu */
    unsigned rd_atom;  /* RDMA reads it will answer at once */
    uint64_t eager_limit;
    long pid;
    uint64_t ka_addr;  /* its keepalive slot, for an RDMA write */
    uint32_t ka_rkey;
    char host[128];    /* same value: pid means a process on our host */
    bool ready;        /* its QP is ready to receive from us */
} ibv_addr_t;

typedef struct ibv_device_choice {
    struct ibv_context *ctx;
    uint8_t port;
    int gid_index;     /* -1: IB without a GRH */
    union ibv_gid gid;
    uint16_t lid;
    enum ibv_mtu mtu;
    bool roce;
    struct ibv_device_attr attr;
} ibv_device_choice_t;

/* One RMA transfer on its way (ibv_rma.c). */
typedef struct ibv_rma {
    struct ibv_rma *next, *prev;  /* the peer's transfers, oldest first */
    xdev_rmaop_t *op;             /* NULL once handed back as failed */
    xdev_reg_t *reg;
    int peer;
    bool write;
    size_t len, posted;
    unsigned outstanding;         /* work requests not yet completed */
} ibv_rma_t;

typedef struct ibv_peer {
    struct ibv_qp *qp;
    uint8_t state;
    bool remote_ready;     /* its QP accepts our sends */
    bool wanted;           /* someone wants to talk to it */
    bool exited;           /* its process is gone (pidfd) */
    bool in_txlist;
    bool in_service;
    bool settled;          /* ready both ways, or dead: no more to look up */
    bool publish_owed;     /* our key for it is still to be written */
    bool heard;            /* something arrived since the last keepalive look */
    uint64_t ka_addr;      /* its keepalive slot */
    uint32_t ka_rkey;
    uint32_t psn;
    uint64_t give_up_ms;
    int pidfd;
    /* sending */
    xdev_txq_t txq;
    struct ibv_peer *tx_next;      /* tp->txlist */
    xdev_credits_t cr;     /* owed: buffers of its we reposted */
    unsigned owed_unposted; /* ... consumed but not yet reposted */
    uint32_t sq_inflight;  /* work requests posted, not yet completed */
    bool broken;           /* a post failed: fail it from progress */
    unsigned rd_max, rd_out; /* RDMA reads allowed at once / outstanding */
    ibv_rma_t *rma_head, *rma_tail;
    unsigned held;         /* dead: transfers the device still has, whose
                            * flushes the core's verdict waits for */
    /* receiving */
    xdev_rxmsg_t in;       /* the message arriving; while the core defers
                            * it, later buffers are held */
    uint32_t pend_head, pend_tail; /* held receive buffers (index+1; 0 none) */
    uint32_t pend_off;     /* bytes of the first held buffer already used */
    struct ibv_peer *service_next;
} ibv_peer_t;

/* A buffer of the pool. */
typedef struct ibv_buf {
    uint32_t len;      /* bytes received */
    uint32_t next;     /* index+1 in a list (free list, held list) */
} ibv_buf_t;

struct xdev_tp {
    xdev_t *dev;
    int rank, size;
    size_t eager_limit;
    int peer_timeout_ms;
    ibv_device_choice_t d;
    struct ibv_pd *pd;
    struct ibv_comp_channel *chan;
    struct ibv_cq *cq;
    struct ibv_srq *srq;
    struct ibv_mr *pool_mr;
    char *pool;            /* nrx receive buffers, then ntx send buffers */
    ibv_buf_t *bufs;
    size_t buf_bytes;
    uint32_t nrx, ntx;
    uint32_t tx_free;      /* free list of send buffers (index+1) */
    uint32_t *repost;      /* receive buffers waiting to go back on the SRQ */
    uint32_t nrepost;
    bool repost_now;       /* ...and one of them may not wait for an idle poll */
    ibv_peer_t **dirty;    /* peers with owed_unposted */
    uint32_t ndirty;
    int credits;           /* initial credits of every peer */
    uint32_t sq_depth;
    uint32_t max_inline;
    ibv_peer_t *peers;
    ibv_peer_t *txlist;    /* peers with queued ops that can move */
    ibv_peer_t *service;   /* peers to deliver held arrivals from */
    uint32_t *qpn_table;   /* open-addressing qpn -> peer+1 */
    uint32_t qpn_mask;
    int epfd;              /* CQ channel + pidfds */
    bool cq_armed;
    unsigned nconnecting;  /* peers in PEER_CONNECTING */
    unsigned nup;
    unsigned unsettled;    /* peers neither ready both ways nor dead */
    uint64_t next_timer_ms; /* next look at events and connections */
    unsigned polls;
    bool timer_due;        /* look at the clock in the next progress call */
    uint64_t next_scan_ms; /* next look for peers who want us */
    uint64_t next_keepalive_ms;
    unsigned keepalive_ms; /* XDEV_IBV_KEEPALIVE_MS; 0: none */
    bool use_pidfd;        /* XDEV_IBV_PIDFD */
    uint64_t ka_slot;      /* peers' keepalives write here */
    struct ibv_mr *ka_mr;
    unsigned scan_ms;      /* its period, backing off while nothing comes */
    bool shutting_down;
    char host[128];
    xdev_regcache_t *regcache;
    int rndz_force;        /* XDEV_IBV_RNDZ, or -1: by size */
    size_t read_min;       /* rendezvous from this size read, below write */
};

/* XDEV_IBV_DEBUG=1: say on stderr how connections and failures go. */
extern int ibv_debug;
#define IBV_TRACE(tp, ...)                                                      \
    do {                                                                        \
        if (ibv_debug) {                                                        \
            char trace_[256];                                                   \
            snprintf(trace_, sizeof trace_, __VA_ARGS__);                       \
            fprintf(stderr, "xdev-ibv[%d]: %s\n", (tp)->rank, trace_);          \
        }                                                                       \
    } while (0)

/* ibv_dev.c */
int ibv_dev_choose(const xdev_t *dev, ibv_device_choice_t *out);
void ibv_dev_release(ibv_device_choice_t *d);

/* ibv_qp.c */
void ibv_want_peer(xdev_tp_t *tp, int peer);
void ibv_peer_remote_ready(xdev_tp_t *tp, ibv_peer_t *p);
void ibv_connect_timers(xdev_tp_t *tp, uint64_t now);
void ibv_peer_fail(xdev_tp_t *tp, int peer);
bool ibv_exits_unjudged(const xdev_tp_t *tp);
void ibv_check_exits(xdev_tp_t *tp);
void ibv_keepalive(xdev_tp_t *tp, uint64_t now);
void ibv_peer_close(xdev_tp_t *tp, ibv_peer_t *p);
int ibv_peer_of_qpn(xdev_tp_t *tp, uint32_t qpn);

/* ibv_rx.c */
int ibv_rx_init(xdev_tp_t *tp);
void ibv_rx_completion(xdev_tp_t *tp, struct ibv_wc *wc);
void ibv_rx_repost(xdev_tp_t *tp);
void ibv_rx_service(xdev_tp_t *tp);
void ibv_resume(xdev_tp_t *tp, void *token, const xdev_rx_t *to);
void ibv_info(FILE *out);
void ibv_rx_drop_held(xdev_tp_t *tp, ibv_peer_t *p);

/* ibv_rma.c */
int ibv_rma_init(xdev_tp_t *tp);
void ibv_rma_close(xdev_tp_t *tp);
void ibv_rma_run(xdev_tp_t *tp, ibv_peer_t *p);
bool ibv_rma_pending(const ibv_peer_t *p);
void ibv_rma_completion(xdev_tp_t *tp, struct ibv_wc *wc);
unsigned ibv_rma_fail_peer(xdev_tp_t *tp, ibv_peer_t *p);
int ibv_rndz_mode(xdev_tp_t *tp, int peer, size_t len);
int ibv_mem_expose(xdev_tp_t *tp, int peer, void *buf, size_t len, bool remote_write,
                   xdev_mem_t *mem);
void ibv_mem_release(xdev_tp_t *tp, xdev_mem_t *mem);
int ibv_rma(xdev_tp_t *tp, int peer, xdev_rmaop_t *op);

/* ibv_tx.c */
int ibv_send(xdev_tp_t *tp, int peer, xdev_txop_t *op, int how);
void ibv_tx_completion(xdev_tp_t *tp, struct ibv_wc *wc);
void ibv_tx_kick(xdev_tp_t *tp, ibv_peer_t *p);
void ibv_tx_run(xdev_tp_t *tp);
void ibv_tx_grant(xdev_tp_t *tp, ibv_peer_t *p);
void ibv_tx_credit_msg(xdev_tp_t *tp, ibv_peer_t *p);
void ibv_tx_keepalive(xdev_tp_t *tp, ibv_peer_t *p);
void ibv_fail_queue(xdev_tp_t *tp, int peer);
bool ibv_tx_idle(xdev_tp_t *tp);

#endif
