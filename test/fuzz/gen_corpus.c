/*
 * gen_corpus.c - the fuzz targets' seeds, made by the project's own
 * encoders (xdev_wire_encode, shm_ring_push, shm_seg_create), so that every seed is
 * something a correct peer sends and the fuzzers start from inside the
 * formats rather than from noise. Run by hand when a format changes:
 *   build-fuzz/test/fuzz/fuzz_gen_corpus test/fuzz/corpus
 * The handshake seeds leave their MACs zero: their mode byte asks the
 * target to sign them (fuzz_tcp_handshake.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "gen_corpus.h"
#include "device.h"
#include "shm.h"

static const char *root;

void put(const char *target, const char *name, const void *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", root, target);
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        exit(1);
    snprintf(path, sizeof path, "%s/%s/%s", root, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
        exit(1);
}

/* A head from rank 1 to rank 0 (the targets' peer and self). */
#define HEAD(ty, tg, f0, f1, f2)                                                  \
    { .hdr = { .src = 1, .dst = 0, .tag = (tg), .ctx = 0, .type = (ty) },        \
      .f = { (f0), (f1), (f2) } }

const msg_t msgs[] = {
    { HEAD(XDEV_MSG_EAGER, 1, 0, 0, 0), 5 },          /* fits the 7-byte receive */
    { HEAD(XDEV_MSG_EAGER, 2, 0, 0, 0), 100 },        /* truncated into 64 */
    { HEAD(XDEV_MSG_EAGER_SYNC, 3, 77, 0, 0), 300 },  /* acknowledged */
    { HEAD(XDEV_MSG_EAGER, 9, 0, 0, 0), 40 },         /* unexpected */
    { HEAD(XDEV_MSG_RNDZ_START, 0, 78, 5000, XDEV_RNDZ_SEND), 0 },
    { HEAD(XDEV_MSG_SYNC_ACK, 0, 1, 0, 0), 0 },
    { HEAD(XDEV_MSG_RNDZ_DATA, 0, 1, 0, 0), 16 },
};
enum { NMSGS = sizeof msgs / sizeof msgs[0] };
const int nmsgs = NMSGS;
static uint8_t payload[GEN_PAYLOAD_MAX];

static void wire_seeds(void)
{
    for (uint32_t t = 1; t <= XDEV_MSG_TYPE_MAX; t++) {
        xdev_head_t h = HEAD(t, 5, 0x1122334455667788ull, 4096, 2);
        h.f[3] = h.f[4] = h.f[5] = 0xabcdef;
        uint8_t out[XDEV_HEAD_MAX];
        char name[32];
        snprintf(name, sizeof name, "type-%u", t);
        put("wire", name, out, xdev_wire_encode(&h, out));
    }
}

size_t head_and_payload(uint8_t *out, const msg_t *m)
{
    size_t n = xdev_wire_encode(&m->h, out);
    memcpy(out + n, payload, m->len);
    return n + m->len;
}

/* tcp: an 8-byte length, the head, the payload (tcp.h). */
static size_t tcp_frame(uint8_t *out, const msg_t *m)
{
    size_t n = head_and_payload(out + 8, m);
    xdev_put_le64(out, n);
    return 8 + n;
}

static void tcp_frame_seeds(void)
{
    static uint8_t all[8192];
    size_t total = 0;
    for (int i = 0; i < NMSGS; i++) {
        uint8_t one[8 + XDEV_HEAD_MAX + sizeof payload];
        size_t n = tcp_frame(one, &msgs[i]);
        char name[32];
        snprintf(name, sizeof name, "msg-%d", i);
        put("tcp_frame", name, one, n);
        memcpy(all + total, one, n);
        total += n;
    }
    put("tcp_frame", "all", all, total);
}

static void handshake_seeds(void)
{
    uint8_t h[1 + 40 + 16] = { 2 | 4 }, r[1 + 32 + 4 + 8] = { 3 };
    xdev_put_le32(h + 1, 0x33564458u); /* HELLO "XDV3" from rank 0 to rank 1 */
    xdev_put_le32(h + 5, 0);
    xdev_put_le32(h + 9, 1);
    xdev_put_le64(h + 17, 65536);
    xdev_put_le64(h + 25, 0x1111);
    xdev_put_le32(h + 41, 0x50564458u); /* PROOF "XDVP" from rank 0 */
    xdev_put_le32(h + 45, 0);
    put("tcp_handshake", "accept-signed", h, sizeof h);
    h[0] = 2 | 4 | 8; /* the acceptor dials rank 0 too: rank 0's dial wins */
    put("tcp_handshake", "accept-both-dialing", h, sizeof h);
    h[0] = 2 | 4 | 8 | 16; /* ... unless the acceptor's has sent its PROOF */
    put("tcp_handshake", "accept-both-dialing-proven", h, sizeof h);
    h[0] = 2 | 4 | 32; /* rank 0 is dead to the acceptor: told "gone" */
    put("tcp_handshake", "accept-gone", h, sizeof h);
    h[0] = 0;
    put("tcp_handshake", "accept-unsigned", h, sizeof h);
    xdev_put_le32(r + 1, 0x42564458u); /* REPLY "XDVB", accepting */
    xdev_put_le32(r + 5, 1);
    xdev_put_le64(r + 9, 65536);
    xdev_put_le64(r + 17, 0x2222);
    xdev_put_le32(r + 33, 0x4f564458u); /* OPENED "XDVO", then a frame's length */
    xdev_put_le64(r + 37, 20);
    put("tcp_handshake", "dial-signed", r, sizeof r);
    xdev_put_le32(r + 5, 0);
    put("tcp_handshake", "dial-refused", r, sizeof r);
    xdev_put_le32(r + 5, 2); /* we are dead to the acceptor */
    put("tcp_handshake", "dial-gone", r, sizeof r);
}

