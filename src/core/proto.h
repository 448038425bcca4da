/*
 * proto.h - what the files of the protocol core share with each other:
 * proto.c, unexpected.c, rndz.c, control.c, claims.c and peer_failed.c.
 * The rest of the library reaches them through device.h's proto_* calls.
 */
#ifndef XDEV_PROTO_H
#define XDEV_PROTO_H

#include "device.h"

/* Which of the four match keys (src, tag) is under: bit 0 any source,
 * bit 1 any tag. */
static inline int wild_kind(int src, int tag)
{
    return (src == XDEV_ANY_SOURCE ? 1 : 0) | (tag == XDEV_ANY_TAG ? 2 : 0);
}

/* proto.c: heads and ops, receive buffers, posted receives, sending */
void head_init(xdev_head_t *h, const xdev_t *d, int dst, int tag, int ctx, uint32_t type);
void op_build(xdev_txop_t *op, const xdev_head_t *h, const void *payload, size_t len);
void op_build_req(xdev_txop_t *op, const xdev_head_t *h, const xreq_t *s, size_t len);
void rx_into(xdev_rx_t *rx, xreq_t *r, size_t n);
void posted_drop(xdev_t *d, xreq_t *r);
size_t recv_accept(xreq_t *r, int src, int tag, size_t len);
void send_op(xdev_t *d, xreq_t *r, int peer);
void take_unexpected(xdev_t *d, uxmsg_t *e, xreq_t *r);

/* unexpected.c */
uxmsg_t *ux_new(xdev_t *d, int src, int tag, int ctx, uint32_t type, size_t len,
                uint64_t remote);
bool ux_buffer(xdev_t *d, uxmsg_t *e, size_t payload, bool over);
void ux_data_put(xdev_t *d, uxmsg_t *e);
int ux_enqueue(xdev_t *d, uxmsg_t *e);
void ux_dequeue(xdev_t *d, uxmsg_t *e);
void ux_discard(xdev_t *d, uxmsg_t *e);
void ux_free(xdev_t *d, uxmsg_t *e);
void ux_lose(xdev_t *d, uxmsg_t *e);
uxmsg_t *ux_find(xdev_t *d, int src, int tag, int ctx);
void ux_retry_deferred(xdev_t *d);
bool stream_awaited(const xdev_t *d, int peer);
void stream_restart(xdev_t *d, int peer);

/* control.c */
int send_ctl(xdev_t *d, int peer, const xdev_head_t *h, xreq_t *r);
void send_control(xdev_t *d, xreq_t *r, int peer, uint32_t type, uint64_t sreq);
void ctl_put(xdev_t *d, xdev_txop_t *op);

/* rndz.c: the offer, its acceptance, and the arrivals that answer them */
int rndz_start(xdev_t *d, xreq_t *s);
void rndz_accept(xdev_t *d, xreq_t *r, uint64_t sreq, int mode, uint64_t addr,
                 uint64_t key);
int rx_rndz_reply(xdev_t *d, int peer, const xdev_rx_t *rx);
int rx_rndz_data(xdev_t *d, int peer, xdev_rx_t *rx);
int rx_rndz_written(xdev_t *d, int peer, const xdev_rx_t *rx);
int rx_rndz_end(xdev_t *d, int peer, const xdev_rx_t *rx);

/* claims.c */
void fetch_offer(xdev_t *d, uxmsg_t *e);

#endif
