/*
 * proto.c - the protocol core every transport shares: sending (eager,
 * synchronous, and the path to one's own rank), posted receives and their
 * matching, and the entry points through which a transport hands over what
 * arrives. Its neighbours hold the rest: unexpected.c the unexpected queue
 * and its memory bound, rndz.c the rendezvous, control.c the head-only
 * replies, claims.c matched probes' claims, peer_failed.c a dead sender.
 *
 * The transport hands us each arrival's head first (xdev_core_rx_begin) so
 * that we can say where the payload belongs before it is read: straight
 * into a matching receive's buffer, into a buffer of the unexpected queue
 * while the memory bound allows, or nowhere yet (deferred: the transport
 * stops reading from that peer, which is what slows a flooding sender down,
 * until a receive or freed memory gives the payload a place).
 */
#include <string.h>
#include "proto.h"

/* ---- request id cookies: a tagged pointer tells a request from an
 * unexpected entry in xdev_rx_t.cookie ---- */

static void *cookie_of_ux(uxmsg_t *e) { return (void *)((uintptr_t)e | 1); }
static bool cookie_is_ux(void *c) { return ((uintptr_t)c & 1) != 0; }
static uxmsg_t *ux_of_cookie(void *c) { return (uxmsg_t *)((uintptr_t)c & ~(uintptr_t)1); }

void head_init(xdev_head_t *h, const xdev_t *d, int dst, int tag, int ctx, uint32_t type)
{
    memset(h, 0, sizeof *h);
    h->hdr.src = (uint32_t)d->rank;
    h->hdr.dst = (uint32_t)dst;
    h->hdr.tag = tag;
    h->hdr.ctx = ctx;
    h->hdr.type = type;
}

void op_build(xdev_txop_t *op, const xdev_head_t *h, const void *payload, size_t len)
{
    op->next = NULL;
    op->sent = 0;
    op->head_len = (uint32_t)xdev_wire_encode(h, xdev_txop_head(op));
    op->payload = payload;
    op->payload_len = len;
    op->payload_niov = 0;
}

/* ---- a request's buffer: one piece of memory, or a vector's pieces ---- */

static const xdev_iov_t *req_iov(const xreq_t *r)
{
    return r->niov ? (const xdev_iov_t *)r->buf : NULL;
}

/* An op carrying the first len bytes of s's buffer. */
void op_build_req(xdev_txop_t *op, const xdev_head_t *h, const xreq_t *s, size_t len)
{
    op_build(op, h, s->buf, len); /* the vector itself when niov */
    op->payload_niov = s->niov;
}

/* Copy n bytes from src to offset off of r's buffer. */
static void req_put(xreq_t *r, size_t off, const void *src, size_t n)
{
    if (r->niov)
        xdev_iov_scatter(req_iov(r), r->niov, off, src, n);
    else if (n)
        xdev_copy((char *)r->buf + off, src, n);
}

/* Copy the first n bytes of s's buffer into r's (a send to oneself). */
static void req_copy(xreq_t *r, const xreq_t *s, size_t n)
{
    if (!s->niov) {
        req_put(r, 0, s->buf, n);
        return;
    }
    const xdev_iov_t *iov = req_iov(s);
    for (size_t i = 0, off = 0; i < s->niov && off < n; i++) {
        size_t k = iov[i].len < n - off ? iov[i].len : n - off;
        req_put(r, off, iov[i].base, k);
        off += k;
    }
}

/* Have the transport place n bytes of the arriving message in r's buffer. */
void rx_into(xdev_rx_t *rx, xreq_t *r, size_t n)
{
    rx->dst = r->niov ? NULL : r->buf;
    rx->dst_len = n;
    rx->dst_iov = req_iov(r);
    rx->dst_niov = r->niov;
}

/* ---- posted receives ---- */

static xreq_t *req_of_mnode(xdev_mnode_t *n)
{
    return n ? (xreq_t *)(void *)((char *)n - offsetof(xreq_t, mnode)) : NULL;
}

/* r leaves the posted receives (taken, failed or cancelled). */
void posted_drop(xdev_t *d, xreq_t *r)
{
    xdev_mtable_remove(&d->posted, &r->mnode);
    d->posted_wild[wild_kind(r->peer, r->tag)]--;
    if (r->peer != XDEV_ANY_SOURCE)
        d->peers[r->peer].posted--;
}

