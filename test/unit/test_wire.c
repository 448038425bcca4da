/*
 * test_wire.c - the header is exactly 20 bytes and each field sits where
 * DESIGN.md section 3 puts it, little-endian, whatever the host order.
 */
#include <stdio.h>
#include <string.h>
#include "wire.h"
#include "unit_check.h"


static void test_layout(void)
{
    xdev_head_t h = { .hdr = { .src = 0x01020304, .dst = 0x05060708, .tag = 0x090a0b0c,
                               .ctx = 0x0d0e0f10, .type = XDEV_MSG_EAGER } };
    uint8_t out[XDEV_HEAD_MAX];
    memset(out, 0xee, sizeof out);
    CHECK(xdev_wire_encode(&h, out) == 20);
    const uint8_t want[20] = { 0x04, 0x03, 0x02, 0x01, 0x08, 0x07, 0x06, 0x05, 0x0c, 0x0b,
                               0x0a, 0x09, 0x10, 0x0f, 0x0e, 0x0d, 0x01, 0x00, 0x00, 0x00 };
    CHECK(memcmp(out, want, 20) == 0);
    CHECK(out[20] == 0xee); /* EAGER carries no fields: nothing written past 20 */
}

static void test_fields(void)
{
    xdev_head_t h = { .hdr = { .src = 1, .dst = 2, .tag = 3, .ctx = 4,
                               .type = XDEV_MSG_RNDZ_REPLY },
                      .f = { 0x1122334455667788ull, 42, 1ull << 40, 2, 0xabcdull << 32, 7 } };
    uint8_t out[XDEV_HEAD_MAX];
    CHECK(xdev_wire_encode(&h, out) == 20 + 48);
    CHECK(out[16] == XDEV_MSG_RNDZ_REPLY);
    CHECK(out[20] == 0x88 && out[27] == 0x11); /* f0 little-endian after the header */
    CHECK(out[28] == 42);
    CHECK(out[36 + 5] == 1);
    CHECK(out[44] == 2 && out[52 + 4] == 0xcd && out[52 + 5] == 0xab && out[60] == 7);

    xdev_hdr_t back;
    uint64_t f[XDEV_MAX_FIELDS];
    xdev_wire_decode_hdr(out, &back);
    xdev_wire_decode_fields(out + 20, &back, f);
    CHECK(memcmp(&back, &h.hdr, sizeof back) == 0);
    CHECK(memcmp(f, h.f, sizeof f) == 0);
}

static void test_negative_tag_roundtrip(void)
{
    xdev_head_t h = { .hdr = { .tag = -5, .ctx = -1, .type = XDEV_MSG_EAGER } };
    uint8_t out[XDEV_HEAD_MAX];
    xdev_wire_encode(&h, out);
    xdev_hdr_t back;
    xdev_wire_decode_hdr(out, &back);
    CHECK(back.tag == -5 && back.ctx == -1); /* decoded as is; the core rejects them */
}

static void test_types(void)
{
    CHECK(sizeof(xdev_hdr_t) == 20);
    CHECK(xdev_wire_head_len(XDEV_MSG_EAGER) == 20);
    CHECK(xdev_wire_head_len(XDEV_MSG_EAGER_SYNC) == 28);
    CHECK(xdev_wire_head_len(XDEV_MSG_SYNC_ACK) == 28);
    CHECK(xdev_wire_head_len(XDEV_MSG_RNDZ_START) == 60);
    CHECK(xdev_wire_head_len(XDEV_MSG_RNDZ_REPLY) == 68);
    CHECK(xdev_wire_head_len(XDEV_MSG_RNDZ_DATA) == 28);
    CHECK(xdev_wire_head_len(XDEV_MSG_RNDZ_END) == 28);
    CHECK(xdev_wire_head_len(XDEV_MSG_RNDZ_WRITTEN) == 28);
    CHECK(xdev_wire_head_len(0) == 0);
    CHECK(xdev_wire_head_len(XDEV_MSG_TYPE_MAX + 1) == 0);
    CHECK(xdev_wire_head_len(0xffffffffu) == 0);
}

/* A transport's first step: the whole head, or "more bytes", or "broken". */
static void test_decode_head(void)
{
    xdev_head_t h = { .hdr = { .src = 1, .dst = 2, .tag = 3, .ctx = 4,
                               .type = XDEV_MSG_RNDZ_START },
                      .f = { 9, 8, 7, 6, 5 } };
    uint8_t out[XDEV_HEAD_MAX];
    size_t len = xdev_wire_encode(&h, out);
    xdev_head_t back;
    CHECK(xdev_wire_decode_head(out, len, &back) == (long)len);
    CHECK(memcmp(&back.hdr, &h.hdr, sizeof back.hdr) == 0 && back.f[0] == 9 && back.f[4] == 5);
    CHECK(xdev_wire_decode_head(out, len + 100, &back) == (long)len); /* payload after it */
    CHECK(xdev_wire_decode_head(out, len - 1, &back) == 0);           /* a field cut short */
    CHECK(xdev_wire_decode_head(out, XDEV_HDR_BYTES - 1, &back) == 0);
    CHECK(xdev_wire_decode_head(out, 0, &back) == 0);
    out[16] = 0xee; /* a type that does not exist: known from the header alone */
    CHECK(xdev_wire_decode_head(out, XDEV_HDR_BYTES, &back) == -1);
}

int main(void)
{
    test_layout();
    test_fields();
    test_negative_tag_roundtrip();
    test_types();
    test_decode_head();
    if (failures)
        return 1;
    printf("wire: all checks passed\n");
    return 0;
}
