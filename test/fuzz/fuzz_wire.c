/*
 * fuzz_wire.c - the wire format's decoder (xdev_wire_decode_hdr,
 * xdev_wire_head_len, xdev_wire_decode_fields) on any bytes, against its
 * encoder (xdev_wire_encode).
 *
 * Every transport trusts these to read exactly the head that the type
 * names and nothing more (DESIGN.md section 3): so a type outside the
 * known ones must have no length, the fields of a known one must come from
 * inside its head (the input is copied to a buffer of exactly its size, so
 * ASan sees a read past it), fields the type does not carry must read 0,
 * and a decoded head must encode back to the very bytes it came from; an
 * encoder that disagreed with the decoder would make peers of one version
 * misread each other.
 */
#include <stdint.h>
#include <string.h>
#include "fuzz_check.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < XDEV_HDR_BYTES)
        return 0;
    xdev_hdr_t hdr;
    xdev_wire_decode_hdr(data, &hdr);
    size_t head_len = xdev_wire_head_len(hdr.type);
    int n = xdev_wire_nfields(hdr.type);
    if (hdr.type < 1 || hdr.type > XDEV_MSG_TYPE_MAX) {
        FUZZ_CHECK(head_len == 0 && n < 0);
        return 0;
    }
    FUZZ_CHECK(n >= 0 && n <= XDEV_MAX_FIELDS);
    FUZZ_CHECK(head_len == XDEV_HDR_BYTES + 8 * (size_t)n && head_len <= XDEV_HEAD_MAX);
    if (size < head_len)
        return 0;

    uint8_t *exact = malloc(head_len);
    FUZZ_CHECK(exact);
    memcpy(exact, data, head_len);
    xdev_head_t h;
    memset(h.f, 0xa5, sizeof h.f);
    xdev_wire_decode_hdr(exact, &h.hdr);
    xdev_wire_decode_fields(exact + XDEV_HDR_BYTES, &h.hdr, h.f);
    FUZZ_CHECK(memcmp(&h.hdr, &hdr, sizeof hdr) == 0);
    for (int i = n; i < XDEV_MAX_FIELDS; i++)
        FUZZ_CHECK(h.f[i] == 0);

    uint8_t out[XDEV_HEAD_MAX + 1];
    memset(out, 0xee, sizeof out);
    FUZZ_CHECK(xdev_wire_encode(&h, out) == head_len);
    FUZZ_CHECK(memcmp(out, exact, head_len) == 0);
    for (size_t i = head_len; i < sizeof out; i++)
        FUZZ_CHECK(out[i] == 0xee); /* nothing written past the head */
    free(exact);
    return 0;
}
