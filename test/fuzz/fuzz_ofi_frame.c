/*
 * fuzz_ofi_frame.c - the libfabric transport's frame reader (ofi_rx_arrived:
 * in_sequence, the early slots, start_message and take_payload, deferral
 * and resume) on frames that one peer, broken or malicious, sent as it
 * liked. The input is a run of frames, each a 16-bit little-endian length
 * and that many bytes (fewer at the end of the input).
 *
 * No provider is needed: libfabric's calls are inline functions that go
 * through the endpoint's ops tables, so the endpoint and completion queue
 * here are fakes that hold the receive buffers posted to them, in order,
 * and complete them with the input's frames, as a provider fills buffers
 * in the order they were posted. The transport and core are the real ones.
 *
 * The reader promises (ofi_rx.c) that no frame makes it read past what the
 * frame filled, touch a buffer it gave back, or place more into a receive
 * than the core gave it room for (ASan: the buffers it holds are poisoned
 * beyond each frame, and all of a buffer the provider holds; receives are
 * heap blocks of exactly their size); that every buffer is in one place at
 * a time (the provider, a backlog, an early slot, or waiting to be posted),
 * never posted twice and never lost; that a peer gets credits back only for
 * buffers its frames used and returns only credits it was given; that a
 * frame of a kind that does not exist fails its sender once its turn in the
 * sequence comes, and one that never comes fails it a peer timeout later
 * (check_gap_timer); that a failed peer is told to the core and keeps
 * nothing, and is told itself (K_GONE) unless it said it failed us; and
 * that the core never holds more than the frames carried (fuzz_core_check).
 */
#include <sanitizer/asan_interface.h>
#include "fuzz_core.h"
#include "ofi.h"

enum { ME = 0, PEER = 1, NBUFS = OFI_CREDITS_MIN + OFI_CTRL_RESERVE };

/* The fake provider: what it holds and what it was given. */
static struct {
    xdev_tp_t *tp;
    ofi_rxbuf_t *held[NBUFS]; /* posted receives, oldest first */
    unsigned nheld;
    const uint8_t *in;        /* frames not yet delivered */
    size_t left;
    size_t delivered;         /* bytes of frames delivered */
    unsigned from_peer;       /* frames delivered that name the peer */
    bool bad_kind[NBUFS];     /* a buffer's frame names the peer and no kind */
    unsigned credits_back;    /* credits our frames returned to the peer */
    bool peer_said_gone;      /* a frame delivered was the peer's K_GONE */
    unsigned gone_back;       /* K_GONE frames we sent the peer */
} prov;

static ssize_t fake_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src,
                         void *context)
{
    (void)ep, (void)desc, (void)src;
    ofi_rxbuf_t *b = context;
    FUZZ_CHECK(b >= prov.tp->rxbufs && b < prov.tp->rxbufs + NBUFS);
    FUZZ_CHECK(buf == b->data && len == OFI_BUF_BYTES);
    for (unsigned i = 0; i < prov.nheld; i++)
        FUZZ_CHECK(prov.held[i] != b);
    prov.held[prov.nheld++] = b;
    ASAN_POISON_MEMORY_REGION(b->data, OFI_BUF_BYTES); /* the provider's now */
    return 0;
}

/* Everything the core answers with, and every CREDIT frame, is injected:
 * the transport has no send contexts here, so nothing else is posted. */
static ssize_t fake_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest)
{
    (void)ep;
    const uint8_t *f = buf;
    FUZZ_CHECK(dest == PEER && len >= OFI_HDR && xdev_get_le32(f + 4) == ME);
    prov.credits_back += f[2] | (unsigned)f[3] << 8;
    prov.gone_back += f[0] == K_GONE;
    return 0;
}

