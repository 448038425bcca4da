/*
 * fuzz_tcp_handshake.c - the tcp handshake's readers (tcp_conn_event in
 * CONN_AUTH_WAIT and CONN_PROOF_WAIT: on_hello, on_proof; in
 * CONN_HELLO_SENT and CONN_PROOF_SENT: on_reply, on_opened) on any bytes
 * from the other end.
 *
 * The handshake is the only thing between a listening rank and a
 * stranger, so what it promises (tcp_conn.c) is checked against the
 * message format, not against the code: a stranger's HELLO gets no byte
 * back and opens nothing; a good HELLO gets a REPLY whose MAC covers our
 * nonce and its own; the connection opens, and OPENED goes back, exactly
 * when the PROOF names the HELLO's rank and carries the right MAC; a
 * dialer answers only a REPLY made with the job secret, with a correct
 * PROOF, opens only on OPENED after it, and takes the peer's eager limit
 * from the REPLY; whatever the acceptor sends, a dialer takes it for dead
 * before the connection opened only on a signed REPLY whose verdict says
 * the dialer is gone to it, and an acceptor gives that verdict exactly to
 * a rank it holds dead. A fuzzer cannot guess a 64-bit MAC, so the first
 * input byte may ask the target to sign the first message, the PROOF, or
 * both with the secret, which lets the fuzzer reach everything behind the
 * MAC checks, and also offer a good HELLO followed by a forged PROOF.
 * Two more bits give the acceptor a dial of its own to the HELLO's sender,
 * in flight or past its PROOF, so that the verdict on a simultaneous dial
 * is checked too, and a third can have the acceptor hold the sender dead;
 * a dialer is sent the rest of the input right behind OPENED, which must
 * stay in the socket for the open connection to read.
 *   input: [mode: bit 0 dialer, bit 1 sign HELLO or REPLY, bit 2 sign PROOF,
 *           bit 3 acceptor dialing the sender too, bit 4 that dial has sent
 *           its PROOF, bit 5 the sender dead to the acceptor]
 *          [HELLO 40 | REPLY 32] [PROOF 16 | OPENED 4] [rest]
 */
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "fuzz_core.h"
#include "tcp.h"

enum { ME = 1, SIZE = 4, DIALED = 0 };
enum {
    MODE_DIALER = 1,
    MODE_SIGN = 2,
    MODE_SIGN_PROOF = 4,
    MODE_OURS = 8,
    MODE_OURS_PROVEN = 16,
    MODE_GONE = 32,
};
enum { VERDICT_LOST = 0, VERDICT_ACCEPT = 1, VERDICT_GONE = 2 };
#define HELLO_MAGIC 0x33564458u
#define REPLY_MAGIC 0x42564458u
#define PROOF_MAGIC 0x50564458u
#define OPENED_MAGIC 0x4f564458u
#define DIALER_NONCE 0x0123456789abcdefull

static const uint8_t *in;
static size_t in_left;

/* Send the next `len` bytes of the input (fewer if it ends: then EOF). */
static size_t send_next(int fd, uint8_t *msg, size_t len, bool sign, xdev_t *d,
                        void (*signer)(xdev_t *, uint8_t *))
{
    size_t n = in_left < len ? in_left : len;
    memset(msg, 0, len);
    memcpy(msg, in, n);
    in += n;
    in_left -= n;
    if (sign && n == len)
        signer(d, msg);
    FUZZ_CHECK(write(fd, msg, n) == (ssize_t)n);
    if (n < len)
        shutdown(fd, SHUT_WR);
    return n;
}

static ssize_t take(int fd, uint8_t *buf, size_t cap)
{
    ssize_t n = read(fd, buf, cap);
    return n < 0 ? 0 : n;
}

/* The MACs as tcp_conn.c defines them: HELLO's over its first 32 bytes,
 * REPLY's over its first 24 and the dialer's nonce, PROOF's over its
 * first 8 and both nonces. */
static uint64_t reply_mac(xdev_t *d, const uint8_t *r, uint64_t nd)
{
    uint8_t m[32];
    memcpy(m, r, 24);
    xdev_put_le64(m + 24, nd);
    return xdev_auth_mac(d, m, sizeof m);
}

static uint64_t proof_mac(xdev_t *d, const uint8_t *p, uint64_t na, uint64_t nd)
{
    uint8_t m[24];
    memcpy(m, p, 8);
    xdev_put_le64(m + 8, na);
    xdev_put_le64(m + 16, nd);
    return xdev_auth_mac(d, m, sizeof m);
}

static uint64_t na; /* the acceptor's nonce, from its REPLY */
static uint64_t nd; /* the dialer's, from its HELLO */

