/* wire.c - encoding and decoding of the header described in wire.h. */
#include <string.h>
#include "wire.h"
#include "../kit/hot.h"

int xdev_wire_nfields(uint32_t type)
{
    switch (type) {
    case XDEV_MSG_EAGER: return 0;
    case XDEV_MSG_EAGER_SYNC: return 1;
    case XDEV_MSG_SYNC_ACK: return 1;
    case XDEV_MSG_RNDZ_START: return 5;
    case XDEV_MSG_RNDZ_REPLY: return 6;
    case XDEV_MSG_RNDZ_DATA: return 1;
    case XDEV_MSG_RNDZ_END: return 1;
    case XDEV_MSG_RNDZ_WRITTEN: return 1;
    default: return -1;
    }
}

size_t xdev_wire_head_len(uint32_t type)
{
    int n = xdev_wire_nfields(type);
    return n < 0 ? 0 : XDEV_HDR_BYTES + 8 * (size_t)n;
}

XDEV_HOT size_t xdev_wire_encode(const xdev_head_t *h, uint8_t out[XDEV_HEAD_MAX])
{
    xdev_put_le32(out + 0, h->hdr.src);
    xdev_put_le32(out + 4, h->hdr.dst);
    xdev_put_le32(out + 8, (uint32_t)h->hdr.tag);
    xdev_put_le32(out + 12, (uint32_t)h->hdr.ctx);
    xdev_put_le32(out + 16, h->hdr.type);
    int n = xdev_wire_nfields(h->hdr.type);
    for (int i = 0; i < n && i < XDEV_MAX_FIELDS; i++) /* (n never exceeds it; says so to gcc) */
        xdev_put_le64(out + XDEV_HDR_BYTES + 8 * i, h->f[i]);
    return XDEV_HDR_BYTES + 8 * (size_t)(n < 0 ? 0 : n);
}

void xdev_wire_decode_hdr(const uint8_t in[XDEV_HDR_BYTES], xdev_hdr_t *hdr)
{
    hdr->src = xdev_get_le32(in + 0);
    hdr->dst = xdev_get_le32(in + 4);
    hdr->tag = (int32_t)xdev_get_le32(in + 8);
    hdr->ctx = (int32_t)xdev_get_le32(in + 12);
    hdr->type = xdev_get_le32(in + 16);
}

void xdev_wire_decode_fields(const uint8_t *in, const xdev_hdr_t *hdr,
                             uint64_t f[XDEV_MAX_FIELDS])
{
    int n = xdev_wire_nfields(hdr->type);
    memset(f, 0, XDEV_MAX_FIELDS * sizeof *f); /* a few stores; most messages have no fields */
    for (int i = 0; i < n; i++)
        f[i] = xdev_get_le64(in + 8 * i);
}

XDEV_HOT long xdev_wire_decode_head(const uint8_t *in, size_t have, xdev_head_t *h)
{
    if (have < XDEV_HDR_BYTES)
        return 0;
    xdev_wire_decode_hdr(in, &h->hdr);
    size_t len = xdev_wire_head_len(h->hdr.type);
    if (!len)
        return -1;
    if (have < len)
        return 0;
    xdev_wire_decode_fields(in + XDEV_HDR_BYTES, &h->hdr, h->f);
    return (long)len;
}
