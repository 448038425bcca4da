/*
 * ofi.h - the libfabric transport's own state, shared by its files:
 *   ofi.c        the ops table, open/close, progress, shutdown
 *   ofi_lib.c    libfabric, loaded when first needed
 *   ofi_fabric.c choosing a provider and opening fabric, domain, endpoint
 *   ofi_addr.c   address exchange, peers resolved on first use, liveness
 *   ofi_tx.c     sending: per-peer queues, fragments, credits, control frames
 *   ofi_rx.c     receiving: the posted buffer pool, reassembly, deferral
 *   ofi_rma.c    the RMA seam: exposure, one-sided reads and writes
 *
 * One reliable datagram endpoint (FI_EP_RDM) carries everything. A
 * transport message (an xdev head and its payload) travels as one or more
 * FI_MSG frames into a pool of receive buffers that the endpoint keeps
 * posted; each frame starts with an 8-byte frame header:
 *   u8 kind, u8 seq, u16 credits returned, u32 sender's rank
 * and a FIRST frame adds the u64 payload length of the whole message.
 * Frames of one sender are matched to buffers in order (FI_ORDER_SAS is
 * required) but may complete out of order; seq puts them back in order.
 *
 * Flow control is by credits: a peer may have `credits` data frames in our
 * pool at once, and gets a credit back when we repost the buffer its frame
 * used (piggybacked on our frames to it, or in a CREDIT frame once half
 * are owed). So a message the core defers, and everything behind it from
 * that peer, simply stays in its buffers, the pool never runs dry, and a
 * flooding sender waits for credits instead of making the provider buffer
 * without bound or drop anything. CREDIT and BYE frames ride outside the
 * credits in a small per-peer reserve (OFI_CTRL_RESERVE).
 *
 * Large messages move by FI_RMA where the provider has it (READ by
 * default); otherwise the core streams them as one RNDZ_DATA message,
 * which is fragmented like any other.
 */
#ifndef XDEV_OFI_H
#define XDEV_OFI_H

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <signal.h>
#include <stdbool.h>
#include "../kit/credits.h"
#include "../kit/regcache.h"
#include "../core/transport.h"
#include "../kit/rxmsg.h"
#include "../kit/txq.h"

#define OFI_HDR 8            /* frame header */
#define OFI_FIRST_HDR 16     /* ... with the message length */
#define OFI_BUF_BYTES (64 * 1024 + 128) /* one receive buffer: a 64 KiB eager
                                         * message and its heads fit whole */
#define OFI_CREDITS_MAX 16
#define OFI_CREDITS_MIN 4
#define OFI_POOL_BUDGET ((size_t)16 << 20) /* receive buffers, in all */
#define OFI_CTRL_RESERVE 3   /* two CREDIT frames and a BYE beyond the credits */
#define OFI_RX_BATCH 32
#define OFI_EARLY_MAX 64     /* frames a peer may be ahead (> credits + reserve) */
#define OFI_RMA_BYTES_MAX (4 * XDEV_TP_PASS_BYTES) /* RMA in flight to a peer (ofi_rma_flush) */
#define OFI_PING_MS 300      /* a watched, silent peer is pinged this often */
#define OFI_RETRY_MS 10      /* unpublished addresses looked up again */
#define OFI_DRAIN_MS 100     /* a peer that exited, or that a send to failed: */
#define OFI_DRAIN_POLLS 64   /* its last bytes are read by then, and this many
                              * polls (ofi_timers) */
#define OFI_ADDR_MAX 256

enum ofi_kind {
    K_WHOLE = 1, /* a whole message */
    K_FIRST,     /* the start of a message continued by MORE frames */
    K_MORE,
    K_PING,      /* no data; takes a credit; finds out a dead peer */
    K_CREDIT,    /* credits only (reserve) */
    K_BYE,       /* nothing more follows (reserve) */
    K_GONE,      /* out of sequence: the sender failed us, so fail it */
};

