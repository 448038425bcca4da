/*
 * shm.h - the shared-memory transport's own state, shared by its files:
 *   shm.c       the ops table, open/close, progress, what a departed peer costs
 *   shm_seg.c   segments (create, map, unlink) and the processes behind them:
 *               liveness checks, process_vm_readv/writev (the single copy)
 *   shm_ring.h  a ring's shared layout and the steps of its fast path
 *   shm_ring.c  a message written into a ring as records (fragmenting)
 *   shm_tx.c    sending: the per-peer queue and its flushing
 *   shm_rx.c    receiving: a ring's records parsed and handed to the core
 *   shm_verdict.c  streamed or copied once: the rates behind the choice
 *   shm_bell.c  the doorbell: sleeping while peers write to us
 *
 * Every rank owns one segment, "/xdev-<job id>-<rank>", holding one ring per
 * local rank that sends to it (shm_ring.h). At open every rank creates its
 * own segment and maps the segments of all the local ranks it serves, then
 * the last of them to map a segment unlinks its name, so nothing is left in
 * /dev/shm however the job ends (xdevrun removes what ranks killed during
 * start-up leave). A rank that maps a peer's segment leaves its eager limit
 * and its pid beside its ring there: the peer tells the core the limit with
 * the first record, and knows by the pid a rank that came and went before
 * it looked for that rank's segment.
 *
 * A peer is known to be gone when its process has exited (a pidfd, or
 * kill(pid, 0) where pidfds are missing), when it set `eof` on its ring to
 * us, or when it set `closed` on our ring to it (it left, or it dropped us
 * for breaking the protocol). Its queued sends then fail at once; what it
 * wrote before it went is still read, and only then is the core told.
 *
 * Like a TCP connection, a ring is "proven" only once the peer has begun
 * reading it (it sets ctl->seen): until then the first send to that peer
 * does not complete, so a send to a rank that died before we ever talked
 * to it fails instead of vanishing into a ring nobody reads.
 */
#ifndef XDEV_SHM_H
#define XDEV_SHM_H

#include <poll.h>
#include <stdbool.h>
#include "../core/transport.h"
#include "../kit/rxmsg.h"
#include "../kit/txq.h"
#include "shm_ring.h"

#define SHM_MAGIC 0x31474553564458ull /* "XDVSEG1" */
#define SHM_VERSION 5
#define SHM_CHECK_MS 20     /* how often departed peers are looked for ... */
#define SHM_CLOCK_EVERY 16  /* ... judged by a clock read every this many polls */
#define SHM_RX_BUDGET 64    /* records read from one ring per progress call */
#define SHM_RX_STOP_MAX 1024 /* a poll stops after a taken message this short
                              * unless another receive names its sender
                              * (shm_rx.c) */

/* The head of a segment. Written by the owner before `magic` is published,
 * then only `mapped` changes. */
typedef struct shm_seg_hdr {
    _Atomic uint64_t magic;  /* SHM_MAGIC once the rest is ready */
    uint32_t version;
    int32_t owner_rank;
    int32_t owner_pid;
    uint32_t nrings;
    uint32_t nlocal;         /* ranks that will map it: the owner and its senders */
    uint32_t reserved;       /* 0; keeps what follows 8-byte aligned */
    uint64_t total_bytes;
    uint64_t ring_bytes;     /* data bytes of each ring, a power of two */
    uint64_t ctl_off;        /* nrings shm_ring_ctl_t */
    uint64_t data_off;       /* nrings data areas of ring_bytes */
    uint64_t self_addr;      /* this header in the owner's address space:
                              * what peers read to test process_vm_readv */
    _Alignas(SHM_SPLIT) _Atomic uint32_t mapped; /* the last mapper unlinks */
    _Alignas(SHM_SPLIT) _Atomic uint32_t armed;  /* the owner sleeps: ring its
                                                  * bell (shm_bell.c) */
    _Alignas(SHM_SPLIT) int32_t senders[];       /* ring i carries senders[i] */
} shm_seg_hdr_t;

/* A segment as mapped here. */
typedef struct shm_seg {
    shm_seg_hdr_t *hdr;
    size_t bytes;
} shm_seg_t;

enum shm_cma { CMA_UNTESTED, CMA_WORKS, CMA_BROKEN };

