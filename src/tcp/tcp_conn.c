/*
 * tcp_conn.c - making, proving and losing connections.
 *
 * Handshake: challenge and response both ways. Each side proves it knows
 * the job secret with a MAC over a nonce the other side has just drawn, so
 * a handshake recorded on the wire and played again proves nothing; and no
 * byte goes to anyone who has not shown a MAC under the secret first.
 *   dialer -> acceptor  HELLO, 40 bytes: "XDV3", src rank, dst rank, 0,
 *                       eager limit (u64), dialer's nonce Nd (u64), MAC of
 *                       the first 32 (the 3 is this handshake's version: a
 *                       dialer of another is a stranger)
 *   acceptor -> dialer  REPLY, 32 bytes: "XDVB", verdict (1 accept, 0 lost
 *                       a simultaneous dial, 2 the dialer is dead to the
 *                       acceptor), eager limit (u64), acceptor's nonce Na
 *                       (u64), MAC of the first 24 bytes and Nd
 *   dialer -> acceptor  PROOF, 16 bytes (after an accepting REPLY only):
 *                       "XDVP", src rank, MAC of those 8 bytes, Na and Nd
 *   acceptor -> dialer  OPENED, 4 bytes: "XDVO" (after a good PROOF only)
 * The acceptor opens the connection only on a good PROOF, the dialer only
 * on OPENED. A replayed HELLO draws a REPLY whose fresh Na no recorded
 * PROOF answers; an acceptor that reads anything else, or not all of it
 * within TCP_AUTH_TIMEOUT_MS (of the accept for HELLO, of its REPLY for
 * PROOF), closes the connection without a word more. That timeout also
 * ends honest handshakes whose dialer was stopped or starved for seconds:
 * OPENED is why that costs the dialer a redial, where opening on its own
 * PROOF had it send into a closed connection and take a live peer for
 * dead. The dialer, once it sent PROOF, waits for OPENED as long as it
 * takes, for the same reason. (Bytes after the handshake are not
 * authenticated: injecting into an open TCP stream needs more than
 * reading loopback, and is out of this transport's reach.)
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include "tcp.h"

#define HELLO_MAGIC 0x33564458u /* "XDV3" */
#define REPLY_MAGIC 0x42564458u /* "XDVB" */
#define PROOF_MAGIC 0x50564458u /* "XDVP" */
#define OPENED_MAGIC 0x4f564458u /* "XDVO" */

enum { VERDICT_LOST = 0, VERDICT_ACCEPT = 1, VERDICT_GONE = 2 };

static tcp_conn_t *conn_new(xdev_tp_t *tp, int fd, int state, uint32_t events)
{
    tcp_conn_t *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return NULL;
    }
    c->fd = fd;
    c->peer = -1;
    c->state = (uint8_t)state;
    c->events = events;
    struct epoll_event ev = { .events = events, .data.ptr = c };
    if (epoll_ctl(tp->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        close(fd);
        free(c);
        return NULL;
    }
    c->next = tp->conns;
    tp->conns = c;
    return c;
}

static bool unlink_service(tcp_conn_t **list, tcp_conn_t *c)
{
    for (tcp_conn_t **p = list; *p; p = &(*p)->service_next) {
        if (*p == c) {
            *p = c->service_next;
            return true;
        }
    }
    return false;
}

