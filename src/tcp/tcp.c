/*
 * tcp.c - the TCP transport: its ops table, the listening socket and the
 * progress loop. See tcp.h for the design.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include "tcp.h"

#define TIMER_PERIOD_MS 5
#define DIRECT_POLL_MAX 4    /* open connections worth polling one by one */
#define EPOLL_EVERY 256      /* ... but look at epoll (accepts) this often */

void tcp_set_events(xdev_tp_t *tp, tcp_conn_t *c, uint32_t events)
{
    if (c->events == events)
        return;
    struct epoll_event ev = { .events = events, .data.ptr = c };
    epoll_ctl(tp->epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->events = events;
}

void tcp_service_later(xdev_tp_t *tp, tcp_conn_t *c)
{
    if (c->queued)
        return;
    c->queued = true;
    c->service_next = tp->service;
    tp->service = c;
}

/* A write failed: the peer reset or closed the connection (it finalized
 * or died while we were not reading). What it sent before is still in our
 * socket, the kernel keeps it past a reset, and the prefix rule keeps it
 * receivable: read it, and lose the connection at its end (tcp_read does,
 * at the EOF or the reset), or at once where reading is held back. */
static void lose_broken(xdev_tp_t *tp, tcp_conn_t *c)
{
    int peer = c->peer;
    if (c->state == CONN_OPEN && tp->peers[peer].conn == c && c->rx_phase != RX_PAUSED) {
        tcp_read(tp, c);
        if (tp->peers[peer].conn != c || c->queued)
            return; /* lost, or more to read in the next call */
    }
    tcp_conn_lost(tp, c);
}

/* Connections that asked for attention outside an epoll event: a resumed
 * payload to read, an error to act on. Each is served once per call: one
 * that reads up to its bound queues itself again, for the next call, so
 * that a flood cannot keep a progress call, and the device lock with it,
 * until it is over (other threads' calls wait for that lock). */
static XDEV_HOT void run_service(xdev_tp_t *tp)
{
    tp->serving = tp->service;
    tp->service = NULL;
    while (tp->serving) {
        tcp_conn_t *c = tp->serving;
        tp->serving = c->service_next;
        c->queued = false;
        if (c->broken)
            lose_broken(tp, c);
        else
            tcp_read(tp, c);
    }
}

/* With a few connections, asking each socket directly costs one system
 * call per poll where epoll_wait plus recv costs two, and a ping-pong's
 * latency is mostly system calls. What wakes a sleeper may be an accept,
 * which direct polls do not see: the first poll after a sleep looks at
 * epoll. */
static bool poll_directly(xdev_tp_t *tp, bool woke)
{
    return !woke && tp->nopen && tp->nopen <= DIRECT_POLL_MAX && !tp->nauth &&
           !tp->nwanting && (++tp->polls % EPOLL_EVERY) != 0;
}

static XDEV_HOT void poll_open_conns(xdev_tp_t *tp)
{
    tcp_conn_t *open[DIRECT_POLL_MAX];
    unsigned n = 0;
    for (tcp_conn_t *c = tp->conns; c && n < DIRECT_POLL_MAX; c = c->next)
        if (c->state == CONN_OPEN)
            open[n++] = c;
    for (unsigned i = 0; i < n; i++) {
        int peer = open[i]->peer;
        /* an earlier iteration may have lost this connection */
        if (tp->peers[peer].conn != open[i])
            continue;
        if (tp->peers[peer].txq.head)
            tcp_flush(tp, peer);
        if (tp->peers[peer].conn == open[i])
            tcp_read(tp, open[i]);
    }
}

static XDEV_HOT void tcp_progress(xdev_tp_t *tp, bool woke)
{
    struct epoll_event evs[32];
    run_service(tp);
    if (poll_directly(tp, woke)) {
        poll_open_conns(tp);
        run_service(tp);
        tcp_reap_closed(tp);
        return;
    }
    int n = epoll_wait(tp->epfd, evs, 32, 0);
    for (int i = 0; i < n; i++) {
        if (!evs[i].data.ptr)
            tcp_accept_all(tp);
        else
            tcp_conn_event(tp, evs[i].data.ptr, evs[i].events);
    }
    run_service(tp);
    if (tp->nwanting || tp->nauth) {
        uint64_t now = xdev_now_ms();
        if (now >= tp->next_timer_ms) {
            tp->next_timer_ms = now + TIMER_PERIOD_MS;
            tcp_timers(tp, now);
        }
    }
    tcp_reap_closed(tp);
}

static int tcp_wait_fd(xdev_tp_t *tp)
{
    return tp->epfd;
}

/* The epoll set is level-triggered: only what was read into our own
 * buffers and not yet handed on (tp->service) raises no event. */
static int tcp_arm(xdev_tp_t *tp)
{
    return tp->service ? XDEV_ERR_BUSY : XDEV_OK;
}

/* The first IPv4 address of an interface that is up and not loopback:
 * where peers on other hosts can reach us when nobody said otherwise. */
static bool routable_addr(char *out, size_t cap)
{
    struct ifaddrs *list;
    bool found = false;
    if (getifaddrs(&list) != 0)
        return false;
    for (struct ifaddrs *a = list; a && !found; a = a->ifa_next)
        found = a->ifa_addr && a->ifa_addr->sa_family == AF_INET && (a->ifa_flags & IFF_UP) &&
                !(a->ifa_flags & IFF_LOOPBACK) &&
                getnameinfo(a->ifa_addr, sizeof(struct sockaddr_in), out, (socklen_t)cap, NULL, 0,
                            NI_NUMERICHOST) == 0;
    freeifaddrs(list);
    return found;
}

/* xdev-info: the interfaces a rank could listen on. */
static void tcp_info(FILE *out)
{
    struct ifaddrs *list;
    if (getifaddrs(&list) != 0) {
        fprintf(out, "  cannot list interfaces: %s\n", strerror(errno));
        return;
    }
    for (struct ifaddrs *a = list; a; a = a->ifa_next) {
        if (!a->ifa_addr || (a->ifa_addr->sa_family != AF_INET && a->ifa_addr->sa_family != AF_INET6))
            continue;
        char host[NI_MAXHOST];
        socklen_t len = a->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                                          : sizeof(struct sockaddr_in6);
        if (getnameinfo(a->ifa_addr, len, host, sizeof host, NULL, 0, NI_NUMERICHOST) != 0)
            continue;
        fprintf(out, "  %-10s %-28s %s%s\n", a->ifa_name, host, a->ifa_flags & IFF_UP ? "up" : "down",
                a->ifa_flags & IFF_LOOPBACK ? ", loopback" : "");
    }
    freeifaddrs(list);
    const char *addr = xdev_opt(NULL, "XDEV_TCP_ADDR");
    char routable[INET6_ADDRSTRLEN];
    fprintf(out, "  ranks listen on %s (XDEV_TCP_ADDR) unless given a peer table",
            addr ? addr : "127.0.0.1");
    if (!addr && routable_addr(routable, sizeof routable))
        fprintf(out, "; under mpirun or srun on %s", routable);
    fprintf(out, "\n");
}

static XDEV_HOT void tcp_watch(xdev_tp_t *tp, int peer)
{
    tcp_want_peer(tp, peer);
}

/* "host:port", with IPv6 hosts in brackets. */
int tcp_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[256];
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || (size_t)(colon - s) >= sizeof host)
        return XDEV_ERR_INIT;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    char *h = host;
    if (h[0] == '[' && h[strlen(h) - 1] == ']') {
        h[strlen(h) - 1] = '\0';
        h++;
    }
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535)
        return XDEV_ERR_INIT;
    memset(ss, 0, sizeof *ss);
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, h, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        *len = sizeof *in4;
    } else if (inet_pton(AF_INET6, h, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        *len = sizeof *in6;
    } else {
        return XDEV_ERR_INIT;
    }
    return XDEV_OK;
}