/* A receive buffer of the pool. */
typedef struct ofi_rxbuf {
    struct fi_context2 fctx; /* first: the completion's op_context */
    struct ofi_rxbuf *next;  /* a peer's backlog */
    size_t len;              /* bytes the frame filled */
    bool posted;             /* the provider holds it (ofi_rx.c) */
    uint8_t data[OFI_BUF_BYTES];
} ofi_rxbuf_t;

/* One message in flight: a txop's frames, or an rma op's pieces. */
typedef struct ofi_msg {
    struct ofi_msg *prev, *next; /* the peer's in-flight list */
    xdev_txop_t *op;             /* NULL once handed back (peer failed) */
    xdev_rmaop_t *rma;
    xdev_reg_t *reg;             /* local registration (FI_MR_LOCAL) */
    xdev_reg_t **piece_regs;     /* a vector's, one per piece (FI_MR_LOCAL) */
    unsigned op_niov;            /* entries of piece_regs */
    size_t posted;               /* bytes posted so far */
    unsigned pending;            /* posted, not completed */
    bool started;                /* its first frame is posted */
    bool all_posted;
    int peer;
    struct ofi_msg *qnext;       /* an rma message's place in the peer's rmaq */
} ofi_msg_t;

/* A buffer exposed to a peer (xdev_mem_t.handle). */
typedef struct ofi_exposure {
    struct ofi_exposure *prev, *next;
    xdev_reg_t *reg;
    int peer;
    bool remote_write;
} ofi_exposure_t;

/* One posted operation's context. */
typedef struct ofi_ctx {
    struct fi_context2 fctx;     /* first */
    struct ofi_ctx *next_free;
    ofi_msg_t *msg;              /* NULL: a control frame */
    int peer;
    uint8_t kind;
    size_t rma_len;              /* an RMA op's bytes (msg->rma) */
    uint8_t bytes[OFI_FIRST_HDR + XDEV_HEAD_MAX]; /* frame header and head */
} ofi_ctx_t;

typedef struct ofi_peer {
    int rank;
    bool resolved;        /* addr is valid */
    bool announced;       /* the core knows its eager limit */
    bool failed;          /* nothing more goes to it; the core is told once
                           * the provider lets go of what it holds (held) */
    bool broken;          /* an error seen where we could not act on it */
    bool active;          /* traffic either way: it gets a BYE at shutdown */
    bool bye_sent, bye_done, bye_rx;
    bool gone_told;       /* failed here, and sent K_GONE since it is not */
    bool watched;
    bool in_service;
    bool ping_out;        /* a ping awaits its completion */
    bool send_failed;     /* a send or read to it failed: it is failed once
                           * what it sent has had its time to come in */
    fi_addr_t addr;
    size_t eager_limit;
    bool same_pids;       /* its pid names its process here */
    int pid, pidfd;
    uint64_t ping_ms;     /* when the ping out was sent */
    uint64_t give_up_ms;  /* unresolvable after this means dead */
    uint64_t last_heard_ms;
    /* sending */
    xdev_credits_t cr;
    uint8_t tx_seq, rx_seq;
    xdev_txq_t txq;        /* not started */
    ofi_msg_t *cur;       /* the send being fragmented */
    ofi_msg_t *rmaq_head, *rmaq_tail; /* rma messages not fully posted */
    size_t rma_bytes;     /* RMA posted, not completed */
    ofi_msg_t *inflight;  /* every message with posted or unposted parts */
    unsigned nctl;        /* control frames awaiting completion */
    unsigned held;        /* failed: messages the provider still works on, and
                           * regions exposed for it to write into */
    bool exited;          /* failed, and its process is gone (same_pids) */
    uint64_t failed_ms;   /* when it failed (or a send to it did) */
    unsigned failed_polls; /* xdev_tp.polls then */
    /* receiving */
    ofi_rxbuf_t *backlog_head, *backlog_tail;
    ofi_rxbuf_t *early[OFI_EARLY_MAX]; /* early[i]: seq rx_seq + i arrived */
    unsigned nearly;
    uint64_t gap_ms;      /* since when early frames wait for the next in
                           * sequence (ofi_timers) */
    xdev_rxmsg_t in;      /* the message being read; RESUMED: its first
                           * frame is still at the backlog head */
    size_t rx_off;        /* where the payload starts in the backlog head */
    struct ofi_peer *service_next;
} ofi_peer_t;