/* A rendezvous from this size up streams through the ring only while its
 * receiver finds such streams at least as fast as its single copies;
 * otherwise it is copied once (shm_verdict.c, shm_rndz_mode). The sender tries
 * the other way with one in SHM_ADAPT_RETRY of them, then twice as far
 * apart each time, up to SHM_ADAPT_RETRY_MAX. Until it has made one, a receiver
 * takes a single copy to move SHM_SINGLE_GUESS bytes per us (12-13 GB/s
 * here wherever the cores are). From 128 KiB, the first power of two over
 * the default eager limit: with the VM's two cores far apart, 128-512 KiB
 * ping-pongs took 0.58-0.83 of the time they took when this was 256 KiB,
 * about what Open MPI's single copy takes. */
#define SHM_ADAPT_MIN ((size_t)128 << 10)

/* Under SHM_ADAPT_MIN, from SHM_MID_MIN up, a message comes through the
 * ring or is read once as its receiver has timed faster at its size (one
 * of SHM_MID_BUCKETS powers of two), timing a pair of messages in every
 * SHM_MID_SAMPLE, and all during a try of the way not chosen, after
 * SHM_MID_TRY_FIRST messages (again when the choice turns or a size is
 * first timed), then twice as many each time, up to SHM_MID_TRY_MAX: the
 * sender sends SHM_MID_TRY_SENDS the way tried, of which the first
 * SHM_MID_TRY_COLD timed do not count and the next SHM_MID_TRY_SPAN do;
 * a try the sender has not followed after SHM_MID_TRY_GIVEUP messages
 * ends (shm_middle.c). Where the way chosen is the faster by far, a try
 * costs: with one every 1024 messages at most, 8-16 KiB windows moved
 * 0.87-0.91 of what they moved with none (test/bench/RESULTS.md, "shm
 * middle sizes, part 8"). */
#define SHM_MID_MIN ((size_t)8 << 10)
#define SHM_MID_BUCKETS 4
#define SHM_MID_SAMPLE 32
#define SHM_MID_TRY_SPAN 3
#define SHM_MID_TRY_FIRST 16
#define SHM_MID_TRY_MAX 8192
#define SHM_MID_TRY_GIVEUP 64
#define SHM_MID_TRY_COLD 2
#define SHM_MID_TRY_SENDS (2 * (SHM_MID_TRY_COLD + SHM_MID_TRY_SPAN))
#define SHM_SINGLE_GUESS 12000
#define SHM_ADAPT_RETRY 64
#define SHM_ADAPT_RETRY_MAX 4096

/* A long rendezvous is offered for reading (XDEV_RNDZ_READ) even when the
 * sender's verdict is to stream it: the receiver reads it anyway while it
 * has long sends of its own to the sender open, and otherwise declines,
 * which the core answers by streaming. Both ways at once, each rank's
 * streams wait behind the other's handshakes and the two copies of each
 * share the CPUs: on a 2-core Intel host 1-4 MiB both ways streamed at
 * 0.57-0.66 of Open MPI's single copies, and read once at its level. The
 * offer's key says which it is. */
enum shm_offer { SHM_OFFER_READ = 0, SHM_OFFER_IF_BOTH_WAYS = 1 };