static void sign_hello(xdev_t *d, uint8_t *h) { xdev_put_le64(h + 32, xdev_auth_mac(d, h, 32)); }
static void sign_reply(xdev_t *d, uint8_t *r) { xdev_put_le64(r + 24, reply_mac(d, r, DIALER_NONCE)); }
static void sign_proof(xdev_t *d, uint8_t *p) { xdev_put_le64(p + 8, proof_mac(d, p, na, nd)); }

/* Let c read until it has acted on what was sent (a short message takes
 * one read for its bytes and one for the EOF after them). */
static void pump(xdev_tp_t *tp, tcp_conn_t *c)
{
    uint8_t state = c->state;
    for (int i = 0; i < 4 && c->state == state; i++)
        tcp_conn_event(tp, c, EPOLLIN);
}

/* The rank the coming HELLO names, or SIZE. */
static uint32_t hello_src(void)
{
    return in_left >= 8 ? xdev_get_le32(in + 4) : SIZE;
}

/* A dial of ours to the rank the coming HELLO names, in the state asked. */
static tcp_conn_t *our_dial(xdev_tp_t *tp, tcp_conn_t *c, uint8_t mode)
{
    uint32_t src = hello_src();
    if (!(mode & MODE_OURS) || src >= SIZE || src == ME)
        return NULL;
    tcp_conn_t *ours = calloc(1, sizeof *ours);
    FUZZ_CHECK(ours);
    ours->fd = -1;
    ours->peer = (int)src;
    ours->state = mode & MODE_OURS_PROVEN ? CONN_PROOF_SENT : CONN_HELLO_SENT;
    ours->next = c->next;
    c->next = ours;
    tp->peers[src].dialing = ours;
    tp->peers[src].wanted = true;
    tp->nwanting = 1;
    return ours;
}

static void accept_side(xdev_tp_t *tp, tcp_conn_t *c, int fd, uint8_t mode)
{
    xdev_t *d = tp->dev;
    uint8_t h[TCP_HELLO_BYTES], r[TCP_REPLY_BYTES + 1], p[TCP_PROOF_BYTES];
    uint8_t o[TCP_OPENED_BYTES + 1];
    /* A rank held dead has no dial of ours in flight (failing it ended
     * that). */
    uint32_t named = hello_src();
    bool gone = (mode & MODE_GONE) && named < SIZE && named != ME;
    if (gone)
        tp->peers[named].dead = true;
    tcp_conn_t *ours = gone ? NULL : our_dial(tp, c, mode);
    bool ours_proven = ours && ours->state == CONN_PROOF_SENT;
    size_t got = send_next(fd, h, sizeof h, mode & MODE_SIGN, d, sign_hello);
    pump(tp, c);
    uint32_t src = xdev_get_le32(h + 4);
    bool hello_ok = got == sizeof h && xdev_get_le32(h) == HELLO_MAGIC &&
                    xdev_get_le32(h + 8) == ME && src < SIZE && src != ME &&
                    xdev_get_le64(h + 32) == xdev_auth_mac(d, h, 32);
    ssize_t n = take(fd, r, sizeof r);
    if (!hello_ok) {
        FUZZ_CHECK(n == 0 && c->state == CONN_CLOSED);
        return;
    }
    nd = xdev_get_le64(h + 24);
    na = xdev_get_le64(r + 16);
    /* The lower rank's dial wins, and a dial past its PROOF always. */
    bool accepted = !gone && (!ours || ((int)src < ME && !ours_proven));
    uint32_t verdict = gone ? VERDICT_GONE : accepted ? VERDICT_ACCEPT : VERDICT_LOST;
    FUZZ_CHECK(n == TCP_REPLY_BYTES && xdev_get_le32(r) == REPLY_MAGIC &&
               xdev_get_le32(r + 4) == verdict &&
               xdev_get_le64(r + 8) == tp->eager_limit &&
               xdev_get_le64(r + 24) == reply_mac(d, r, nd));
    if (!accepted) {
        FUZZ_CHECK(c->state == CONN_CLOSED && tp->peers[src].dialing == ours);
        return;
    }
    FUZZ_CHECK(c->state == CONN_PROOF_WAIT && !tp->peers[src].dialing);

    got = send_next(fd, p, sizeof p, mode & MODE_SIGN_PROOF, d, sign_proof);
    pump(tp, c);
    bool proof_ok = got == sizeof p && xdev_get_le32(p) == PROOF_MAGIC &&
                    xdev_get_le32(p + 4) == src && xdev_get_le64(p + 8) == proof_mac(d, p, na, nd);
    n = take(fd, o, sizeof o);
    FUZZ_CHECK(proof_ok ? n == TCP_OPENED_BYTES && xdev_get_le32(o) == OPENED_MAGIC : n == 0);
    FUZZ_CHECK((tp->peers[src].conn == c) == proof_ok);
    FUZZ_CHECK((c->state == CONN_OPEN) == proof_ok);
    if (proof_ok)
        FUZZ_CHECK(d->peers[src].eager_limit == (size_t)xdev_get_le64(h + 16));
}