/* r, or an earlier-posted wildcard receive that matches (src, tag, ctx). */
static xreq_t *earliest_wild(xdev_t *d, xreq_t *r, int src, int tag, int ctx)
{
    const int keys[3][2] = { { XDEV_ANY_SOURCE, tag }, { src, XDEV_ANY_TAG },
                             { XDEV_ANY_SOURCE, XDEV_ANY_TAG } };
    for (int k = 1; k <= 3; k++) {
        if (!d->posted_wild[k])
            continue;
        xreq_t *c = req_of_mnode(xdev_mtable_head(&d->posted, keys[k - 1][0], keys[k - 1][1], ctx));
        if (c && (!r || c->seq < r->seq))
            r = c;
    }
    return r;
}

/* Remove and return the earliest-posted receive that matches an arrival
 * from (src, tag, ctx): the heads of the four keys it could be under. */
static XDEV_HOT xreq_t *posted_take(xdev_t *d, int src, int tag, int ctx)
{
    xreq_t *r = req_of_mnode(xdev_mtable_head(&d->posted, src, tag, ctx));
    /* Usually no wildcard receive is posted: nothing to compare with. */
    if (d->posted_wild[1] | d->posted_wild[2] | d->posted_wild[3])
        r = earliest_wild(d, r, src, tag, ctx);
    if (r)
        posted_drop(d, r);
    return r;
}

/* A receive has matched a message of `len` bytes: fill in its status. */
size_t recv_accept(xreq_t *r, int src, int tag, size_t len)
{
    size_t n = len < r->len ? len : r->len;
    r->status.source = src;
    r->status.tag = tag;
    r->status.count = n;
    r->status.msg_len = len;
    r->status.error = len > r->len ? XDEV_ERR_TRUNCATE : XDEV_OK;
    r->phase = PH_RECV_FILLING;
    return n;
}

/* ---- sending ---- */

static XDEV_HOT void op_sent(xdev_t *d, xreq_t *r)
{
    switch (r->phase) {
    case PH_SEND_EAGER:
    case PH_RNDZ_DATA:
        req_complete(d, r, XDEV_OK);
        break;
    case PH_SEND_SYNC:
        r->flags |= F_WRITTEN;
        if (r->flags & F_ACKED)
            req_complete(d, r, XDEV_OK);
        break;
    default:
        break;
    }
}

/* Hand r's op to the transport and deal with an immediate outcome. */
XDEV_HOT void send_op(xdev_t *d, xreq_t *r, int peer)
{
    int rc = peer_ops(d, peer)->send(peer_tp(d, peer), peer, &r->op, XDEV_TX_QUEUE);
    if (rc == 1)
        op_sent(d, r);
    else if (rc < 0)
        req_complete(d, r, XDEV_ERR_PEER);
}

/* A send to our own rank: a copy, with the sender held back (deferred)
 * when the receive is not posted yet and the message is synchronous, large,
 * or over the unexpected-memory bound. */
static int self_send(xdev_t *d, xreq_t *s, bool sync)
{
    xreq_t *r = posted_take(d, d->rank, s->tag, s->ctx);
    if (r) {
        req_copy(r, s, recv_accept(r, d->rank, s->tag, s->len));
        req_complete(d, r, XDEV_OK);
        req_complete(d, s, XDEV_OK);
        return XDEV_OK;
    }
    uxmsg_t *e = ux_new(d, d->rank, s->tag, s->ctx, sync ? XDEV_MSG_EAGER_SYNC : XDEV_MSG_EAGER,
                        s->len, 0);
    if (!e)
        return XDEV_ERR_NOMEM;
    if (!sync && s->len <= d->cfg.eager_limit && ux_buffer(d, e, s->len, false)) {
        if (s->niov)
            xdev_iov_gather(e->data, req_iov(s), s->niov, 0, s->len);
        else if (s->len)
            xdev_copy(e->data, s->buf, s->len);
        e->state = UX_READY;
    } else {
        e->state = UX_DEFERRED;
        e->self_sreq = s;
        s->phase = PH_SELF_WAIT;
    }
    int rc = ux_enqueue(d, e);
    if (rc != XDEV_OK) {
        ux_discard(d, e);
        return rc;
    }
    if (e->state == UX_DEFERRED)
        d->ux_deferred++;
    else
        req_complete(d, s, XDEV_OK);
    return XDEV_OK;
}