/* shm: a 4 KiB ring as the producer leaves it after pushing msgs[from..to)
 * from the line `line` on, to an empty ring (its reader is at that line);
 * as fuzz_shm_ring.c reads it: the line, then the bytes from there on. */
static void shm_image(const char *name, int from, int to, size_t frag_max, unsigned line)
{
    enum { RING = 4096 };
    static uint8_t data[RING], out[1 + RING];
    static shm_ring_ctl_t ctl;
    memset(data, 0, sizeof data);
    uint64_t start = (uint64_t)line * SHM_LINE;
    shm_txring_t r = { .data = data, .ctl = &ctl, .size = RING, .mask = RING - 1, .tail = start,
                       .head_seen = start, .zeroed = start + RING };
    atomic_store(&ctl.head, start);
    shm_ring_set_frags(&r);
    if (frag_max)
        r.frag_max = frag_max; /* as a smaller ring would have it: fragments */
    for (int i = from; i < to; i++) {
        xdev_txop_t op = { .payload = payload, .payload_len = msgs[i].len };
        op.head_len = (uint32_t)xdev_wire_encode(&msgs[i].h, xdev_txop_head(&op));
        if (!shm_ring_push(&r, &op))
            exit(1);
    }
    size_t n = (size_t)(r.tail - start);
    out[0] = (uint8_t)line;
    for (size_t i = 0; i < n; i++)
        out[1 + i] = data[(start + i) % RING];
    put("shm_ring", name, out, 1 + n);
}

static void shm_seeds(void)
{
    for (int i = 0; i < NMSGS; i++) {
        char name[32];
        snprintf(name, sizeof name, "msg-%d", i);
        shm_image(name, i, i + 1, 0, 0);
    }
    shm_image("all", 0, NMSGS, 0, 0);
    shm_image("fragments", 2, 3, 64, 0);
    shm_image("all-wrapping", 0, NMSGS, 0, 60); /* filler at the end, then the front */
    shm_image("fragments-wrapping", 2, 3, 64, 62);
}


/* shm: a segment as its owner, rank 1, makes it for nrings senders, read
 * back from /dev/shm and removed; as fuzz_shm_seg.c reads it: its size,
 * then its bytes up to the last that is not 0. What differs from run to
 * run (its pid, where it was mapped) is cleared so that the seeds do not. */
static void shm_seg_seed(const char *name, int nrings)
{
    enum { PAGE = 4096 };
    static xdev_t dev; /* its zero key names the segment */
    xdev_tp_t tp = { .dev = &dev, .rank = 1, .npeers = nrings, .bell_fd = -1 };
    shm_peer_t peers[4] = { { .rank = 0 }, { .rank = 2 }, { .rank = 3 }, { .rank = 4 } };
    tp.peers = peers;
    char job[32];
    snprintf(job, sizeof job, "gen%d", (int)getpid());
    xdev_tp_params_t params = { .rank = 1, .eager_limit = 65536, .job_id = job };
    if (xdev_job_name(&dev, job, 1, "", tp.own_name, sizeof tp.own_name) != XDEV_OK ||
        shm_seg_create(&tp, &params, PAGE) != XDEV_OK)
        exit(1);
    shm_unlink(tp.own_name);
    if (tp.bell_fd >= 0) {
        close(tp.bell_fd);
        unlink(tp.bell_path);
    }
    tp.own.hdr->owner_pid = 0;
    tp.own.hdr->self_addr = 0;
    static uint8_t out[4 + PAGE];
    const uint8_t *seg = (const uint8_t *)tp.own.hdr;
    size_t n = tp.own.bytes;
    while (n && !seg[n - 1])
        n--;
    if (n > PAGE)
        exit(1);
    xdev_put_le32(out, (uint32_t)tp.own.bytes);
    memcpy(out + 4, seg, n);
    put("shm_seg", name, out, 4 + n);
    munmap(tp.own.hdr, tp.own.bytes);
}

static void text_seeds(void)
{
    static const char *const addrs[][2] = {
        { "ipv4", "127.0.0.1:40000" }, { "ipv6", "[::1]:40001" }, { "ipv6-bare", "fe80::1:80" },
        { "port-too-big", "10.0.0.1:70000" }, { "name", "localhost:1" },
    };
    for (size_t i = 0; i < sizeof addrs / sizeof addrs[0]; i++)
        put("boot", addrs[i][0], addrs[i][1], strlen(addrs[i][1]));
    static const char *const envs[][2] = {
        { "defaults", "0\n1\n64k\n64m\n20000\n5000\nmulti\nauto" },
        { "job", "3\n4\n1g\n0\n1\n0\nsingle\nshm\n0123456789abcdef0123\n0\n1" },
        { "progress", "0\n2\n12345\n7M\n-1\n-1\nmulti\ntcp\nsecret-of-sixteen+\n1\n0" },
        { "bad", "x\n-5\n1t\n" },
    };
    for (size_t i = 0; i < sizeof envs / sizeof envs[0]; i++)
        put("config", envs[i][0], envs[i][1], strlen(envs[i][1]));
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    root = argv[1];
    memset(payload, 0x5a, sizeof payload);
    wire_seeds();
    tcp_frame_seeds();
    handshake_seeds();
    shm_seeds();
    shm_seg_seed("one-ring", 1);
    shm_seg_seed("four-rings", 4);
#ifdef XDEV_HAVE_OFI
    ofi_seeds();
#endif
#ifdef XDEV_HAVE_IBV
    ibv_seeds();
#endif
    text_seeds();
    return 0;
}