static void dial_side(xdev_tp_t *tp, tcp_conn_t *c, int fd, bool sign)
{
    xdev_t *d = tp->dev;
    uint8_t r[TCP_REPLY_BYTES], p[TCP_PROOF_BYTES + 1], o[TCP_OPENED_BYTES];
    c->state = CONN_HELLO_SENT;
    c->peer = DIALED;
    c->nonce = DIALER_NONCE;
    tp->peers[DIALED].dialing = c;
    tp->peers[DIALED].wanted = true;
    tp->nwanting = 1;
    size_t got = send_next(fd, r, sizeof r, sign, d, sign_reply);
    pump(tp, c);
    bool reply_ok = got == sizeof r && xdev_get_le32(r) == REPLY_MAGIC &&
                    xdev_get_le64(r + 24) == reply_mac(d, r, DIALER_NONCE);
    ssize_t n = take(fd, p, sizeof p);
    uint32_t verdict = reply_ok ? xdev_get_le32(r + 4) : VERDICT_LOST;
    bool gone = verdict == VERDICT_GONE;
    FUZZ_CHECK(tp->peers[DIALED].dead == gone && d->peers[DIALED].dead == gone);
    if (verdict != VERDICT_ACCEPT) {
        FUZZ_CHECK(n == 0 && c->state == CONN_CLOSED && !tp->peers[DIALED].conn);
        return;
    }
    na = xdev_get_le64(r + 16);
    nd = DIALER_NONCE;
    FUZZ_CHECK(n == TCP_PROOF_BYTES && xdev_get_le32(p) == PROOF_MAGIC &&
               xdev_get_le32(p + 4) == ME && xdev_get_le64(p + 8) == proof_mac(d, p, na, nd));
    FUZZ_CHECK(c->state == CONN_PROOF_SENT && !tp->peers[DIALED].conn);

    got = send_next(fd, o, sizeof o, false, d, NULL);
    size_t rest = in_left < 64 ? in_left : 64;
    FUZZ_CHECK(!rest || write(fd, in, rest) == (ssize_t)rest);
    pump(tp, c);
    bool opened_ok = got == sizeof o && xdev_get_le32(o) == OPENED_MAGIC;
    FUZZ_CHECK(take(fd, p, sizeof p) == 0);
    if (opened_ok) { /* what came behind OPENED is the open connection's */
        uint8_t peek[64];
        ssize_t k = recv(c->fd, peek, sizeof peek, MSG_PEEK | MSG_DONTWAIT);
        FUZZ_CHECK((size_t)(k < 0 ? 0 : k) == rest);
    }
    FUZZ_CHECK(!tp->peers[DIALED].dead && !d->peers[DIALED].dead);
    FUZZ_CHECK((c->state == CONN_OPEN) == opened_ok);
    FUZZ_CHECK((tp->peers[DIALED].conn == c) == opened_ok);
    if (opened_ok)
        FUZZ_CHECK(d->peers[DIALED].eager_limit == (size_t)xdev_get_le64(r + 8));
    else
        FUZZ_CHECK(c->state == CONN_CLOSED && tp->peers[DIALED].wanted);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    in = data + 1;
    in_left = size - 1;
    int sv[2];
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    xdev_tp_t *tp = calloc(1, sizeof *tp);
    tcp_conn_t *c = calloc(1, sizeof *c);
    FUZZ_CHECK(tp && c);
    tp->rank = ME;
    tp->size = SIZE;
    tp->eager_limit = 4096;
    tp->listen_fd = -1;
    tp->epfd = epoll_create1(EPOLL_CLOEXEC);
    tp->peers = calloc(SIZE, sizeof *tp->peers);
    FUZZ_CHECK(tp->epfd >= 0 && tp->peers);
    c->fd = sv[0];
    c->peer = -1;
    c->state = CONN_AUTH_WAIT;
    c->events = EPOLLIN;
    c->deadline_ms = UINT64_MAX;
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
    FUZZ_CHECK(epoll_ctl(tp->epfd, EPOLL_CTL_ADD, sv[0], &ev) == 0);
    tp->conns = c;
    tp->nauth = 1;
    fuzz_core_t fc;
    fuzz_core_open(&fc, ME, SIZE, &xdev_tcp_ops, tp);
    tp->dev = fc.dev;
    fc.dev->cfg.job_secret = "fuzz-job-secret-0123456789";
    auth_init(fc.dev);

    if (data[0] & MODE_DIALER) {
        tp->nauth = 0;
        dial_side(tp, c, sv[1], data[0] & MODE_SIGN);
    } else {
        accept_side(tp, c, sv[1], data[0]);
    }

    xdev_tcp_ops.close(tp);
    fuzz_core_close(&fc);
    close(sv[1]);
    return 0;
}