static int format_addr(const struct sockaddr_storage *ss, char *out, size_t cap)
{
    char host[INET6_ADDRSTRLEN];
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in4 = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &in4->sin_addr, host, sizeof host);
        snprintf(out, cap, "%s:%u", host, ntohs(in4->sin_port));
    } else {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
        snprintf(out, cap, "[%s]:%u", host, ntohs(in6->sin6_port));
    }
    return XDEV_OK;
}

/* Listen where the peer table says, or on XDEV_TCP_ADDR, at a port the
 * kernel picks, published through the bootstrap. Unset, XDEV_TCP_ADDR is
 * loopback for a job on one host (xdevrun's) and the first routable
 * address for one a PMIx launcher may spread over several. */
static int tcp_listen(xdev_tp_t *tp, const xdev_tp_params_t *p)
{
    struct sockaddr_storage ss;
    socklen_t len;
    const char *env = xdev_opt(tp->dev, "XDEV_TCP_ADDR");
    char want[300], routable[INET6_ADDRSTRLEN];
    if (!env && p->many_hosts && routable_addr(routable, sizeof routable))
        env = routable;
    if (p->peers)
        snprintf(want, sizeof want, "%s", p->peers[p->rank]);
    else if (env && strchr(env, ':') && env[0] != '[' && strchr(env, ':') != strrchr(env, ':'))
        snprintf(want, sizeof want, "[%s]:0", env); /* bare IPv6 address */
    else
        snprintf(want, sizeof want, "%s:0", env ? env : "127.0.0.1");
    if (tcp_parse_addr(want, &ss, &len) != XDEV_OK)
        return XDEV_ERR_INIT;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return XDEV_ERR_SYSTEM;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 1024) != 0) {
        close(fd);
        return XDEV_ERR_INIT;
    }
    tp->listen_fd = fd;
    len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return XDEV_ERR_SYSTEM;
    char addr[300];
    format_addr(&ss, addr, sizeof addr);
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
    if (epoll_ctl(tp->epfd, EPOLL_CTL_ADD, fd, &ev) != 0)
        return XDEV_ERR_SYSTEM;
    return xdev_boot_publish(tp->dev, "tcp", addr);
}