void tcp_conn_free(xdev_tp_t *tp, tcp_conn_t *c)
{
    if (c->state == CONN_CLOSED)
        return;
    for (tcp_conn_t **p = &tp->conns; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    if (c->queued && !unlink_service(&tp->service, c))
        unlink_service(&tp->serving, c);
    if (c->peer >= 0) {
        tcp_peer_t *p = &tp->peers[c->peer];
        if (p->conn == c)
            p->conn = NULL;
        if (p->dialing == c)
            p->dialing = NULL;
    }
    if (c->state == CONN_AUTH_WAIT || c->state == CONN_PROOF_WAIT)
        tp->nauth--;
    if (c->state == CONN_OPEN)
        tp->nopen--;
    epoll_ctl(tp->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    c->state = CONN_CLOSED;
    c->next = tp->closed;
    tp->closed = c;
}

XDEV_HOT void tcp_reap_closed(xdev_tp_t *tp)
{
    while (tp->closed) {
        tcp_conn_t *c = tp->closed;
        tp->closed = c->next;
        free(c->stage);
        free(c);
    }
}

static void tune_socket(int fd)
{
    int one = 1, idle = 10, intvl = 2, cnt = 5;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* A host that vanishes without a FIN is noticed by keepalive. */
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

static void set_wanting(xdev_tp_t *tp, tcp_peer_t *p, bool wanting)
{
    if (p->wanted == wanting)
        return;
    p->wanted = wanting;
    if (wanting)
        tp->nwanting++;
    else
        tp->nwanting--;
}

/* The peer can no longer be reached: hand back its queue, then tell the
 * core, which fails every request that involves it. */
static void peer_fail(xdev_tp_t *tp, int peer)
{
    tcp_peer_t *p = &tp->peers[peer];
    if (p->dead)
        return;
    p->dead = true;
    set_wanting(tp, p, false);
    if (p->conn)
        tcp_conn_free(tp, p->conn);
    if (p->dialing)
        tcp_conn_free(tp, p->dialing);
    tcp_fail_queue(tp, peer);
    xdev_core_peer_failed(tp->dev, peer);
}

/* Cannot fail: each side allocates c->stage before the message that lets
 * the other side open (PROOF, OPENED), and gives up the handshake instead. */
static void conn_open(xdev_tp_t *tp, tcp_conn_t *c, size_t peer_eager_limit)
{
    tcp_peer_t *p = &tp->peers[c->peer];
    c->state = CONN_OPEN;
    c->rx_phase = RX_HEAD;
    tp->nopen++;
    p->conn = c;
    if (p->dialing == c)
        p->dialing = NULL;
    set_wanting(tp, p, false);
    xdev_core_peer_eager_limit(tp->dev, c->peer, peer_eager_limit);
    tcp_set_events(tp, c, EPOLLIN);
    tcp_flush(tp, c->peer);
}

/* Write a handshake message whole; on a fresh connection it always fits in
 * the socket buffer, so a short write means the connection is bad. */
static bool write_all(int fd, const uint8_t *buf, size_t len)
{
    ssize_t n;
    do
        n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)len;
}

static void send_hello(xdev_tp_t *tp, tcp_conn_t *c)
{
    uint8_t h[TCP_HELLO_BYTES];
    c->nonce = xdev_auth_nonce();
    xdev_put_le32(h, HELLO_MAGIC);
    xdev_put_le32(h + 4, (uint32_t)tp->rank);
    xdev_put_le32(h + 8, (uint32_t)c->peer);
    xdev_put_le32(h + 12, 0);
    xdev_put_le64(h + 16, tp->eager_limit);
    xdev_put_le64(h + 24, c->nonce);
    xdev_put_le64(h + 32, xdev_auth_mac(tp->dev, h, 32));
    c->state = CONN_HELLO_SENT;
    c->hs_have = 0;
    tcp_set_events(tp, c, EPOLLIN);
    if (!write_all(c->fd, h, sizeof h))
        tcp_conn_lost(tp, c);
}

static void dial(xdev_tp_t *tp, int peer)
{
    tcp_peer_t *p = &tp->peers[peer];
    uint64_t now = xdev_now_ms();
    p->redial_ms = now + TCP_REDIAL_MS;
    if (!p->addrlen) {
        char addr[300];
        int rc = xdev_boot_lookup(tp->dev, peer, "tcp", addr, sizeof addr);
        if (rc == 0 || rc == XDEV_ERR_NOMEM)
            return; /* not published yet, or no descriptor free: the timer tries again */
        if (rc < 0 || tcp_parse_addr(addr, &p->addr, &p->addrlen) != XDEV_OK) {
            p->give_up_ms = now;
            return;
        }
    }
    int fd = socket(p->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    tune_socket(fd);
    int rc = connect(fd, (struct sockaddr *)&p->addr, p->addrlen);
    if (rc != 0 && errno != EINPROGRESS) {
        if (errno == ECONNREFUSED && tp->refused_means_dead)
            p->give_up_ms = now; /* failed by the next timer run, not from
                                  * inside the send or receive that dialed */
        close(fd);
        return;
    }
    tcp_conn_t *c = conn_new(tp, fd, CONN_DIALING, EPOLLOUT);
    if (!c)
        return;
    c->peer = peer;
    c->deadline_ms = now + TCP_AUTH_TIMEOUT_MS;
    p->dialing = c;
    if (rc == 0)
        send_hello(tp, c);
}

void tcp_want_peer(xdev_tp_t *tp, int peer)
{
    tcp_peer_t *p = &tp->peers[peer];
    if (p->dead || p->conn || p->wanted || tp->shutting_down)
        return;
    set_wanting(tp, p, true);
    p->give_up_ms = xdev_now_ms() + (uint64_t)tp->peer_timeout_ms;
    if (!p->dialing)
        dial(tp, peer);
}

void tcp_accept_all(xdev_tp_t *tp)
{
    for (;;) {
        int fd = accept4(tp->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        tune_socket(fd);
        tcp_conn_t *c = conn_new(tp, fd, CONN_AUTH_WAIT, EPOLLIN);
        if (c) {
            c->deadline_ms = xdev_now_ms() + TCP_AUTH_TIMEOUT_MS;
            tp->nauth++;
        }
    }
}

/* Read the rest of a handshake message; true once `want` bytes are in. */
static bool read_handshake(xdev_tp_t *tp, tcp_conn_t *c, size_t want)
{
    ssize_t n = recv(c->fd, c->hs + c->hs_have, want - c->hs_have, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        tcp_conn_lost(tp, c);
        return false;
    }
    if (n > 0)
        c->hs_have += (size_t)n;
    return c->hs_have == want;
}

/* The dialer's PROOF: MAC of its first 8 bytes, Na and Nd. */
static uint64_t proof_mac(xdev_tp_t *tp, const uint8_t *proof, uint64_t na, uint64_t nd)
{
    uint8_t m[24];
    memcpy(m, proof, 8);
    xdev_put_le64(m + 8, na);
    xdev_put_le64(m + 16, nd);
    return xdev_auth_mac(tp->dev, m, sizeof m);
}

/* Answer a proven HELLO with a VERDICT_*: accepted with our challenge, or
 * refused. */
static void reply(xdev_tp_t *tp, tcp_conn_t *c, uint64_t dialer_nonce, uint32_t verdict)
{
    uint8_t r[TCP_REPLY_BYTES];
    c->nonce = xdev_auth_nonce();
    xdev_put_le32(r, REPLY_MAGIC);
    xdev_put_le32(r + 4, verdict);
    xdev_put_le64(r + 8, tp->eager_limit);
    xdev_put_le64(r + 16, c->nonce);
    xdev_put_le64(r + 24, dialer_nonce);
    xdev_put_le64(r + 24, xdev_auth_mac(tp->dev, r, 32));
    if (!write_all(c->fd, r, TCP_REPLY_BYTES) || verdict != VERDICT_ACCEPT) {
        tcp_conn_free(tp, c);
        return;
    }
    c->state = CONN_PROOF_WAIT;
    c->hs_have = 0;
    /* From now: an acceptor that sat stopped past the HELLO's deadline
     * must still give the dialer its time to answer. */
    c->deadline_ms = xdev_now_ms() + TCP_AUTH_TIMEOUT_MS;
}

/* A dialer's HELLO is in: check it, then settle who keeps which connection.
 * A dial of ours that has sent its PROOF is committed (the peer may have
 * opened it already), so it keeps the pair whatever the ranks. */
static void on_hello(xdev_tp_t *tp, tcp_conn_t *c)
{
    const uint8_t *h = c->hs;
    uint32_t src = xdev_get_le32(h + 4);
    if (xdev_get_le32(h) != HELLO_MAGIC || xdev_get_le32(h + 8) != (uint32_t)tp->rank ||
        src >= (uint32_t)tp->size || src == (uint32_t)tp->rank ||
        xdev_get_le64(h + 32) != xdev_auth_mac(tp->dev, h, 32)) {
        tcp_conn_free(tp, c); /* a stranger, or garbage: not a word back */
        return;
    }
    tcp_peer_t *p = &tp->peers[src];
    uint64_t nonce = xdev_get_le64(h + 24);
    bool ours_wins = p->dialing && (tp->rank < (int)src || p->dialing->state == CONN_PROOF_SENT);
    /* A peer we failed (it published nothing in time, or went quiet past
     * the timeout) hears so, and fails us in turn: taking it back would
     * have it send into a stream we no longer read for it. */
    if (p->dead || p->conn || tp->shutting_down || ours_wins) {
        reply(tp, c, nonce, p->dead ? VERDICT_GONE : VERDICT_LOST);
        return;
    }
    if (p->dialing)
        tcp_conn_free(tp, p->dialing); /* the lower rank's dial wins */
    c->peer = (int)src;
    c->peer_nonce = nonce;
    c->peer_eager = (size_t)xdev_get_le64(h + 16);
    reply(tp, c, nonce, VERDICT_ACCEPT);
}

/* The dialer answered our challenge: the connection is its. A replayed
 * HELLO (its sender cannot answer Na) ends here, without a word. */
static void on_proof(xdev_tp_t *tp, tcp_conn_t *c)
{
    tcp_peer_t *p = &tp->peers[c->peer];
    if (xdev_get_le32(c->hs) != PROOF_MAGIC || xdev_get_le32(c->hs + 4) != (uint32_t)c->peer ||
        xdev_get_le64(c->hs + 8) != proof_mac(tp, c->hs, c->nonce, c->peer_nonce)) {
        tcp_conn_free(tp, c);
        return;
    }
    /* Another connection to this peer in the meantime cannot come from a
     * live peer, which dials one at a time and gives way to a dial of ours
     * in flight; should it happen, the newer one goes. */
    if (p->dead || p->conn || tp->shutting_down) {
        tcp_conn_free(tp, c);
        return;
    }
    c->stage = malloc(TCP_STAGE_BYTES);
    uint8_t opened[TCP_OPENED_BYTES];
    xdev_put_le32(opened, OPENED_MAGIC);
    if (!c->stage || !write_all(c->fd, opened, sizeof opened)) {
        tcp_conn_free(tp, c); /* the dialer dials again */
        return;
    }
    tp->nauth--;
    conn_open(tp, c, c->peer_eager);
}

static void on_reply(xdev_tp_t *tp, tcp_conn_t *c)
{
    uint8_t r[TCP_REPLY_BYTES];
    memcpy(r, c->hs, sizeof r);
    uint64_t mac = xdev_get_le64(r + 24);
    xdev_put_le64(r + 24, c->nonce);
    if (xdev_get_le32(r) != REPLY_MAGIC || mac != xdev_auth_mac(tp->dev, r, 32)) {
        tcp_conn_lost(tp, c); /* not our peer answering */
        return;
    }
    uint32_t verdict = xdev_get_le32(r + 4);
    if (verdict == VERDICT_GONE) {
        peer_fail(tp, c->peer);
        return;
    }
    if (verdict != VERDICT_ACCEPT) {
        /* The peer's own dial to us wins; it arrives through accept. */
        tcp_conn_free(tp, c);
        return;
    }
    uint8_t proof[TCP_PROOF_BYTES];
    xdev_put_le32(proof, PROOF_MAGIC);
    xdev_put_le32(proof + 4, (uint32_t)tp->rank);
    xdev_put_le64(proof + 8, proof_mac(tp, proof, xdev_get_le64(r + 16), c->nonce));
    c->stage = malloc(TCP_STAGE_BYTES);
    if (!c->stage || !write_all(c->fd, proof, sizeof proof)) {
        tcp_conn_lost(tp, c);
        return;
    }
    c->state = CONN_PROOF_SENT;
    /* No deadline now: the acceptor proved itself our peer (its REPLY's
     * MAC), and it may open on our PROOF whenever it runs again. Given up
     * while it sat stopped, the connection it then opened would close
     * under it, and it would take us for dead. It ends by OPENED, or by
     * EOF, a reset or keepalive when the peer is really gone. */
    c->deadline_ms = UINT64_MAX;
    c->hs_have = 0;
    c->peer_eager = (size_t)xdev_get_le64(r + 8);
}

/* The acceptor has opened its end; data may follow at once. */
static void on_opened(xdev_tp_t *tp, tcp_conn_t *c)
{
    if (xdev_get_le32(c->hs) != OPENED_MAGIC) {
        tcp_conn_lost(tp, c);
        return;
    }
    conn_open(tp, c, c->peer_eager);
}

void tcp_conn_event(xdev_tp_t *tp, tcp_conn_t *c, uint32_t events)
{
    switch (c->state) {
    case CONN_CLOSED: /* closed earlier in this batch */
        break;
    case CONN_DIALING: {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err == ECONNREFUSED && tp->refused_means_dead)
            peer_fail(tp, c->peer);
        else if (err)
            tcp_conn_lost(tp, c);
        else
            send_hello(tp, c);
        break;
    }
    case CONN_HELLO_SENT:
        if (read_handshake(tp, c, TCP_REPLY_BYTES))
            on_reply(tp, c);
        break;
    case CONN_AUTH_WAIT:
        if (read_handshake(tp, c, TCP_HELLO_BYTES))
            on_hello(tp, c);
        break;
    case CONN_PROOF_WAIT:
        if (read_handshake(tp, c, TCP_PROOF_BYTES))
            on_proof(tp, c);
        break;
    case CONN_PROOF_SENT:
        if (read_handshake(tp, c, TCP_OPENED_BYTES))
            on_opened(tp, c);
        break;
    case CONN_OPEN:
        if (events & EPOLLOUT)
            tcp_flush(tp, c->peer);
        /* the flush may have lost the connection; look it up again */
        if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && tp->peers[c->peer].conn == c)
            tcp_read(tp, c);
        break;
    }
}

/* An error or EOF. Before the handshake completes that only costs a
 * redial; on an open connection the peer is gone. */
void tcp_conn_lost(xdev_tp_t *tp, tcp_conn_t *c)
{
    if (c->state == CONN_OPEN) {
        peer_fail(tp, c->peer);
        return;
    }
    tcp_conn_free(tp, c);
}

void tcp_timers(xdev_tp_t *tp, uint64_t now)
{
    tcp_conn_t *next;
    for (tcp_conn_t *c = tp->conns; c && tp->nauth; c = next) {
        next = c->next;
        if ((c->state == CONN_AUTH_WAIT || c->state == CONN_PROOF_WAIT) && now >= c->deadline_ms)
            tcp_conn_free(tp, c);
    }
    for (int i = 0; i < tp->size && tp->nwanting; i++) {
        tcp_peer_t *p = &tp->peers[i];
        if (!p->wanted || p->conn)
            continue;
        /* The dialer's side of a handshake is bounded as the acceptor's
         * until PROOF: whoever holds the peer's port (a stranger's
         * listener, once the peer died) may never answer. A redial, or
         * the give-up, follows. */
        if (p->dialing) {
            if (now >= p->dialing->deadline_ms)
                tcp_conn_free(tp, p->dialing);
            continue;
        }
        if (now >= p->give_up_ms)
            peer_fail(tp, i);
        else if (now >= p->redial_ms && !tp->shutting_down)
            dial(tp, i);
    }
}
