/*
 * gen_corpus_ofi.c - the ofi frame reader's seeds (fuzz_ofi_frame.c):
 * messages made by xdev_wire_encode, framed as ofi_tx.c frames them.
 */
#include <stdio.h>
#include <string.h>
#include "gen_corpus.h"
#include "ofi.h"

/* Frames from rank 1 as fuzz_ofi_frame.c reads them, each after its
 * 16-bit length: the frame header (ofi.h), a FIRST frame's message
 * length, then the frame's bytes of the message. */
static uint8_t ofi_in[8192];
static size_t ofi_len;

static void ofi_frame(uint8_t kind, uint8_t seq, const uint8_t *body, size_t n, uint64_t total)
{
    size_t hdr = kind == K_FIRST ? OFI_FIRST_HDR : OFI_HDR;
    uint8_t *f = ofi_in + ofi_len;
    f[0] = (uint8_t)(hdr + n);
    f[1] = (uint8_t)((hdr + n) >> 8);
    f += 2;
    memset(f, 0, hdr);
    f[0] = kind;
    f[1] = seq;
    xdev_put_le32(f + 4, 1);
    if (kind == K_FIRST)
        xdev_put_le64(f + OFI_HDR, total);
    if (n) /* a control frame has no body, and memcpy no null pointer */
        memcpy(f + hdr, body, n);
    ofi_len += 2 + hdr + n;
}

static void ofi_put(const char *name)
{
    put("ofi_frame", name, ofi_in, ofi_len);
    ofi_len = 0;
}

void ofi_seeds(void)
{
    uint8_t m[XDEV_HEAD_MAX + GEN_PAYLOAD_MAX];
    for (int i = 0; i < nmsgs; i++) {
        char name[32];
        snprintf(name, sizeof name, "msg-%d", i);
        ofi_frame(K_WHOLE, 0, m, head_and_payload(m, &msgs[i]), 0);
        ofi_put(name);
    }
    for (int i = 0; i < nmsgs; i++)
        ofi_frame(K_WHOLE, (uint8_t)i, m, head_and_payload(m, &msgs[i]), 0);
    ofi_put("all");
    /* msgs[2] in three frames; its MORE frames complete out of order */
    size_t head = head_and_payload(m, &msgs[2]) - msgs[2].len;
    ofi_frame(K_FIRST, 0, m, head + 100, msgs[2].len);
    ofi_frame(K_MORE, 2, m + head + 200, 100, 0);
    ofi_frame(K_MORE, 1, m + head + 100, 100, 0);
    ofi_put("fragments");
    ofi_frame(K_PING, 0, NULL, 0, 0);
    ofi_frame(K_CREDIT, 1, NULL, 0, 0);
    ofi_frame(K_WHOLE, 2, m, head_and_payload(m, &msgs[0]), 0);
    ofi_frame(K_BYE, 3, NULL, 0, 0);
    ofi_put("control");
    /* frame 1 lost, as udp;ofi_rxd can: frame 2 waits for it until the
     * peer timeout fails the sender */
    ofi_frame(K_WHOLE, 0, m, head_and_payload(m, &msgs[0]), 0);
    ofi_frame(K_WHOLE, 2, m, head_and_payload(m, &msgs[1]), 0);
    ofi_put("gap");
    /* frame 2 lost: frame 3 waits for it from when frame 1 moved the
     * sequence on */
    ofi_frame(K_WHOLE, 0, m, head_and_payload(m, &msgs[0]), 0);
    ofi_frame(K_WHOLE, 3, m, head_and_payload(m, &msgs[1]), 0);
    ofi_frame(K_WHOLE, 1, m, head_and_payload(m, &msgs[2]), 0);
    ofi_put("gap-moved");
    /* more unexpected payload than the core buffers: it defers the third,
     * until the target's late receive takes the first */
    msg_t big = msgs[3];
    big.len = GEN_PAYLOAD_MAX;
    for (uint8_t seq = 0; seq < 4; seq++)
        ofi_frame(K_WHOLE, seq, m, head_and_payload(m, &big), 0);
    ofi_frame(K_WHOLE, 4, m, head_and_payload(m, &msgs[0]), 0);
    ofi_put("deferred");
}