XDEV_HOT int proto_send_now(xdev_t *d, const void *buf, size_t len, int dst, int tag, int ctx)
{
    if ((dst == d->rank && !d->self_by_tp) || d->peers[dst].dead)
        return 0;
    xdev_txop_t op;
    xdev_head_t h;
    head_init(&h, d, dst, tag, ctx, XDEV_MSG_EAGER);
    op_build(&op, &h, buf, len);
    if (peer_ops(d, dst)->send(peer_tp(d, dst), dst, &op, XDEV_TX_NOW) != 1)
        return 0;
    d->peers[dst].msgs_sent++;
    d->peers[dst].bytes_sent += len;
    return 1;
}

XDEV_HOT int proto_send(xdev_t *d, xreq_t *s, bool sync)
{
    if (sync)
        s->flags |= F_SYNC;
    s->status.count = s->len;
    s->status.msg_len = s->len;
    if (s->peer == d->rank && !d->self_by_tp) {
        d->self_msgs++;
        return self_send(d, s, sync);
    }
    peer_t *p = &d->peers[s->peer];
    if (p->dead) {
        req_complete(d, s, XDEV_ERR_PEER);
        return XDEV_OK;
    }
    p->msgs_sent++;
    p->bytes_sent += s->len;
    /* Under the eager limit a rendezvous is the transport's single copy,
     * never for a vector (which it would stream) or a synchronous send
     * (whose offer the receiver must not read before it matches). */
    if (s->len >= p->rndz_from && (s->len > d->cfg.eager_limit || (!s->niov && !sync))) {
        d->rndz_sent++;
        return rndz_start(d, s);
    }
    xdev_head_t h;
    head_init(&h, d, s->peer, s->tag, s->ctx, sync ? XDEV_MSG_EAGER_SYNC : XDEV_MSG_EAGER);
    h.f[0] = s->id;
    op_build_req(&s->op, &h, s, s->len);
    s->phase = sync ? PH_SEND_SYNC : PH_SEND_EAGER;
    send_op(d, s, s->peer);
    if (sync)
        stream_restart(d, s->peer);
    return XDEV_OK;
}

/* ---- receiving ---- */

bool proto_lost(const xdev_t *d, const uxmsg_t *e)
{
    return e->state == UX_LOST ||
           (e->src != d->rank && e->arrival > d->peers[e->src].cut && !e->kept);
}

/* r took unexpected entry e. */
void take_unexpected(xdev_t *d, uxmsg_t *e, xreq_t *r)
{
    /* One still arriving (or being fetched) stays for whoever is reading
     * it: its receive fails behind the cut when its bytes are in. */
    if (proto_lost(d, e) && e->state != UX_ARRIVING) {
        r->status.source = e->src;
        r->status.tag = e->tag;
        r->status.count = 0;
        r->status.msg_len = e->len;
        req_complete(d, r, XDEV_ERR_PEER);
        ux_free(d, e);
        return;
    }
    size_t n = recv_accept(r, e->src, e->tag, e->len);
    r->arrival = e->arrival;
    ux_dequeue(d, e);
    if (e->state == UX_ARRIVING) {
        e->rreq = r; /* finished in xdev_core_rx_end or proto_fetch_done */
        return;
    }
    if (e->state == UX_DEFERRED && !e->self_sreq) {
        e->rreq = r;
        xdev_rx_t to = { .dst = NULL };
        if (e->type != XDEV_MSG_RNDZ_START) /* an offer's payload is empty */
            rx_into(&to, r, n);
        peer_ops(d, e->src)->resume(peer_tp(d, e->src), e->token, &to);
        return;
    }
    if (e->type == XDEV_MSG_RNDZ_START) {
        rndz_accept(d, r, e->remote_id, e->rndz_mode, e->remote_addr, e->remote_key);
    } else {
        if (e->self_sreq)
            req_copy(r, e->self_sreq, n);
        else
            req_put(r, 0, e->data, n);
        if (e->self_sreq) {
            req_complete(d, e->self_sreq, XDEV_OK);
            req_complete(d, r, XDEV_OK);
        } else if (e->kept) {
            req_complete(d, r, XDEV_OK); /* past the cut, yet kept: see there */
        } else {
            if (e->type == XDEV_MSG_EAGER_SYNC)
                send_control(d, r, e->src, XDEV_MSG_SYNC_ACK, e->remote_id);
            order_done(d, r);
        }
    }
    ux_free(d, e);
}