typedef struct shm_peer {
    int rank;
    bool gone;       /* left or died: nothing new will come or be read */
    bool failed;     /* the core has been told */
    bool proven;     /* it has read from our ring to it */
    bool rx_seen;    /* we told it we read its ring */
    uint8_t cma;
    int pid;
    int pidfd;       /* -1: fall back to kill(pid, 0) */
    int bell_fd;     /* its doorbell's write end, or -1 */
    uint64_t cma_probe; /* where its segment header is in its address space */
    shm_seg_t seg;      /* its segment, with our ring to it */
    shm_txring_t tx;
    xdev_txq_t txq;
    shm_rxring_t rx;    /* its ring to us, in our segment */
    xdev_rxmsg_t in;    /* the message being read from it; RESUMED: its
                         * start record is still in the ring */
    size_t rx_skip;     /* start record: framing and head before the payload */
    uint64_t stream_t0; /* when a long message began to stream in
                         * (shm_verdict.c's clock); 0: none */
    size_t stream_head; /* its payload not counted in its rate */
    uint32_t ring_rate; /* bytes per us of its long streams to us, averaged */
    uint32_t single_rate; /* of our single copies from it; 0: none yet */
    uint64_t warm_bytes;  /* of its long streams to us since our last single
                           * copy with it: from a ring's worth on, warm */
    bool adapt_slow;      /* its verdict when we last sent it a long message */
    unsigned adapt_every; /* one long message in this many goes against it */
    unsigned adapt_picks; /* long messages to it since one went against it */
    size_t try_lap;       /* a try of the ring: bytes of the lap to go */
    bool try_last;        /* ... and the one message after the lap */
    unsigned picked_at;   /* tp->polls when we last sent it a long message */
    uint8_t offer;        /* enum shm_offer for the rendezvous being started */
    unsigned offers_open; /* our long sends to it offered for reading, not done */
    xdev_rmaop_t *copies, *copies_tail; /* single copies with it, in pieces */
    size_t copied;      /* bytes of the first one done */
    /* shm_middle.c: its 8-128 KiB messages to us ... */
    uint32_t mid_rate[2][SHM_MID_BUCKETS][3]; /* bytes per us through the
                                               * ring, read once: the last
                                               * three timed; 0: not timed */
    uint64_t mid_from;   /* ... read once from this size up (0: none) */
    uint64_t mid_t0;     /* one through the ring being timed: when it began
                          * (0 between messages: shm_mid_ring_part) */
    uint64_t mid_first;  /* ... and how long its first record took */
    uint64_t mid_prev_end; /* when the first of a timed pair was in */
    uint64_t mid_walked; /* how far into the ring such messages have come */
    unsigned mid_seen;   /* since the last try began */
    unsigned mid_every;  /* a try every this many */
    unsigned mid_sample;
    uint8_t mid_try, mid_last_try; /* the way tried now, and last */
    uint8_t mid_try_left; /* its messages still to time */
    /* ... and ours to it: from what size up it reads them, as we follow;
     * the tries it asked for, and how many of ours a try still takes */
    uint64_t mid_follows;
    uint32_t mid_tries_seen;
    unsigned mid_try_sends;
} shm_peer_t;

struct xdev_tp {
    xdev_t *dev;
    int rank, size;
    shm_peer_t **by_rank; /* size entries, NULL for ranks we do not serve */
    shm_peer_t *peers;    /* the npeers ranks we serve */
    int npeers;
    struct pollfd *pidfds; /* npeers entries, fd -1 where unused */
    shm_seg_t own;
    char own_name[128];
    size_t cma_min;       /* smallest rendezvous copied once; SIZE_MAX: never */
    bool mid_adapts;      /* 8-128 KiB messages read once where faster
                           * (shm_middle.c) */
    bool cpus_enough;     /* this host's ranks fit its CPUs (shm_verdict.c,
                           * the rings' start_over_behind) */
    unsigned copies;      /* single copies queued, all peers */
    int cma_mode;         /* XDEV_RNDZ_READ (receiver pulls) or _WRITE (sender pushes) */
    unsigned polls;
    uint64_t next_check_ms;
    size_t eager_limit;   /* ours, told to each peer through its ring to us */
    bool armed;           /* own.hdr->armed is set */
    bool fence_free;      /* registered for the sleepers' membarrier */
    int bell_fd;          /* our doorbell, read end, or -1 */
    int epfd;             /* the bell and the peers' pidfds, or -1 */
    char bell_path[160];
    int peer_timeout_ms;
};

/* shm_seg.c */
int shm_seg_create(xdev_tp_t *tp, const xdev_tp_params_t *p, size_t ring_bytes);
int shm_seg_map_peers(xdev_tp_t *tp, const char *job_id, int timeout_ms);
void shm_seg_unmap(shm_seg_t *seg);
void shm_seg_find_gone(xdev_tp_t *tp);
bool shm_seg_header_sane(const shm_seg_hdr_t *h, size_t bytes, int owner); /* a peer's segment */
bool shm_seg_cma_works(xdev_tp_t *tp, shm_peer_t *p);
/* Copy len bytes between local and the peer's remote_addr with
 * process_vm_readv (or, write, process_vm_writev). */
int shm_seg_copy(xdev_tp_t *tp, int peer, void *local, size_t len, uint64_t remote_addr,
                 bool write);

/* shm_ring.c */
bool shm_ring_push(shm_txring_t *r, xdev_txop_t *op);
/* The whole op as one record now, or nothing written (false). */
bool shm_ring_push_whole(shm_txring_t *r, xdev_txop_t *op);
void shm_ring_set_frags(shm_txring_t *r); /* from r->size */

/* shm_tx.c */
int shm_send(xdev_tp_t *tp, int peer, xdev_txop_t *op, int how);
void shm_flush(xdev_tp_t *tp, shm_peer_t *p);
void shm_fail_queue(xdev_tp_t *tp, shm_peer_t *p);
void shm_tx_gone(xdev_tp_t *tp, shm_peer_t *p);

