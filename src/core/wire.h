/*
 * wire.h - the xdev wire format, written down in one place.
 *
 * Every message starts with a 20-byte header of five little-endian 32-bit
 * integers (src, dst, tag, ctx, type). Type-specific 64-bit fields follow
 * the header, then the payload. Transports that are byte streams add their
 * own length prefix in front of the header; it is not part of this format.
 */
#ifndef XDEV_WIRE_H
#define XDEV_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "../kit/le.h"

#define XDEV_HDR_BYTES 20
#define XDEV_MAX_FIELDS 6
#define XDEV_HEAD_MAX (XDEV_HDR_BYTES + 8 * XDEV_MAX_FIELDS)

/* Message types. The fields each carries are listed in xdev_wire_nfields. */
enum xdev_msg_type {
    XDEV_MSG_EAGER = 1,      /* payload = the message */
    XDEV_MSG_EAGER_SYNC = 2, /* f0 = sender's request id; payload = the message */
    XDEV_MSG_SYNC_ACK = 3,   /* f0 = sender's request id: matched */
    XDEV_MSG_RNDZ_START = 4, /* f0 = sender's request id, f1 = message length,
                              * f2 = rendezvous mode (XDEV_RNDZ_*), f3/f4 =
                              * address and key of the sender's exposed
                              * buffer (mode READ), else 0 */
    XDEV_MSG_RNDZ_REPLY = 5, /* f0 = sender's request id, f1 = receiver's request
                              * id, f2 = bytes the receiver accepts, f3 = mode
                              * (WRITE: f4/f5 = address and key of the
                              * receiver's exposed buffer; SEND: stream it) */
    XDEV_MSG_RNDZ_DATA = 6,  /* f0 = receiver's request id; payload = the data */
    XDEV_MSG_RNDZ_END = 7,   /* f0 = sender's request id: the receiver has
                              * read the data itself (mode READ) */
    XDEV_MSG_RNDZ_WRITTEN = 8, /* f0 = receiver's request id: the sender's
                                * write into its buffer is complete (WRITE) */
    XDEV_MSG_TYPE_MAX = 8,
};

typedef struct xdev_hdr {
    uint32_t src;
    uint32_t dst;
    int32_t tag;
    int32_t ctx;
    uint32_t type;
} xdev_hdr_t;

_Static_assert(sizeof(xdev_hdr_t) == XDEV_HDR_BYTES, "the header is 20 bytes on the wire");

/* A decoded header with its type-specific fields. */
typedef struct xdev_head {
    xdev_hdr_t hdr;
    uint64_t f[XDEV_MAX_FIELDS];
} xdev_head_t;

/* Number of 64-bit fields after the header for `type`, or -1 for a type
 * that does not exist. */
int xdev_wire_nfields(uint32_t type);

/* Bytes that header and fields of `type` take on the wire, or 0 for an
 * unknown type. */
size_t xdev_wire_head_len(uint32_t type);

/* Encode h (whose type must be valid) into out; returns the bytes written. */
size_t xdev_wire_encode(const xdev_head_t *h, uint8_t out[XDEV_HEAD_MAX]);

/* Decode the 20-byte header at in. No validation beyond layout. */
void xdev_wire_decode_hdr(const uint8_t in[XDEV_HDR_BYTES], xdev_hdr_t *hdr);

/* Decode the fields that follow the header of type hdr->type. */
void xdev_wire_decode_fields(const uint8_t *in, const xdev_hdr_t *hdr,
                             uint64_t f[XDEV_MAX_FIELDS]);

/* The head (header and fields) at in, of which `have` bytes are in
 * memory, decoded into h: every transport's first step with an arriving
 * message. Returns the head's length; 0 when more bytes are needed to
 * know (a stream reader waits for them; a transport whose records hold a
 * whole head treats it as a broken record); -1 when the bytes cannot be
 * a head (an unknown type). */
long xdev_wire_decode_head(const uint8_t *in, size_t have, xdev_head_t *h);

#endif