/* A wildcard receive or probe that any death fails waits on every peer,
 * so every peer's death must be noticed, a peer no request has named yet
 * too (tcp hears of one only over a connection). Once: a peer watched
 * stays so. */
__attribute__((noinline)) void proto_watch_all(xdev_t *d)
{
    d->watching_all = true;
    for (int i = 0; i < d->size; i++)
        if (i != d->rank && !d->peers[i].dead)
            peer_ops(d, i)->watch(peer_tp(d, i), i);
}

XDEV_HOT int proto_recv(xdev_t *d, xreq_t *r)
{
    uxmsg_t *e = ux_find(d, r->peer, r->tag, r->ctx);
    if (e) {
        take_unexpected(d, e, r);
        return XDEV_OK;
    }
    if (r->peer != XDEV_ANY_SOURCE && d->peers[r->peer].dead) {
        req_complete(d, r, XDEV_ERR_PEER);
        return XDEV_OK;
    }
    int rc = xdev_mtable_append(&d->posted, r->peer, r->tag, r->ctx, &r->mnode);
    if (rc != XDEV_OK)
        return rc;
    r->seq = ++d->post_seq;
    r->phase = PH_RECV_POSTED;
    d->posted_wild[wild_kind(r->peer, r->tag)]++;
    if (r->peer != XDEV_ANY_SOURCE)
        d->peers[r->peer].posted++;
    peer_watch(d, r->peer);
    stream_restart(d, r->peer);
    return XDEV_OK;
}

/* An eager message or a rendezvous offer that no receive has been posted
 * for: buffered, or deferred where it is. Out of line, so that the
 * matched path (rx_message) stays compact: inlined into it, this cost a
 * two-rank exchange of 8 bytes (isend, irecv, wait both) 7% per round. */
static __attribute__((noinline)) int rx_unexpected(xdev_t *d, int peer, void *token,
                                                   xdev_rx_t *rx, size_t msglen,
                                                   uint64_t arrival)
{
    const xdev_hdr_t *h = &rx->head.hdr;
    bool offer = h->type == XDEV_MSG_RNDZ_START;
    uxmsg_t *e = ux_new(d, peer, h->tag, h->ctx, h->type, msglen, rx->head.f[0]);
    if (!e)
        return XDEV_ERR_NOMEM;
    e->arrival = arrival;
    if (offer) {
        e->rndz_mode = (uint8_t)rx->head.f[2];
        e->remote_addr = rx->head.f[3];
        e->remote_key = rx->head.f[4];
    }
    rx->unexpected = true;
    size_t payload = rx->len;
    if (ux_buffer(d, e, payload, false) ||
        (stream_awaited(d, peer) && ux_buffer(d, e, payload, true))) {
        e->state = UX_ARRIVING;
        rx->dst = e->data;
        rx->dst_len = payload;
    } else {
        e->state = UX_DEFERRED;
        e->token = token;
    }
    int rc = ux_enqueue(d, e);
    if (rc != XDEV_OK) {
        ux_discard(d, e);
        return rc;
    }
    rx->cookie = cookie_of_ux(e);
    if (e->state == UX_DEFERRED) {
        d->ux_deferred++;
        return XDEV_RX_DEFER;
    }
    return XDEV_RX_DELIVER;
}

