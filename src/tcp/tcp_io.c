/*
 * tcp_io.c - moving frames through an open connection.
 *
 * Reading: bytes come into a staging buffer, which lets one recv() carry
 * many small frames. Once a frame's head is parsed the core says where its
 * payload goes; what is already staged is copied there, and the rest of a
 * large payload is read straight into place with no copy at all.
 *
 * Writing: each peer has a queue of ops. A send on an idle connection is
 * written at once from the caller's buffer (prefix, head and payload in one
 * sendmsg, XDEV_TP_PASS_BYTES at most); only what the socket does not take
 * or that bound leaves waits in the queue, and a
 * backlog goes out in gathered writes of many ops, each ending with the op
 * that brings it to GATHER_MAX bytes. So a large op ends its write, as a
 * raw stream writes one frame at a time: gathered with the ops behind it,
 * a stream of 4 MiB messages ran 8% slower here (xdev-bench --tests bw
 * --min 4M --max 4M, 11 interleaved rounds), and gathering small ops up to
 * 256 KiB keeps their rate.
 *
 * A short send (XDEV_TX_NOW, up to TCP_SHORT_MAX) is written the same way
 * and is done at once unless nothing of it went, in which case the core
 * takes its usual path. Where the socket takes only part of it, the rest
 * is copied into the connection's spill op and goes from there, so that a
 * blocking send of a short message needs no request on tcp either (a
 * request cost its 8-byte ping-pong about 400 instructions a message).
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include "tcp.h"

#define DIRECT_READ_MIN (16 * 1024) /* below this, refill the stage instead */
#define MAX_IOV 64
#define GATHER_MAX (256 * 1024)
#define MAX_FRAME ((uint64_t)1 << 62)

/* ---- writing ---- */

static size_t op_total(const xdev_txop_t *op)
{
    return op->prefix_len + op->head_len + op->payload_len;
}

/* iovecs for what is left of op, at most room (>= 2) of them and cap
 * (> 0) bytes of its payload; returns how many were added, and whether
 * they reach the op's end in *whole (a vector's pieces are gathered here,
 * up to room). The cap bounds one sendmsg, not only the calls: to a peer
 * that keeps reading, a loopback socket took 220 MB in one. */
static XDEV_HOT int op_iov(const xdev_txop_t *op, struct iovec *iov, int room, size_t cap,
                           bool *whole)
{
    size_t framing = op->prefix_len + op->head_len;
    int n = 0;
    *whole = true;
    if (op->sent < framing) {
        iov[n].iov_base = (void *)(op->wire + XDEV_TP_PREFIX_MAX - op->prefix_len + op->sent);
        iov[n++].iov_len = framing - op->sent;
    }
    size_t done = op->sent > framing ? op->sent - framing : 0;
    size_t left = op->payload_len - done;
    if (left && !op->payload_niov) {
        iov[n].iov_base = (char *)op->payload + done;
        iov[n++].iov_len = left < cap ? left : cap;
        *whole = left <= cap;
        return n;
    }
    while (left && n < room && cap) {
        void *at;
        size_t k = xdev_iov_span(op->payload_iov, op->payload_niov, done, &at, NULL);
        k = k < left ? k : left;
        k = k < cap ? k : cap;
        iov[n].iov_base = at;
        iov[n++].iov_len = k;
        done += k;
        left -= k;
        cap -= k;
    }
    *whole = !left;
    return n;
}

static ssize_t write_iov(int fd, struct iovec *iov, int n)
{
    struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
    ssize_t w;
    do
        w = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (w < 0 && errno == EINTR);
    return w;
}

static void mark_broken(xdev_tp_t *tp, tcp_conn_t *c)
{
    c->broken = true;
    tcp_service_later(tp, c);
}

/* Write as much of peer's queue as the socket takes, up to
 * XDEV_TP_PASS_BYTES (a queue left behind keeps EPOLLOUT wanted, so the
 * next poll goes on), then hand the finished ops back (only after the
 * queue is consistent again, since the core may queue new ops from
 * inside tx_done). */