/* The next frame of the input into the oldest posted buffer. */
static void deliver(struct fi_cq_msg_entry *e)
{
    size_t len = prov.in[0] | (size_t)prov.in[1] << 8;
    prov.in += 2;
    prov.left -= 2;
    if (len > prov.left)
        len = prov.left;
    ofi_rxbuf_t *b = prov.held[0];
    memmove(prov.held, prov.held + 1, --prov.nheld * sizeof prov.held[0]);
    FUZZ_CHECK(b->posted);
    ASAN_UNPOISON_MEMORY_REGION(b->data, len);
    memcpy(b->data, prov.in, len);
    prov.in += len;
    prov.left -= len;
    prov.delivered += len;
    bool from_peer = len >= OFI_HDR && xdev_get_le32(b->data + 4) == PEER;
    prov.from_peer += from_peer;
    prov.bad_kind[b - prov.tp->rxbufs] = from_peer && (b->data[0] < K_WHOLE || b->data[0] > K_BYE);
    prov.peer_said_gone |= from_peer && b->data[0] == K_GONE;
    *e = (struct fi_cq_msg_entry){ .op_context = b, .flags = FI_RECV | FI_MSG, .len = len };
}

/* A frame can land: one is left (a lone last byte is none) and a buffer
 * is posted for it. */
static bool can_land(void)
{
    return prov.left >= 2 && prov.nheld;
}

static ssize_t fake_cq_read(struct fid_cq *cq, void *buf, size_t count)
{
    (void)cq;
    size_t n = 0;
    for (; n < count && can_land(); n++)
        deliver((struct fi_cq_msg_entry *)buf + n);
    return n ? (ssize_t)n : -FI_EAGAIN;
}

static int fake_close(struct fid *fid)
{
    (void)fid;
    return 0;
}

static struct fi_ops fake_fid_ops = { .size = sizeof fake_fid_ops, .close = fake_close };
static struct fi_ops_msg fake_msg = { .size = sizeof fake_msg, .recv = fake_recv,
                                      .inject = fake_inject };
static struct fi_ops_cq fake_cq_ops = { .size = sizeof fake_cq_ops, .read = fake_cq_read };
static struct fid_ep fake_ep = { .fid = { .fclass = FI_CLASS_EP, .ops = &fake_fid_ops },
                                 .msg = &fake_msg };
static struct fid_cq fake_cq = { .fid = { .fclass = FI_CLASS_CQ, .ops = &fake_fid_ops },
                                 .ops = &fake_cq_ops };

/* An open transport to one resolved peer, as ofi_open and ofi_resolve
 * leave it, with the smallest receive pool. */
static xdev_tp_t *tp_with_peer(void)
{
    xdev_tp_t *tp = calloc(1, sizeof *tp);
    FUZZ_CHECK(tp);
    tp->rank = ME;
    tp->size = 2;
    tp->eager_limit = FUZZ_EAGER_LIMIT;
    tp->peer_timeout_ms = 20000;
    tp->wait_fd = -1;
    tp->ep = &fake_ep;
    tp->cq = &fake_cq;
    tp->inject_max = OFI_HDR + XDEV_HEAD_MAX;
    tp->frame_max = OFI_BUF_BYTES;
    tp->credits = OFI_CREDITS_MIN;
    tp->nrxbufs = NBUFS;
    tp->now_ms = xdev_now_coarse_ms();
    tp->peers = calloc(2, sizeof *tp->peers);
    tp->serve = calloc(2, sizeof *tp->serve);
    FUZZ_CHECK(tp->peers && tp->serve);
    for (int r = 0; r < 2; r++) {
        tp->peers[r].rank = r;
        tp->peers[r].pidfd = -1;
        tp->peers[r].cr.avail = tp->credits;
    }
    tp->serve[PEER] = true;
    ofi_peer_t *p = &tp->peers[PEER];
    p->resolved = true;
    p->addr = PEER;
    p->eager_limit = FUZZ_EAGER_LIMIT;
    prov.tp = tp;
    FUZZ_CHECK(ofi_rx_pool_open(tp) == XDEV_OK);
    return tp;
}

/* Progress while frames can still land or the transport has work left. */
static void run(xdev_tp_t *tp, fuzz_core_t *fc)
{
    for (int i = 0; i < 64 && (can_land() || tp->service || tp->unposted); i++) {
        xdev_ofi_ops.progress(tp, false);
        fuzz_core_step(fc);
    }
}