/* An eager message or a rendezvous offer arrived from peer. */
static int rx_message(xdev_t *d, int peer, void *token, xdev_rx_t *rx)
{
    const xdev_hdr_t *h = &rx->head.hdr;
    bool offer = h->type == XDEV_MSG_RNDZ_START;
    size_t msglen = offer ? rx->head.f[1] : rx->len;
    peer_t *p = &d->peers[peer];
    /* Nobody will receive it: discard it. Past a cut (order_fail) nothing
     * counts, yet the stream is read on: the data of a rendezvous before
     * the cut may still come behind it. Failing the stream here would
     * lose such data that the sender had written whole (over shm, a dying
     * sender's ring). */
    if (d->finalizing || p->cut != UINT64_MAX)
        return XDEV_RX_DELIVER;
    uint64_t arrival = ++p->arrivals;
    p->bytes_received += msglen;
    d->rndz_received += offer;

    xreq_t *r = posted_take(d, peer, h->tag, h->ctx);
    if (r) {
        size_t n = recv_accept(r, peer, h->tag, msglen);
        r->arrival = arrival;
        if (offer) {
            rndz_accept(d, r, rx->head.f[0], (int)rx->head.f[2], rx->head.f[3], rx->head.f[4]);
            return XDEV_RX_DELIVER;
        }
        if (h->type == XDEV_MSG_EAGER_SYNC) {
            r->flags |= F_SYNC;
            r->remote_id = rx->head.f[0];
        }
        rx_into(rx, r, n);
        rx->cookie = r;
        return XDEV_RX_DELIVER;
    }
    return rx_unexpected(d, peer, token, rx, msglen, arrival);
}


static int rx_sync_ack(xdev_t *d, int peer, const xdev_rx_t *rx)
{
    xreq_t *s = req_lookup(d, rx->head.f[0]);
    if (!s || s->kind != REQ_SEND || s->peer != peer || s->phase != PH_SEND_SYNC ||
        (s->flags & F_ACKED))
        return XDEV_ERR_PEER;
    s->flags |= F_ACKED;
    if (s->flags & F_WRITTEN)
        req_complete(d, s, XDEV_OK);
    return XDEV_RX_DELIVER;
}

/* Does h come from peer, to us, with a tag and a context a receive could
 * have? */
static bool head_ok(const xdev_t *d, int peer, const xdev_hdr_t *h)
{
    return h->src == (uint32_t)peer && h->dst == (uint32_t)d->rank && h->tag >= 0 && h->ctx >= 0;
}

/* A plain eager message that is all in memory, for a receive already
 * posted: straight into it, the common case made short. 1 if it went. */
static XDEV_HOT int rx_whole(xdev_t *d, int peer, const xdev_rx_t *rx)
{
    const xdev_hdr_t *h = &rx->head.hdr;
    peer_t *p = &d->peers[peer];
    if (h->type != XDEV_MSG_EAGER || rx->len > p->eager_limit || d->finalizing || p->ordering)
        return 0;
    xreq_t *r = posted_take(d, peer, h->tag, h->ctx);
    if (!r)
        return 0;
    size_t n = recv_accept(r, peer, h->tag, rx->len);
    r->arrival = ++p->arrivals;
    p->bytes_received += rx->len;
    req_put(r, 0, rx->payload, n);
    req_complete(d, r, XDEV_OK); /* nothing is open from p: in order */
    return 1;
}

static int rx_dispatch(xdev_t *d, int peer, void *token, xdev_rx_t *rx)
{
    const xdev_hdr_t *h = &rx->head.hdr;
    switch (h->type) {
    case XDEV_MSG_EAGER:
    case XDEV_MSG_EAGER_SYNC:
        if (rx->len > d->peers[peer].eager_limit)
            return XDEV_ERR_PEER;
        return rx_message(d, peer, token, rx);
    case XDEV_MSG_RNDZ_START:
        if (rx->len || rx->head.f[2] > XDEV_RNDZ_WRITE)
            return XDEV_ERR_PEER;
        return rx_message(d, peer, token, rx);
    case XDEV_MSG_SYNC_ACK:
        return rx->len ? XDEV_ERR_PEER : rx_sync_ack(d, peer, rx);
    case XDEV_MSG_RNDZ_REPLY:
        return rx->len ? XDEV_ERR_PEER : rx_rndz_reply(d, peer, rx);
    case XDEV_MSG_RNDZ_DATA:
        return rx_rndz_data(d, peer, rx);
    case XDEV_MSG_RNDZ_END:
        return rx->len ? XDEV_ERR_PEER : rx_rndz_end(d, peer, rx);
    case XDEV_MSG_RNDZ_WRITTEN:
        return rx->len ? XDEV_ERR_PEER : rx_rndz_written(d, peer, rx);
    default:
        return XDEV_ERR_PEER;
    }
}

