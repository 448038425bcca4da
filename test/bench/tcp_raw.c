/*
 * tcp-raw-bench - the raw-socket baseline for xdev-bench.
 *
 * Forks into two processes joined by one TCP loopback connection and runs
 * the tests of xdev-bench with its method, options and output formats
 * (src/tools/bench_method.c and bench_loops.h), so that a script can join
 * the two on (test, size). This file is the messaging and the setup.
 *
 * The connection is what a framed message transport does at best: both
 * sockets are nonblocking with TCP_NODELAY and both sides busy-poll
 * (retry on EAGAIN, never block in poll/epoll, as MPI libraries do). Every
 * message is an 8-byte length followed by the payload, sent with one
 * sendmsg (writev) and received with one recvmsg (readv) straight into the
 * caller's buffer when the socket allows. Acks and barriers are framed
 * messages too.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/tools/bench_method.h"

#define HDR_BYTES 8

static int my_rank = -1; /* for diagnostics only */

static void die(const char *what)
{
    fprintf(stderr, "tcp-raw-bench: rank %d: %s: %s\n", my_rank, what, strerror(errno));
    exit(1);
}

static void die_msg(const char *msg)
{
    fprintf(stderr, "tcp-raw-bench: rank %d: %s\n", my_rank, msg);
    exit(1);
}

/* ---- framed, busy-polled streams ---- */

/* `count` frames of `size` payload bytes each, all from or into `buf`,
 * moving through the socket one step at a time. */
struct stream {
    int fd;
    char *buf;
    size_t size;
    int count;
    int frames_done;
    size_t frame_off;   /* bytes of the current frame (header + payload) moved */
    uint64_t hdr;
};

static void stream_init(struct stream *s, int fd, void *buf, size_t size, int count)
{
    *s = (struct stream){ .fd = fd, .buf = buf, .size = size, .count = count, .hdr = size };
}

/* The rest of the current frame as an iovec. */
static int frame_iov(struct stream *s, struct iovec iov[2])
{
    int n = 0;
    size_t off = s->frame_off;
    if (off < HDR_BYTES) {
        iov[n++] = (struct iovec){ (char *)&s->hdr + off, HDR_BYTES - off };
        off = 0;
    } else {
        off -= HDR_BYTES;
    }
    if (s->size > off)
        iov[n++] = (struct iovec){ s->buf + off, s->size - off };
    return n;
}

/* Account for r bytes moved; returns 1 when every frame is done. */
static int stream_advance(struct stream *s, size_t r)
{
    s->frame_off += r;
    if (s->frame_off == HDR_BYTES + s->size) {
        if (s->hdr != s->size)
            die_msg("framing error: unexpected message length");
        s->frames_done++;
        s->frame_off = 0;
        s->hdr = s->size;
    }
    return s->frames_done == s->count;
}