/* shm_rx.c */
void shm_rx_poll(xdev_tp_t *tp, shm_peer_t *p);
void shm_rx_publish_all(xdev_tp_t *tp);
void shm_resume(xdev_tp_t *tp, void *token, const xdev_rx_t *to);

/* shm_bell.c */
int shm_bell_path(xdev_t *dev, const char *job_id, int rank, char *out, size_t cap);
bool shm_bell_fence_free(void); /* can this kernel do it (xdev-info) */
void shm_bell_create(xdev_tp_t *tp, const char *job_id);
void shm_bell_open_peer(xdev_tp_t *tp, shm_peer_t *p, const char *job_id);
void shm_bell_watch(xdev_tp_t *tp);
void shm_bell_forget(xdev_tp_t *tp, shm_peer_t *p);
void shm_bell_ring(shm_peer_t *p);
void shm_bell_disarm(xdev_tp_t *tp);
int shm_arm(xdev_tp_t *tp);
/* The slow side of a store-then-load handshake with our peers: a full
 * fence on every process of ours (shm_bell.c). */
void shm_fence_peers(void);

/* Bytes per us, at least 1: an average of 0 means nothing timed yet. */
static inline uint32_t shm_rate_of(uint64_t bytes, uint64_t ns)
{
    uint64_t rate = bytes * 1000 / (ns ? ns : 1);
    return rate < 1 ? 1 : rate > UINT32_MAX ? UINT32_MAX : (uint32_t)rate;
}

/* shm_verdict.c. A long stream in from p begins (its first record holds
 * `first` payload bytes) or has all come in (p->in.got); its bytes, timed
 * from shm_stream_clock, or a single copy from it took ns: average its
 * rate in and give p the verdict. */
void shm_stream_begin(const xdev_tp_t *tp, shm_peer_t *p, size_t first);
void shm_stream_end(const xdev_tp_t *tp, shm_peer_t *p);
uint64_t shm_stream_clock(const xdev_tp_t *tp);
void shm_rate_stream(const xdev_tp_t *tp, shm_peer_t *p, uint64_t bytes, uint64_t ns);
void shm_rate_single(const xdev_tp_t *tp, shm_peer_t *p, uint64_t bytes, uint64_t ns);
/* A single copy with p moved a message, so the ring is out of our caches. */
void shm_copied_once(shm_peer_t *p);
/* The sender's side: whether to copy the next long rendezvous to p once. */
bool shm_copy_once_next(shm_peer_t *p, size_t len, bool timed, unsigned polls);

/* shm_middle.c. Receiver: one of p's messages of SHM_MID_MIN up to
 * SHM_ADAPT_MIN arrives (through the ring, ring_len bytes at our place
 * in it, or as an offer to read: 0): the clock to time it from, or 0 if
 * it is not timed. A record of one timed through the ring was taken
 * (last: the whole message is in), or a read of one begun at t0 ended.
 * Sender: have the core send such messages to p as p last told us. */
uint64_t shm_mid_arrives(const xdev_tp_t *tp, shm_peer_t *p, size_t ring_len);
void shm_mid_ring_part(shm_peer_t *p, size_t len, bool last);
void shm_mid_read(shm_peer_t *p, size_t len, uint64_t t0);
void shm_mid_follow(xdev_tp_t *tp, shm_peer_t *p, size_t len);
static inline bool shm_mid_size(size_t len)
{
    return len >= SHM_MID_MIN && len < SHM_ADAPT_MIN;
}

/* The fast side of such a handshake: a store, this, then a load that
 * cannot miss the peer's store before its shm_fence_peers. */
static inline void shm_fence_cheap(const xdev_tp_t *tp)
{
    if (tp->fence_free)
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

/* We published records to p or released room in its ring to us: wake it
 * if it sleeps (shm_bell.c says why the order of the two steps holds). */
static inline void shm_bell_after(xdev_tp_t *tp, shm_peer_t *p)
{
    shm_fence_cheap(tp);
    if (atomic_load_explicit(&p->seg.hdr->armed, memory_order_relaxed))
        shm_bell_ring(p);
}

/* shm.c */
void shm_peer_gone(xdev_tp_t *tp, shm_peer_t *p);
void shm_peer_fail(xdev_tp_t *tp, shm_peer_t *p);

#endif