XDEV_HOT int xdev_core_rx_begin(xdev_t *d, int peer, void *token, xdev_rx_t *rx)
{
    d->activity++;
    rx->cookie = NULL;
    rx->unexpected = false;
    if (!head_ok(d, peer, &rx->head.hdr))
        return XDEV_ERR_PEER;
    if (rx->payload && rx_whole(d, peer, rx))
        return XDEV_RX_DONE;
    rx->dst = NULL;
    rx->dst_len = 0;
    rx->dst_iov = NULL;
    rx->dst_niov = 0;
    int rc = rx_dispatch(d, peer, token, rx);
    if (rc != XDEV_RX_DELIVER || !rx->payload)
        return rc;
    xdev_rx_place(rx, 0, rx->payload, rx->len);
    xdev_core_rx_end(d, rx);
    return XDEV_RX_DONE;
}

/* A receive's payload is all in place: finish the receive. */
static void recv_filled(xdev_t *d, xreq_t *r)
{
    if ((r->flags & F_SYNC) && !d->peers[r->status.source].dead)
        send_control(d, r, r->status.source, XDEV_MSG_SYNC_ACK, r->remote_id);
    order_done(d, r);
}

XDEV_HOT void xdev_core_rx_end(xdev_t *d, xdev_rx_t *rx)
{
    if (!rx->cookie)
        return;
    if (!cookie_is_ux(rx->cookie)) {
        recv_filled(d, rx->cookie);
        return;
    }
    uxmsg_t *e = ux_of_cookie(rx->cookie);
    xreq_t *r = e->rreq;
    if (!r) {
        e->state = UX_READY;
        if (e->type == XDEV_MSG_RNDZ_START && e->len && e->len <= d->peers[e->src].eager_limit)
            fetch_offer(d, e);
        return;
    }
    if (e->type == XDEV_MSG_RNDZ_START) {
        rndz_accept(d, r, e->remote_id, e->rndz_mode, e->remote_addr, e->remote_key);
    } else {
        if (e->data)
            req_put(r, 0, e->data, r->status.count);
        if (e->type == XDEV_MSG_EAGER_SYNC) {
            r->flags |= F_SYNC;
            r->remote_id = e->remote_id;
        }
        recv_filled(d, r);
    }
    ux_free(d, e);
}

XDEV_HOT void xdev_core_tx_done(xdev_t *d, xdev_txop_t *op, int err)
{
    d->activity++;
    if (op->owner == XDEV_OP_OWN)
        return;
    if (op->owner == OP_CONTROL) {
        ctl_put(d, op);
        return;
    }
    xreq_t *r = (xreq_t *)(void *)((char *)op - offsetof(xreq_t, op));
    if (err != XDEV_OK) {
        if (r->phase != PH_DONE)
            req_complete(d, r, err);
        return;
    }
    op_sent(d, r);
}

void xdev_core_tx_fail_all(xdev_t *d, xdev_txop_t *op)
{
    while (op) {
        xdev_txop_t *next = op->next;
        xdev_core_tx_done(d, op, XDEV_ERR_PEER);
        op = next;
    }
}

void xdev_core_peer_rndz_from(xdev_t *d, int peer, size_t from)
{
    size_t past = d->cfg.eager_limit + 1;
    size_t at = from && from < past ? from : past;
    __atomic_store_n(&d->peers[peer].rndz_from, at, __ATOMIC_RELAXED);
}

void xdev_core_peer_eager_limit(xdev_t *d, int peer, size_t limit)
{
    d->peers[peer].eager_limit = limit;
}

bool xdev_core_posted_from(const xdev_t *d, int peer)
{
    return d->peers[peer].posted != 0;
}

int proto_cancel(xdev_t *d, xreq_t *r)
{
    if (r->phase == PH_RECV_POSTED) {
        posted_drop(d, r);
        r->status.count = 0;
        req_complete(d, r, XDEV_ERR_CANCELED);
        return XDEV_OK;
    }
    if (r->phase == PH_SELF_WAIT) {
        /* A send to ourselves that no receive has taken: its entry is
         * still in matching unless a matched probe claimed it. */
        for (uxmsg_t *e = d->ux_head; e; e = e->next) {
            if (e->self_sreq != r)
                continue;
            if (e->claimed)
                return XDEV_ERR_TOO_LATE;
            ux_free(d, e);
            r->status.count = 0; /* nothing of it was sent */
            req_complete(d, r, XDEV_ERR_CANCELED);
            return XDEV_OK;
        }
    }
    /* Anything else has left, or been matched, at least in part. */
    return XDEV_ERR_TOO_LATE;
}
