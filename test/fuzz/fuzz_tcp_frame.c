/*
 * fuzz_tcp_frame.c - the tcp frame reader (tcp_read through
 * tcp_conn_event, with parse_head and read_payload behind it) on an open
 * connection whose peer sends any bytes and then closes.
 *
 * The reader stands between a socket and the core: a length prefix or a
 * head from a broken peer must never make it read outside its staging
 * buffer or place more into a receive than the core gave it room for
 * (ASan watches both, the receive buffers being heap blocks of exactly
 * their size), and the core must never hold a message longer than the
 * bytes that came in (fuzz_core_check). The input always ends in EOF, so
 * the reader must end up having dropped the peer, and told the core so,
 * unless the core paused it on a message it has no room for yet.
 */
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "fuzz_core.h"
#include "tcp.h"

enum { ME = 0, PEER = 1 };

/* The input goes in in pieces of this many bytes, each read at once: the
 * core's bound is checked against how far the stream was read while a
 * receive waited (fuzz_core_step), and one read of the whole input would
 * say only "all of it". */
enum { FEED = 256 };

static xdev_tp_t *tp_with_open_conn(int fd)
{
    xdev_tp_t *tp = calloc(1, sizeof *tp);
    FUZZ_CHECK(tp);
    tp->rank = ME;
    tp->size = 2;
    tp->eager_limit = FUZZ_EAGER_LIMIT;
    tp->listen_fd = -1;
    tp->epfd = epoll_create1(EPOLL_CLOEXEC);
    tp->peers = calloc(2, sizeof *tp->peers);
    tcp_conn_t *c = calloc(1, sizeof *c);
    FUZZ_CHECK(tp->epfd >= 0 && tp->peers && c && (c->stage = malloc(TCP_STAGE_BYTES)));
    c->fd = fd;
    c->peer = PEER;
    c->state = CONN_OPEN;
    c->rx_phase = RX_HEAD;
    c->events = EPOLLIN;
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
    FUZZ_CHECK(epoll_ctl(tp->epfd, EPOLL_CTL_ADD, fd, &ev) == 0);
    tp->conns = c;
    tp->nopen = 1;
    tp->peers[PEER].conn = c;
    return tp;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    xdev_tp_t *tp = tp_with_open_conn(sv[0]);
    tcp_conn_t *c = tp->conns;
    fuzz_core_t fc;
    fuzz_core_open(&fc, ME, 2, &xdev_tcp_ops, tp);
    tp->dev = fc.dev;

    size_t sent = 0;
    while (sent < size && tp->peers[PEER].conn == c) { /* dropped: the rest never went */
        ssize_t n = write(sv[1], data + sent, size - sent < FEED ? size - sent : FEED);
        if (n <= 0)
            break; /* the socket is full: what went in is the input */
        sent += (size_t)n;
        if (tp->peers[PEER].conn == c && c->rx_phase != RX_PAUSED) {
            tcp_conn_event(tp, c, EPOLLIN);
            fuzz_core_step(&fc);
        }
    }
    shutdown(sv[1], SHUT_WR);
    for (int i = 0; i < 64 && tp->peers[PEER].conn == c && c->rx_phase != RX_PAUSED; i++) {
        tcp_conn_event(tp, c, EPOLLIN);
        fuzz_core_step(&fc);
    }

    if (tp->peers[PEER].conn == c)
        FUZZ_CHECK(c->rx_phase == RX_PAUSED);
    else
        FUZZ_CHECK(fc.dev->peers[PEER].dead);
    fuzz_core_check(&fc, sent);

    xdev_tcp_ops.close(tp);
    fuzz_core_close(&fc);
    close(sv[1]);
    return 0;
}
