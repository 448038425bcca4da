/*
 * tcp.h - the TCP transport's own state, shared by its three files:
 * tcp.c (the ops table, listening, the progress loop, timers),
 * tcp_conn.c (dialing, accepting, the handshake, losing a peer) and
 * tcp_io.c (framing, reading into place, writing queues).
 *
 * One connection per pair of ranks, made on first use. When two ranks dial
 * each other at once, the connection dialed by the lower rank wins, unless
 * the other dial has already sent its PROOF; no data moves before the
 * handshake has settled that (a dialer waits for the acceptor's OPENED),
 * so nothing is ever sent on a connection that is then dropped.
 *
 * A frame on the wire is an 8-byte little-endian length (of what follows),
 * then the xdev head (wire.h), then the payload.
 */
#ifndef XDEV_TCP_H
#define XDEV_TCP_H

#include <stdbool.h>
#include <sys/socket.h>
#include "../core/transport.h"
#include "../kit/hot.h"
#include "../kit/txq.h"

#define TCP_PREFIX 8
#define TCP_STAGE_BYTES (64 * 1024)
#define TCP_SHORT_MAX 4096 /* payload bytes a send may take as XDEV_TX_NOW */
#define TCP_HELLO_BYTES 40
#define TCP_REPLY_BYTES 32
#define TCP_PROOF_BYTES 16
#define TCP_OPENED_BYTES 4
#define TCP_AUTH_TIMEOUT_MS 3000
#define TCP_REDIAL_MS 20

enum conn_state {
    CONN_DIALING,    /* nonblocking connect in progress */
    CONN_HELLO_SENT, /* waiting for the acceptor's verdict */
    CONN_AUTH_WAIT,  /* accepted; waiting for the dialer's HELLO */
    CONN_PROOF_WAIT, /* HELLO answered; waiting for the dialer's PROOF */
    CONN_PROOF_SENT, /* waiting for the acceptor to say it opened its end */
    CONN_OPEN,
    CONN_CLOSED,     /* closed; freed at the end of this progress call */
};

enum rx_phase { RX_HEAD, RX_PAYLOAD, RX_PAUSED };

typedef struct tcp_conn {
    int fd;
    int peer;              /* -1 until the handshake names it */
    uint8_t state;
    uint8_t rx_phase;
    bool broken;           /* an I/O error seen where we could not act on it */
    bool queued;           /* on tp->service or tp->serving */
    bool wr_closed;        /* we sent FIN (finalize) */
    bool drained;          /* the last recv came back short: the socket is
                            * empty, no need to ask it again until polled */
    uint32_t events;       /* epoll interest now registered */
    uint64_t deadline_ms;  /* before OPEN (but not PROOF_SENT): drop it
                            * after this */
    uint64_t nonce;        /* ours, which the other side's MAC must cover */
    uint64_t peer_nonce;   /* PROOF_WAIT: the dialer's */
    size_t peer_eager;     /* PROOF_WAIT, PROOF_SENT: the peer's eager limit */
    uint8_t hs[TCP_HELLO_BYTES];
    size_t hs_have;
    uint8_t *stage;        /* bytes read ahead of the current frame */
    size_t stage_pos, stage_end;
    xdev_rx_t rx;          /* the arrival being placed */
    size_t rx_got;
    /* What is left of an XDEV_TX_NOW send the socket took part of: our
     * copy (XDEV_OP_OWN), queued like a core op. An open connection is
     * freed only with its peer's queue (tcp_conn_lost), so it outlives
     * the copy. */
    xdev_txop_t spill;
    uint8_t spill_payload[TCP_SHORT_MAX];
    struct tcp_conn *next;         /* tp->conns */
    struct tcp_conn *service_next; /* tp->service or tp->serving */
} tcp_conn_t;

typedef struct tcp_peer {
    tcp_conn_t *conn;      /* open connection, or NULL */
    tcp_conn_t *dialing;   /* our connection attempt before it opens */
    xdev_txq_t txq;
    bool wanted;           /* someone waits to talk to it */
    bool dead;
    uint64_t give_up_ms;   /* unreachable until then means dead */
    uint64_t redial_ms;
    struct sockaddr_storage addr;
    socklen_t addrlen;     /* 0 until looked up */
} tcp_peer_t;

struct xdev_tp {
    xdev_t *dev;
    int rank, size;
    size_t eager_limit;
    int peer_timeout_ms;
    int epfd;
    int listen_fd;
    tcp_peer_t *peers;
    tcp_conn_t *conns;
    tcp_conn_t *service;   /* conns to look at in the next progress call */
    tcp_conn_t *serving;   /* those run_service is looking at now */
    tcp_conn_t *closed;    /* closed conns whose memory may still be named
                            * by events of the epoll batch being handled */
    unsigned nwanting;     /* peers wanted but not connected */
    unsigned nauth;        /* accepted conns in AUTH_WAIT or PROOF_WAIT */
    unsigned nopen;        /* connections in CONN_OPEN */
    unsigned polls;
    uint64_t next_timer_ms;
    bool shutting_down;
    /* Addresses come from the bootstrap, published only once the peer
     * listens: a refused connection then means the peer is gone. (With an
     * explicit table the peer may simply not have started yet.) */
    bool refused_means_dead;
};

/* tcp.c */
void tcp_set_events(xdev_tp_t *tp, tcp_conn_t *c, uint32_t events);
void tcp_service_later(xdev_tp_t *tp, tcp_conn_t *c);

/* tcp_conn.c */
void tcp_want_peer(xdev_tp_t *tp, int peer);
void tcp_accept_all(xdev_tp_t *tp);
void tcp_conn_event(xdev_tp_t *tp, tcp_conn_t *c, uint32_t events);
void tcp_conn_lost(xdev_tp_t *tp, tcp_conn_t *c);
void tcp_conn_free(xdev_tp_t *tp, tcp_conn_t *c);
void tcp_reap_closed(xdev_tp_t *tp);
void tcp_timers(xdev_tp_t *tp, uint64_t now);
int tcp_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len);

/* tcp_io.c */
void tcp_read(xdev_tp_t *tp, tcp_conn_t *c);
void tcp_flush(xdev_tp_t *tp, int peer);
int tcp_send(xdev_tp_t *tp, int peer, xdev_txop_t *op, int how);
void tcp_resume(xdev_tp_t *tp, void *token, const xdev_rx_t *to);
void tcp_fail_queue(xdev_tp_t *tp, int peer);

#endif