struct xdev_tp {
    xdev_t *dev;
    int rank, size;
    size_t eager_limit;
    int peer_timeout_ms;
    ofi_peer_t *peers;    /* size entries; only served ranks are used */
    bool *serve;
    /* libfabric */
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_ep *ep;
    struct fid_av *av;
    struct fid_cq *cq;
    int wait_fd;          /* -1: the provider has no FI_WAIT_FD */
    uint64_t mr_mode;
    bool local_only;      /* the provider reaches this host only */
    char pid_space[128];  /* ofi_addr.c */
    size_t inject_max;
    size_t frame_max;     /* largest frame posted (ofi_fabric.c: frame_limit) */
    size_t rma_max;       /* largest RMA op: XDEV_TP_PASS_BYTES at most (ofi_rma_flush) */
    int rma_mode;         /* XDEV_RNDZ_SEND when there is no RMA */
    uint64_t next_key;    /* requested MR keys, without FI_MR_PROV_KEY */
    ofi_exposure_t *exposed;
    xdev_regcache_t *regcache; /* user buffers: exposed, and FI_MR_LOCAL ones */
    /* pools */
    ofi_rxbuf_t *rxbufs;
    size_t nrxbufs;
    struct fid_mr *rx_mr; /* FI_MR_LOCAL */
    void *rx_desc;
    ofi_ctx_t *ctxs;
    size_t nctxs;
    ofi_ctx_t *free_ctx;
    struct fid_mr *ctx_mr;
    void *ctx_desc;
    int credits;          /* per peer */
    ofi_peer_t *service;  /* peers to look at in the next progress call */
    ofi_rxbuf_t *unposted; /* buffers the endpoint refused for now */
    size_t retired;       /* receive buffers given up after an error */
    unsigned polls;
    uint64_t now_ms;      /* coarse, refreshed by the timers */
    uint64_t next_timer_ms;
    bool shutting_down;
};

/* ofi_lib.c */
typedef struct {
    int (*getinfo)(uint32_t version, const char *node, const char *service, uint64_t flags,
                   const struct fi_info *hints, struct fi_info **info);
    void (*freeinfo)(struct fi_info *info);
    struct fi_info *(*dupinfo)(const struct fi_info *info);
    int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
    const char *(*strerror)(int errnum);
} ofi_lib_t;
extern ofi_lib_t ofi_lib; /* filled by the first successful ofi_lib_load */
int ofi_lib_load(void);   /* XDEV_OK, or XDEV_ERR_INIT where libfabric cannot be loaded */
/* The application's signal handlers, kept across what libfabric does. */
typedef struct {
    struct sigaction act[NSIG];
} ofi_signals_t;
void ofi_signals_save(ofi_signals_t *s);
void ofi_signals_restore(const ofi_signals_t *s);

/* ofi_fabric.c */
int ofi_fabric_open(xdev_tp_t *tp, const char *job_id);
void ofi_fabric_close(xdev_tp_t *tp);
bool ofi_fast_network(const xdev_t *dev);
void ofi_info(FILE *out);
const char *ofi_strerror(int rc);
extern bool ofi_verbose; /* XDEV_OFI_VERBOSE, set by the last open */
void ofi_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ofi_addr.c */
int ofi_addr_publish(xdev_tp_t *tp);
int ofi_resolve(xdev_tp_t *tp, ofi_peer_t *p, bool heard);
void ofi_timers(xdev_tp_t *tp, uint64_t now);