XDEV_HOT void tcp_flush(xdev_tp_t *tp, int peer)
{
    tcp_peer_t *p = &tp->peers[peer];
    tcp_conn_t *c = p->conn;
    if (!c || c->broken)
        return;
    xdev_txq_t done = { 0 };
    size_t wrote = 0;
    while (p->txq.head && wrote < XDEV_TP_PASS_BYTES) {
        struct iovec iov[MAX_IOV];
        int n = 0;
        bool whole = true;
        size_t gathered = 0;
        size_t budget = XDEV_TP_PASS_BYTES - wrote;
        for (xdev_txop_t *op = p->txq.head;
             op && whole && n <= MAX_IOV - 2 && gathered < GATHER_MAX && gathered < budget;
             op = op->next) {
            n += op_iov(op, iov + n, MAX_IOV - n, budget - gathered, &whole);
            gathered += op_total(op) - op->sent;
        }
        ssize_t w = write_iov(c->fd, iov, n);
        if (w < 0) {
            if (errno != EAGAIN)
                mark_broken(tp, c);
            break;
        }
        wrote += (size_t)w;
        size_t left = (size_t)w;
        while (p->txq.head && left) {
            xdev_txop_t *op = p->txq.head;
            size_t need = op_total(op) - op->sent;
            size_t take = left < need ? left : need;
            op->sent += take;
            left -= take;
            if (op->sent < op_total(op))
                break;
            xdev_txq_push(&done, xdev_txq_pop(&p->txq));
        }
        /* a zero-length op (never: every op has a head) cannot stall this */
    }
    if (!c->broken) {
        uint32_t want = (c->rx_phase == RX_PAUSED ? 0 : EPOLLIN) | (p->txq.head ? EPOLLOUT : 0);
        tcp_set_events(tp, c, want);
        if (tp->shutting_down && !p->txq.head && !c->wr_closed) {
            shutdown(c->fd, SHUT_WR);
            c->wr_closed = true;
        }
    }
    if (wrote)
        xdev_core_moved(tp->dev);
    for (xdev_txop_t *op; (op = xdev_txq_pop(&done));)
        xdev_core_tx_done(tp->dev, op, XDEV_OK);
}

/* The socket took part of a short op: the rest goes from c's copy. */
static xdev_txop_t *spill(tcp_conn_t *c, const xdev_txop_t *op)
{
    xdev_txop_t *s = &c->spill;
    *s = *op; /* prefix and head, and how far they went */
    xdev_txop_copy(c->spill_payload, op, 0, op->payload_len);
    s->payload = c->spill_payload;
    s->payload_niov = 0;
    s->owner = XDEV_OP_OWN;
    return s;
}

XDEV_HOT int tcp_send(xdev_tp_t *tp, int peer, xdev_txop_t *op, int how)
{
    tcp_peer_t *p = &tp->peers[peer];
    if (p->dead)
        return XDEV_ERR_PEER;
    op->prefix_len = TCP_PREFIX;
    op->sent = 0;
    op->next = NULL;
    xdev_put_le64(op->wire + XDEV_TP_PREFIX_MAX - TCP_PREFIX, op->head_len + op->payload_len);

    tcp_conn_t *c = p->conn;
    if (c && !c->broken && !p->txq.head) {
        struct iovec iov[MAX_IOV];
        bool whole;
        ssize_t w = write_iov(c->fd, iov, op_iov(op, iov, MAX_IOV, XDEV_TP_PASS_BYTES, &whole));
        if (w >= 0 && (size_t)w == op_total(op))
            return 1;
        if (w > 0)
            op->sent = (size_t)w;
        else if (errno != EAGAIN)
            mark_broken(tp, c);
    }
    if (how == XDEV_TX_NOW) {
        if (!op->sent)
            return 0; /* nothing went: the core queues it as a request */
        op = spill(c, op);
    }
    xdev_txq_push(&p->txq, op);
    if (c && !c->broken)
        tcp_set_events(tp, c, c->events | EPOLLOUT);
    else if (!c)
        tcp_want_peer(tp, peer);
    return how == XDEV_TX_NOW;
}

/* Hand back every op queued for peer as failed. */
void tcp_fail_queue(xdev_tp_t *tp, int peer)
{
    xdev_core_tx_fail_all(tp->dev, xdev_txq_take_all(&tp->peers[peer].txq));
}

/* ---- reading ---- */

/* Read more into the stage. Returns false when nothing more can be read
 * now (EAGAIN) or the connection is gone. */
static XDEV_HOT bool fill_stage(xdev_tp_t *tp, tcp_conn_t *c)
{
    if (c->stage_pos) {
        memmove(c->stage, c->stage + c->stage_pos, c->stage_end - c->stage_pos);
        c->stage_end -= c->stage_pos;
        c->stage_pos = 0;
    }
    size_t want = TCP_STAGE_BYTES - c->stage_end;
    ssize_t n;
    do
        n = recv(c->fd, c->stage + c->stage_end, want, MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n > 0) {
        c->stage_end += (size_t)n;
        c->drained = (size_t)n < want;
        return true;
    }
    if (n == 0 || errno != EAGAIN)
        tcp_conn_lost(tp, c);
    return false;
}

/* Parse one frame head from the stage and ask the core where its payload
 * goes. Returns false if the stage does not hold a whole head yet. */