static void mark(bool *seen, const xdev_tp_t *tp, const ofi_rxbuf_t *b)
{
    FUZZ_CHECK(!seen[b - tp->rxbufs]);
    seen[b - tp->rxbufs] = true;
}

/* Every buffer is in exactly one place, and a failed peer holds none. A
 * frame of no kind can only be waiting for its turn, in an early slot. */
static void check_buffers(const xdev_tp_t *tp, const ofi_peer_t *p)
{
    bool seen[NBUFS] = { false }, early[NBUFS] = { false };
    for (unsigned i = 0; i < prov.nheld; i++)
        mark(seen, tp, prov.held[i]);
    for (const ofi_rxbuf_t *b = tp->unposted; b; b = b->next)
        mark(seen, tp, b);
    for (const ofi_rxbuf_t *b = p->backlog_head; b; b = b->next)
        mark(seen, tp, b);
    unsigned nearly = 0;
    for (int i = 0; i < OFI_EARLY_MAX; i++) {
        if (p->early[i]) {
            mark(seen, tp, p->early[i]);
            early[p->early[i] - tp->rxbufs] = true;
            nearly++;
        }
    }
    for (int i = 0; i < NBUFS; i++)
        FUZZ_CHECK(seen[i] && (p->failed || !prov.bad_kind[i] || early[i]));
    FUZZ_CHECK(nearly == p->nearly);
    if (p->failed)
        FUZZ_CHECK(!p->backlog_head && !p->nearly);
}

/* Frames left early wait for one that never came, as when a provider
 * loses a frame: their sender fails once they have waited a peer timeout,
 * timed from no earlier than they arrived (`start_ms`), and not a
 * millisecond sooner. A sender whose goodbye came and all of whose frames
 * before it are in has left, at the first look (we send it nothing here,
 * so no send of ours waits to complete). Nothing else the timers
 * look at can fail the peer here (no pidfd, and no send context for a
 * ping). */
static void check_gap_timer(xdev_tp_t *tp, ofi_peer_t *p, fuzz_core_t *fc, uint64_t start_ms)
{
    bool was_failed = p->failed, gap = !p->failed && p->nearly;
    bool left = !p->failed && p->bye_rx && !p->backlog_head && p->in.state == XDEV_RXMSG_IDLE &&
                !p->inflight;
    FUZZ_CHECK(!gap || p->gap_ms >= start_ms);
    uint64_t due = p->gap_ms + (uint64_t)tp->peer_timeout_ms;
    ofi_timers(tp, due - 1);
    FUZZ_CHECK(p->failed == (was_failed || left));
    ofi_timers(tp, due);
    FUZZ_CHECK(p->failed == (was_failed || gap || left));
    fuzz_core_step(fc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    memset(&prov, 0, sizeof prov);
    prov.in = data;
    prov.left = size;
    xdev_tp_t *tp = tp_with_peer();
    uint64_t start_ms = tp->now_ms;
    ofi_peer_t *p = &tp->peers[PEER];
    fuzz_core_t fc;
    fuzz_core_open(&fc, ME, 2, &xdev_ofi_ops, tp);
    tp->dev = fc.dev;

    run(tp, &fc);
    fuzz_core_catch_up(&fc);
    run(tp, &fc);
    check_gap_timer(tp, p, &fc, start_ms);

    FUZZ_CHECK(p->failed == fc.dev->peers[PEER].dead);
    /* A peer we failed lives (it sent what failed it): it is told, once,
     * unless it said it failed us, or it said goodbye (it left). */
    FUZZ_CHECK(prov.gone_back <= 1 && prov.gone_back <= p->failed);
    FUZZ_CHECK(!p->failed || prov.gone_back || prov.peer_said_gone || p->bye_rx);
    check_buffers(tp, p);
    FUZZ_CHECK(p->cr.avail >= 0 && p->cr.avail <= tp->credits);
    FUZZ_CHECK(prov.credits_back <= prov.from_peer);
    if (p->in.state == XDEV_RXMSG_PAYLOAD)
        FUZZ_CHECK(p->in.got <= p->in.rx.len);
    fuzz_core_check(&fc, prov.delivered);

    xdev_ofi_ops.close(tp);
    fuzz_core_close(&fc);
    return 0;
}