/* ofi_tx.c */
ofi_ctx_t *ofi_ctx_get(xdev_tp_t *tp);
void ofi_ctx_put(xdev_tp_t *tp, ofi_ctx_t *c);
int ofi_send(xdev_tp_t *tp, int peer, xdev_txop_t *op, int how);
size_t ofi_short_max(xdev_tp_t *tp);
void ofi_tx_flush(xdev_tp_t *tp, ofi_peer_t *p);
bool ofi_send_ctrl(xdev_tp_t *tp, ofi_peer_t *p, uint8_t kind);
void ofi_tell_gone(xdev_tp_t *tp, ofi_peer_t *p);
void ofi_tx_complete(xdev_tp_t *tp, ofi_ctx_t *c, bool ok);
ofi_msg_t *ofi_msg_new(xdev_tp_t *tp, ofi_peer_t *p);
void ofi_msg_free(xdev_tp_t *tp, ofi_peer_t *p, ofi_msg_t *m);
void *ofi_mr_desc(struct fid_mr *mr);
void *ofi_reg_desc(const xdev_reg_t *reg);
int ofi_regcache_open(xdev_tp_t *tp);
unsigned ofi_tx_fail_all(xdev_tp_t *tp, ofi_peer_t *p);
void ofi_tx_release_held(xdev_tp_t *tp, ofi_peer_t *p);

/* ofi_rx.c */
int ofi_rx_pool_open(xdev_tp_t *tp);
void ofi_rx_pool_close(xdev_tp_t *tp);
void ofi_rx_arrived(xdev_tp_t *tp, ofi_rxbuf_t *b, size_t len);
void ofi_rx_failed(xdev_tp_t *tp, ofi_rxbuf_t *b);
void ofi_rx_drain(xdev_tp_t *tp, ofi_peer_t *p);
void ofi_rx_drop(xdev_tp_t *tp, ofi_peer_t *p);
void ofi_rx_repost_all(xdev_tp_t *tp);
void ofi_rx_owe_credits(xdev_tp_t *tp, ofi_peer_t *p);
void ofi_resume(xdev_tp_t *tp, void *token, const xdev_rx_t *to);

/* ofi_rma.c */
int ofi_rndz_mode(xdev_tp_t *tp, int peer, size_t len);
int ofi_mem_expose(xdev_tp_t *tp, int peer, void *buf, size_t len, bool remote_write,
                   xdev_mem_t *mem);
void ofi_mem_release(xdev_tp_t *tp, xdev_mem_t *mem);
void ofi_mem_release_all(xdev_tp_t *tp);
unsigned ofi_revoke_exposures(xdev_tp_t *tp, const ofi_peer_t *p);
int ofi_rma(xdev_tp_t *tp, int peer, xdev_rmaop_t *op);
void ofi_rma_flush(xdev_tp_t *tp, ofi_peer_t *p);
int ofi_mr_local(xdev_tp_t *tp, void *buf, size_t len, uint64_t access, struct fid_mr **mr);

/* ofi.c */
void ofi_service_later(xdev_tp_t *tp, ofi_peer_t *p);
/* Fail p; XDEV_OFI_VERBOSE says where it was decided. */
void ofi_peer_fail_at(xdev_tp_t *tp, ofi_peer_t *p, const char *where, int line);
#define ofi_peer_fail(tp, p) ofi_peer_fail_at((tp), (p), __func__, __LINE__)
/* Fail p, which lives but broke its stream, and tell it so (K_GONE). */
void ofi_peer_reject_at(xdev_tp_t *tp, ofi_peer_t *p, const char *where, int line);
#define ofi_peer_reject(tp, p) ofi_peer_reject_at((tp), (p), __func__, __LINE__)
void ofi_peer_released(xdev_tp_t *tp, ofi_peer_t *p);
/* p said goodbye and all it sent is in: it left. */
void ofi_peer_left(xdev_tp_t *tp, ofi_peer_t *p);

#endif
