/*
 * gen_corpus_ibv.c - the ibv receive path's seeds (fuzz_ibv_frame.c):
 * messages made by xdev_wire_encode, cut into buffers as ibv_tx.c cuts
 * them, each buffer a receive completion as fuzz_ibv.h spells one.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include "fuzz_ibv.h"
#include "gen_corpus.h"
#include "ibv.h"

static uint8_t ibv_in[16384];
static size_t ibv_len;

static void ibv_completion(uint8_t flags, uint32_t imm, const uint8_t *bytes, size_t n)
{
    uint8_t *r = ibv_in + ibv_len;
    uint32_t wire = htonl(imm);
    r[0] = flags;
    memcpy(r + 1, &wire, 4);
    r[5] = (uint8_t)n;
    r[6] = (uint8_t)(n >> 8);
    if (n) /* a credit-only message has no bytes, and memcpy no null pointer */
        memcpy(r + FUZZ_IBV_HDR, bytes, n);
    ibv_len += FUZZ_IBV_HDR + n;
}

/* A message from rank 1 as ibv_tx.c sends it: the 8-byte length of head
 * and payload, the head, the payload, a buffer's worth per send, every
 * send with immediate data; the first returns `credits`. */
static void ibv_message(const msg_t *m, uint32_t credits)
{
    uint8_t b[IBV_PREFIX + XDEV_HEAD_MAX + GEN_PAYLOAD_MAX];
    size_t n = head_and_payload(b + IBV_PREFIX, m);
    xdev_put_le64(b, n);
    n += IBV_PREFIX;
    for (size_t off = 0; off < n; off += FUZZ_IBV_BUF) {
        size_t k = n - off < FUZZ_IBV_BUF ? n - off : FUZZ_IBV_BUF;
        ibv_completion(FUZZ_IBV_IMM, off ? 0 : credits, b + off, k);
    }
}

static void ibv_put(const char *name)
{
    put("ibv_frame", name, ibv_in, ibv_len);
    ibv_len = 0;
}

void ibv_seeds(void)
{
    for (int i = 0; i < nmsgs; i++) {
        char name[32];
        snprintf(name, sizeof name, "msg-%d", i);
        ibv_message(&msgs[i], 0);
        ibv_put(name);
    }
    for (int i = 0; i < nmsgs; i++)
        ibv_message(&msgs[i], 0);
    ibv_put("all");
    /* msgs[2] grown past a buffer: two sends */
    msg_t big = msgs[2];
    big.len = GEN_PAYLOAD_MAX;
    ibv_message(&big, 0);
    ibv_put("fragments");
    /* our acknowledgement of msgs[2] took a credit; the peer returns it,
     * alone and then with its next message */
    ibv_message(&msgs[2], 0);
    ibv_completion(FUZZ_IBV_IMM, IMM_CREDIT_ONLY | 1, NULL, 0);
    ibv_message(&msgs[0], 1);
    ibv_put("credits");
    /* more unexpected payload than the core buffers: it defers the third,
     * and the peer's buffers are held until the target's late receive
     * takes the first */
    big = msgs[3];
    big.len = GEN_PAYLOAD_MAX;
    for (int i = 0; i < 4; i++)
        ibv_message(&big, 0);
    ibv_message(&msgs[0], 0);
    ibv_put("deferred");
    /* a stranger's send, then the peer's connection breaks mid-stream */
    ibv_completion(FUZZ_IBV_IMM | FUZZ_IBV_OTHER_QP, 0, NULL, 0);
    ibv_message(&msgs[0], 0);
    ibv_completion(FUZZ_IBV_ERROR, 0, NULL, 0);
    ibv_message(&msgs[1], 0);
    ibv_put("broken");
    /* an offer to read, which the 300-byte receive matches, then the
     * connection breaks while the read is out: the receive may end only
     * once the read's completion gives its buffer back */
    msg_t offer = { .h = { .hdr = { .src = 1, .dst = 0, .tag = 3, .type = XDEV_MSG_RNDZ_START },
                           .f = { 79, 5000, XDEV_RNDZ_READ, 0x10000, 0x77 } } };
    ibv_message(&offer, 0);
    ibv_completion(FUZZ_IBV_ERROR, 0, NULL, 0);
    ibv_put("read-then-broken");
}