static void tcp_close(xdev_tp_t *tp)
{
    if (!tp)
        return;
    for (int p = 0; p < tp->size; p++)
        tcp_fail_queue(tp, p);
    while (tp->conns)
        tcp_conn_free(tp, tp->conns);
    tcp_reap_closed(tp);
    if (tp->listen_fd >= 0)
        close(tp->listen_fd);
    if (tp->epfd >= 0)
        close(tp->epfd);
    free(tp->peers);
    free(tp);
}

static int tcp_open(xdev_t *dev, const xdev_tp_params_t *p, xdev_tp_t **out)
{
    xdev_tp_t *tp = calloc(1, sizeof *tp);
    if (!tp)
        return XDEV_ERR_NOMEM;
    tp->dev = dev;
    tp->rank = p->rank;
    tp->size = p->size;
    tp->eager_limit = p->eager_limit;
    tp->peer_timeout_ms = p->peer_timeout_ms;
    tp->refused_means_dead = !p->peers;
    tp->listen_fd = -1;
    tp->epfd = epoll_create1(EPOLL_CLOEXEC);
    tp->peers = calloc((size_t)p->size, sizeof *tp->peers);
    int rc = tp->epfd < 0 ? XDEV_ERR_SYSTEM : !tp->peers ? XDEV_ERR_NOMEM : XDEV_OK;
    for (int r = 0; rc == XDEV_OK && p->gone && r < p->size; r++)
        tp->peers[r].dead = p->gone[r]; /* the core fails them itself */
    if (rc == XDEV_OK && p->size > 1)
        rc = tcp_listen(tp, p);
    if (rc != XDEV_OK) {
        tcp_close(tp);
        return rc;
    }
    *out = tp;
    return XDEV_OK;
}

/* Finalize: once a peer's queue is empty, send FIN, and keep reading until
 * its FIN comes back, so that nothing either side sent is cut off by a
 * reset. Done when no connection is left. */
static int tcp_shutdown(xdev_tp_t *tp)
{
    tp->shutting_down = true;
    if (tp->listen_fd >= 0) {
        close(tp->listen_fd);
        tp->listen_fd = -1;
    }
    tcp_conn_t *next;
    for (tcp_conn_t *c = tp->conns; c; c = next) {
        next = c->next;
        if (c->state == CONN_PROOF_SENT)
            continue; /* the peer may have opened it: opened, it is shut
                       * down like the rest (tcp_flush), or lost */
        if (c->state != CONN_OPEN) {
            tcp_conn_free(tp, c);
        } else if (!c->wr_closed && !tp->peers[c->peer].txq.head) {
            shutdown(c->fd, SHUT_WR);
            c->wr_closed = true;
        }
    }
    return tp->conns == NULL;
}

static size_t tcp_short_max(xdev_tp_t *tp)
{
    (void)tp;
    return TCP_SHORT_MAX;
}

const xdev_tp_ops_t xdev_tcp_ops = {
    .name = "tcp",
    .open = tcp_open,
    .send = tcp_send,
    .short_max = tcp_short_max,
    .progress = tcp_progress,
    .wait_fd = tcp_wait_fd,
    .arm = tcp_arm,
    .info = tcp_info,
    .resume = tcp_resume,
    .watch = tcp_watch,
    .shutdown = tcp_shutdown,
    .close = tcp_close,
};