static XDEV_HOT bool parse_head(xdev_tp_t *tp, tcp_conn_t *c, bool *lost)
{
    size_t have = c->stage_end - c->stage_pos;
    const uint8_t *s = c->stage + c->stage_pos;
    if (have < TCP_PREFIX)
        return false;
    uint64_t frame = xdev_get_le64(s);
    xdev_rx_t *rx = &c->rx;
    long head_len = xdev_wire_decode_head(s + TCP_PREFIX, have - TCP_PREFIX, &rx->head);
    if (head_len < 0 || (head_len > 0 && (frame < (uint64_t)head_len || frame > MAX_FRAME))) {
        *lost = true;
        return false;
    }
    if (!head_len)
        return false; /* the rest of the head is still on its way */
    rx->len = (size_t)(frame - (uint64_t)head_len);
    c->stage_pos += TCP_PREFIX + (size_t)head_len;
    /* all staged already: the core may take it from the stage */
    rx->payload = c->stage_end - c->stage_pos >= rx->len ? c->stage + c->stage_pos : NULL;
    c->rx_got = 0;
    int rc = xdev_core_rx_begin(tp->dev, c->peer, c, rx);
    if (rc < 0) {
        *lost = true;
        return false;
    }
    if (rc == XDEV_RX_DONE) {
        c->stage_pos += rx->len;
        return true; /* still RX_HEAD: on to the next frame */
    }
    c->rx_phase = rc == XDEV_RX_DEFER ? RX_PAUSED : RX_PAYLOAD;
    if (c->rx_phase == RX_PAUSED)
        tcp_set_events(tp, c, c->events & ~(uint32_t)EPOLLIN);
    return true;
}

/* Place payload bytes; returns true when the payload is complete. What
 * is read straight into place counts in *direct, which stops the reading
 * at XDEV_TP_PASS_BYTES (one recv included) until the next call. */
static XDEV_HOT bool read_payload(xdev_tp_t *tp, tcp_conn_t *c, size_t *direct)
{
    xdev_rx_t *rx = &c->rx;
    for (;;) {
        size_t staged = c->stage_end - c->stage_pos;
        size_t left = rx->len - c->rx_got;
        if (staged && left) {
            size_t n = staged < left ? staged : left;
            xdev_rx_place(rx, c->rx_got, c->stage + c->stage_pos, n);
            c->rx_got += n;
            c->stage_pos += n;
            left -= n;
        }
        if (!left)
            return true;
        void *at;
        size_t room = xdev_rx_span(rx, c->rx_got, &at);
        if (room < DIRECT_READ_MIN) {
            if (c->drained || !fill_stage(tp, c))
                return false;
            continue;
        }
        if (*direct >= XDEV_TP_PASS_BYTES) {
            tcp_service_later(tp, c); /* the next call reads on */
            return false;
        }
        size_t want = XDEV_TP_PASS_BYTES - *direct;
        want = room < want ? room : want;
        ssize_t n;
        do
            n = recv(c->fd, at, want, MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n <= 0) {
            if (n == 0 || errno != EAGAIN)
                tcp_conn_lost(tp, c);
            return false;
        }
        c->rx_got += (size_t)n;
        xdev_core_moved(tp->dev);
        *direct += (size_t)n;
    }
}

XDEV_HOT void tcp_read(xdev_tp_t *tp, tcp_conn_t *c)
{
    int peer = c->peer;
    size_t direct = 0; /* payload read straight into place (read_payload) */
    c->drained = false;
    /* Bounded, so one busy peer cannot starve the others. */
    for (int frames = 0; frames < 256; frames++) {
        if (tp->peers[peer].conn != c || c->rx_phase == RX_PAUSED)
            return;
        if (c->rx_phase == RX_HEAD) {
            bool lost = false;
            if (!parse_head(tp, c, &lost)) {
                if (lost) {
                    tcp_conn_lost(tp, c);
                    return;
                }
                if (c->drained || !fill_stage(tp, c))
                    return;
                continue;
            }
            if (c->rx_phase == RX_PAUSED)
                return;
            if (c->rx_phase == RX_HEAD)
                continue; /* the core took it whole */
        }
        if (!read_payload(tp, c, &direct))
            return;
        c->rx_phase = RX_HEAD;
        xdev_core_rx_end(tp->dev, &c->rx);
    }
    tcp_service_later(tp, c); /* more may be staged: come back soon */
}

void tcp_resume(xdev_tp_t *tp, void *token, const xdev_rx_t *to)
{
    tcp_conn_t *c = token;
    xdev_rx_set_dst(&c->rx, to);
    c->rx_got = 0;
    c->rx_phase = RX_PAYLOAD;
    tcp_set_events(tp, c, c->events | EPOLLIN);
    tcp_service_later(tp, c);
}