static int would_block(void)
{
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* One nonblocking send attempt; returns 1 when every frame is sent. */
static int stream_tx(struct stream *s)
{
    struct iovec iov[2];
    struct msghdr m = { .msg_iov = iov };
    if (s->frames_done == s->count)
        return 1;
    m.msg_iovlen = frame_iov(s, iov);
    ssize_t r = sendmsg(s->fd, &m, MSG_NOSIGNAL);
    if (r < 0) {
        if (would_block())
            return 0;
        die("sendmsg");
    }
    return stream_advance(s, (size_t)r);
}

/* One nonblocking receive attempt; returns 1 when every frame is in. */
static int stream_rx(struct stream *s)
{
    struct iovec iov[2];
    struct msghdr m = { .msg_iov = iov };
    if (s->frames_done == s->count)
        return 1;
    if (s->frame_off == 0)
        s->hdr = ~(uint64_t)0;
    m.msg_iovlen = frame_iov(s, iov);
    ssize_t r = recvmsg(s->fd, &m, 0);
    if (r < 0) {
        if (would_block())
            return 0;
        die("recvmsg");
    }
    if (r == 0)
        die_msg("peer closed the connection");
    return stream_advance(s, (size_t)r);
}

static void send_frames(int fd, void *buf, size_t size, int count)
{
    struct stream s;
    stream_init(&s, fd, buf, size, count);
    while (!stream_tx(&s))
        ;
}

static void recv_frames(int fd, void *buf, size_t size, int count)
{
    struct stream s;
    stream_init(&s, fd, buf, size, count);
    while (!stream_rx(&s))
        ;
}

/* Framed messages arrive in the order they were sent, so tags need no
 * matching and are ignored. */
struct bench_io {
    int fd;
    struct stream tx, rx;   /* the window posted last; idle once complete */
};

static inline void bench_send(struct bench_io *io, const void *buf, size_t size, int tag)
{
    (void)tag;
    send_frames(io->fd, (void *)buf, size, 1);
}

static inline void bench_recv(struct bench_io *io, void *buf, size_t size, int tag)
{
    (void)tag;
    recv_frames(io->fd, buf, size, 1);
}

static inline void bench_post_sends(struct bench_io *io, const void *buf, size_t size,
                                    int tag, int count)
{
    (void)tag;
    stream_init(&io->tx, io->fd, (void *)buf, size, count);
}

static inline void bench_post_recvs(struct bench_io *io, void *buf, size_t size, int tag,
                                    int count)
{
    (void)tag;
    stream_init(&io->rx, io->fd, buf, size, count);
}

/* Alternating send and receive attempts, so that neither side stalls on a
 * full socket buffer while both send a window (bibw). */
static inline void bench_wait_sends(struct bench_io *io, int count)
{
    (void)count;
    while (!stream_tx(&io->tx))
        stream_rx(&io->rx);
}

static inline void bench_wait_recvs(struct bench_io *io, int count)
{
    (void)count;
    while (!stream_rx(&io->rx))
        stream_tx(&io->tx);
}

#include "../../src/tools/bench_loops.h"

/* ---- setup ---- */

static void tune_socket(int fd)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
        die("setsockopt TCP_NODELAY");
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        die("fcntl O_NONBLOCK");
}

/* Fork into rank 0 (the parent, returned *child > 0) and rank 1 (the
 * child), joined by one TCP loopback connection; returns its socket. */
static int connect_pair(pid_t *child)
{
    struct sockaddr_in addr = { .sin_family = AF_INET,
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof addr;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0)
        die("socket");
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 1) < 0 ||
        getsockname(lfd, (struct sockaddr *)&addr, &alen) < 0)
        die("listen on loopback");

    fflush(stdout);
    *child = fork();
    if (*child < 0)
        die("fork");
    int fd;
    if (*child == 0) {
        my_rank = 1;
        close(lfd);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0)
            die("connect");
    } else {
        my_rank = 0;
        fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            die("accept");
        close(lfd);
    }
    tune_socket(fd);
    return fd;
}

static const struct bench_program program = {
    .name = "tcp-raw-bench",
    .about =
        "Usage: tcp-raw-bench [options]\n"
        "Raw TCP loopback baseline for xdev-bench: forks into two processes joined\n"
        "by one nonblocking, busy-polled TCP connection (TCP_NODELAY) and runs the\n"
        "same tests with the same method. Every message is an 8-byte length and\n"
        "the payload, sent with one writev.\n"
        "\n"
        "Tests:\n"
        "  latency  ping-pong; half the round trip, in us\n"
        "  bw       the parent sends a window of messages, the child receives them\n"
        "           and acks the window with a 4-byte message; MB/s (1e6 bytes/s)\n"
        "  bibw     both send and receive a window at once; MB/s of both\n"
        "           directions together\n",
    .ctx_help = "accepted and ignored, so xdev-bench arguments can be reused",
    .json_example_transport = "tcp-raw",
};

int main(int argc, char **argv)
{
    struct bench_opts o;
    bench_parse_args(&program, argc, argv, &o);

    pid_t child;
    struct bench_io io = { .fd = connect_pair(&child) };
    struct bench b = { .io = &io, .rank = my_rank };
    if (bench_setup(&program, &b, &o) < 0)
        exit(1);

    const struct bench_label label = { .system = "tcp-raw",
                                       .setup = "loopback TCP, 2 processes",
                                       .transport = "tcp-raw" };
    bench_run(&b, &o, &label, &bench_loops);

    bench_free(&b);
    close(io.fd);
    if (b.rank == 1)
        return 0;
    int status;
    if (waitpid(child, &status, 0) < 0)
        die("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        die_msg("the child process failed");
    return 0;
}
