/*
 * rxd_stall.c - the traffic under which udp;ofi_rxd stalls, with libfabric
 * alone: no xdev in the process. Not a test of xdev; the README's rxd
 * limitation cites what it shows, and anyone can run it against the
 * provider they have.
 *
 *   ofi-rxd-stall [-n RANKS] [-m MESSAGES] [-r READS] [-p PROVIDER] [-s SEED]
 *
 * RANKS processes (3; forked, addresses passed through shared memory) each
 * send MESSAGES (2000) messages of 16 B to 64 KiB + 128 (xdev's frame
 * sizes) to every other, with xdev's flow control: CREDITS per peer, a
 * receive buffer reposted as soon as it is checked, credits returned in a
 * small message once half are owed, and a pool of receive buffers that no
 * sender can overrun. Beside them each rank makes READS (200) fi_reads of
 * 64 KiB to 4 MiB from a random peer's registered region, one at a time,
 * as xdev's rendezvous does. Every rank polls its completion queue without
 * pause. Every byte read or received is checked.
 *
 * Exit 0: all delivered. 3: a stall (nothing completed on a rank for
 * STALL_S seconds; it prints what it waits for). 4: wrong bytes or an
 * error completion. 2: setup failed.
 */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS 8
#define NAME_BYTES 64
#define BUF_BYTES (64 * 1024 + 128)
#define CREDITS 16
#define REGION_BYTES (8u << 20)
#define READ_MIN (64u << 10)
#define READ_SPAN (4u << 20)
#define STALL_S 20
#define HEAD_BYTES 16

enum { DATA, CREDIT };

/* What the forked ranks share: their addresses, the region each exposes,
 * and how many are done (a rank done early still serves the others' reads). */
typedef struct {
    int ready, finished, stalled;
    char name[MAX_RANKS][NAME_BYTES];
    uint64_t key[MAX_RANKS], base[MAX_RANKS];
} board_t;

typedef struct {
    struct fi_context2 ctx; /* first: the provider's, and how a completion finds us */
    int busy;
    uint8_t data[BUF_BYTES];
} buf_t;

typedef struct {
    int me, n, messages, reads;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_ep *ep;
    struct fid_cq *cq;
    fi_addr_t addr[MAX_RANKS];
    board_t *board;
    buf_t *rx, *tx;
    int nrx, ntx;
    void *rx_desc, *tx_desc, *read_desc;
    uint32_t *region, *landing;
    struct fi_context2 read_ctx;
    int read_peer, read_busy, reads_done;
    size_t read_off, read_len;
    int sent[MAX_RANKS], credits[MAX_RANKS], owed[MAX_RANKS], got[MAX_RANKS];
    uint8_t *seen[MAX_RANKS];
    long completions, errors;
    uint64_t rng;
} rank_t;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint32_t next_rand(rank_t *r)
{
    r->rng = r->rng * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(r->rng >> 33);
}

static uint32_t region_word(int rank, size_t index)
{
    return (uint32_t)rank << 28 ^ (uint32_t)index * 2654435761u;
}

static uint8_t payload_byte(int src, int seq)
{
    return (uint8_t)(src * 31 + seq);
}

static void check(int rc, const char *what)
{
    if (rc) {
        fprintf(stderr, "%s: %s\n", what, fi_strerror(-rc));
        exit(2);
    }
}

static void open_endpoint(rank_t *r, const char *provider)
{
    struct fi_info *hints = fi_allocinfo(), *info;
    hints->caps = FI_MSG | FI_RMA | FI_READ | FI_REMOTE_READ;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    hints->domain_attr->mr_mode =
        FI_MR_LOCAL | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ENDPOINT;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->fabric_attr->prov_name = strdup(provider);
    check(fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &info), "fi_getinfo");
    struct fid_av *av;
    struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
    struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG, .size = 4096 };
    check(fi_fabric(info->fabric_attr, &r->fabric, NULL), "fi_fabric");
    check(fi_domain(r->fabric, info, &r->domain, NULL), "fi_domain");
    check(fi_av_open(r->domain, &av_attr, &av, NULL), "fi_av_open");
    check(fi_cq_open(r->domain, &cq_attr, &r->cq, NULL), "fi_cq_open");
    check(fi_endpoint(r->domain, info, &r->ep, NULL), "fi_endpoint");
    check(fi_ep_bind(r->ep, &av->fid, 0), "fi_ep_bind av");
    check(fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind cq");
    check(fi_enable(r->ep), "fi_enable");

    uint64_t mr_mode = info->domain_attr->mr_mode;
    struct fid_mr *mr[4];
    void *at[4] = { r->rx, r->tx, r->region, r->landing };
    size_t len[4] = { r->nrx * sizeof *r->rx, r->ntx * sizeof *r->tx, REGION_BYTES, REGION_BYTES };
    uint64_t access[4] = { FI_RECV, FI_SEND, FI_REMOTE_READ, FI_READ };
    for (int i = 0; i < 4; i++) {
        check(fi_mr_reg(r->domain, at[i], len[i], access[i], 0, (uint64_t)(r->me * 4 + i), 0,
                        &mr[i], NULL), "fi_mr_reg");
        if (mr_mode & FI_MR_ENDPOINT) {
            check(fi_mr_bind(mr[i], &r->ep->fid, 0), "fi_mr_bind");
            check(fi_mr_enable(mr[i]), "fi_mr_enable");
        }
    }
    bool local = mr_mode & FI_MR_LOCAL;
    r->rx_desc = local ? fi_mr_desc(mr[0]) : NULL;
    r->tx_desc = local ? fi_mr_desc(mr[1]) : NULL;
    r->read_desc = local ? fi_mr_desc(mr[3]) : NULL;
    r->board->key[r->me] = fi_mr_key(mr[2]);
    r->board->base[r->me] = mr_mode & FI_MR_VIRT_ADDR ? (uint64_t)(uintptr_t)r->region : 0;

    size_t name_len = NAME_BYTES;
    check(fi_getname(&r->ep->fid, r->board->name[r->me], &name_len), "fi_getname");
    __atomic_add_fetch(&r->board->ready, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&r->board->ready, __ATOMIC_ACQUIRE) < r->n)
        usleep(1000);
    for (int i = 0; i < r->n; i++)
        if (fi_av_insert(av, r->board->name[i], 1, &r->addr[i], 0, NULL) != 1)
            check(-FI_EINVAL, "fi_av_insert");
    fi_freeinfo(info);
}

static void post_receive(rank_t *r, buf_t *b)
{
    check((int)fi_recv(r->ep, b->data, BUF_BYTES, r->rx_desc, FI_ADDR_UNSPEC, &b->ctx), "fi_recv");
}

/* 0 when posted; -1 when no buffer is free or the provider says again. */
static int post_send(rank_t *r, int dst, uint32_t kind, uint32_t value, uint32_t len)
{
    buf_t *b = NULL;
    for (int i = 0; i < r->ntx && !b; i++)
        if (!r->tx[i].busy)
            b = &r->tx[i];
    if (!b)
        return -1;
    uint32_t head[4] = { (uint32_t)r->me, kind, value, len };
    memcpy(b->data, head, HEAD_BYTES);
    memset(b->data + HEAD_BYTES, payload_byte(r->me, (int)value), len - HEAD_BYTES);
    ssize_t rc = fi_send(r->ep, b->data, len, r->tx_desc, r->addr[dst], &b->ctx);
    if (rc == -FI_EAGAIN)
        return -1;
    check((int)rc, "fi_send");
    b->busy = 1;
    return 0;
}

static void arrived(rank_t *r, buf_t *b, size_t len)
{
    uint32_t head[4];
    memcpy(head, b->data, HEAD_BYTES);
    uint32_t src = head[0], kind = head[1], value = head[2];
    if (src >= (uint32_t)r->n || len != head[3]) {
        fprintf(stderr, "rank %d: a message of %zu bytes with a bad head\n", r->me, len);
        r->errors++;
    } else if (kind == CREDIT) {
        r->credits[src] += (int)value;
    } else if (value >= (uint32_t)r->messages || r->seen[src][value]++) {
        fprintf(stderr, "rank %d: message %u of rank %u twice or unsent\n", r->me, value, src);
        r->errors++;
    } else {
        for (size_t i = HEAD_BYTES; i < len; i++)
            if (b->data[i] != payload_byte((int)src, (int)value)) {
                fprintf(stderr, "rank %d: message %u of rank %u: byte %zu wrong\n", r->me, value,
                        src, i);
                r->errors++;
                break;
            }
        r->got[src]++;
        r->owed[src]++;
    }
    post_receive(r, b);
}

/* The read ended; its bytes are checked only when it succeeded. */
static void read_done(rank_t *r, bool ok)
{
    for (size_t i = 0; ok && i < r->read_len / 4; i++)
        if (r->landing[i] != region_word(r->read_peer, r->read_off / 4 + i)) {
            fprintf(stderr, "rank %d: read from rank %d: word %zu wrong\n", r->me, r->read_peer, i);
            r->errors++;
            break;
        }
    r->read_busy = 0;
    r->reads_done++;
}

static void poll_cq(rank_t *r)
{
    struct fi_cq_msg_entry ev[32];
    ssize_t n = fi_cq_read(r->cq, ev, 32);
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry err = { 0 };
        fi_cq_readerr(r->cq, &err, 0);
        fprintf(stderr, "rank %d: error completion: %s\n", r->me, fi_strerror(err.err));
        r->errors++;
        r->completions++;
        if (err.op_context == &r->read_ctx)
            read_done(r, false);
        else if (err.flags & FI_RECV)
            post_receive(r, err.op_context);
        else
            ((buf_t *)err.op_context)->busy = 0;
        return;
    }
    for (ssize_t i = 0; i < n; i++) {
        r->completions++;
        if (ev[i].op_context == &r->read_ctx)
            read_done(r, true);
        else if (ev[i].flags & FI_RECV)
            arrived(r, ev[i].op_context, ev[i].len);
        else
            ((buf_t *)ev[i].op_context)->busy = 0;
    }
}

static void start_read(rank_t *r)
{
    int peer = (r->me + 1 + (int)(next_rand(r) % (uint32_t)(r->n - 1))) % r->n;
    size_t len = (READ_MIN + next_rand(r) % READ_SPAN) & ~(size_t)3;
    size_t off = (next_rand(r) % (REGION_BYTES - len)) & ~(size_t)3;
    ssize_t rc = fi_read(r->ep, r->landing, len, r->read_desc, r->addr[peer],
                         r->board->base[peer] + off, r->board->key[peer], &r->read_ctx);
    if (rc == -FI_EAGAIN)
        return;
    check((int)rc, "fi_read");
    r->read_peer = peer;
    r->read_off = off;
    r->read_len = len;
    r->read_busy = 1;
}

/* Post what credits allow; true once everything is sent, received and read. */
static bool step(rank_t *r)
{
    bool done = true;
    for (int d = 0; d < r->n; d++) {
        if (d == r->me)
            continue;
        if (r->owed[d] >= CREDITS / 2 &&
            post_send(r, d, CREDIT, (uint32_t)r->owed[d], HEAD_BYTES) == 0)
            r->owed[d] = 0;
        while (r->sent[d] < r->messages && r->credits[d] > 0) {
            uint32_t x = next_rand(r), len;
            if (x % 4 == 0)
                len = HEAD_BYTES + x / 4 % 64;
            else if (x % 4 == 1)
                len = BUF_BYTES;
            else
                len = HEAD_BYTES + x / 4 % (BUF_BYTES - HEAD_BYTES + 1);
            if (post_send(r, d, DATA, (uint32_t)r->sent[d], len) != 0)
                break;
            r->sent[d]++;
            r->credits[d]--;
        }
        done = done && r->sent[d] == r->messages && r->got[d] == r->messages;
    }
    if (!r->read_busy && r->reads_done < r->reads)
        start_read(r);
    for (int i = 0; i < r->ntx; i++)
        done = done && !r->tx[i].busy;
    return done && r->reads_done == r->reads;
}

static void report_stall(rank_t *r, double for_s)
{
    int pending = 0;
    for (int i = 0; i < r->ntx; i++)
        pending += r->tx[i].busy;
    fprintf(stderr, "rank %d: STALL, nothing completed for %.0f s: %d sends pending, a read %s "
                    "(%d of %d done); per peer sent/received:",
            r->me, for_s, pending, r->read_busy ? "pending" : "not pending", r->reads_done,
            r->reads);
    for (int d = 0; d < r->n; d++)
        if (d != r->me)
            fprintf(stderr, " %d: %d/%d", d, r->sent[d], r->got[d]);
    fputc('\n', stderr);
}

static int run_rank(rank_t *r, const char *provider)
{
    r->nrx = (r->n - 1) * (CREDITS + 2);
    r->ntx = (r->n - 1) * (CREDITS + 2);
    r->rx = calloc((size_t)r->nrx, sizeof *r->rx);
    r->tx = calloc((size_t)r->ntx, sizeof *r->tx);
    r->region = aligned_alloc(4096, REGION_BYTES);
    r->landing = aligned_alloc(4096, REGION_BYTES);
    if (!r->rx || !r->tx || !r->region || !r->landing)
        return 2;
    for (size_t i = 0; i < REGION_BYTES / 4; i++)
        r->region[i] = region_word(r->me, i);
    for (int d = 0; d < r->n; d++) {
        r->credits[d] = CREDITS;
        r->seen[d] = calloc((size_t)r->messages, 1);
    }
    open_endpoint(r, provider);
    for (int i = 0; i < r->nrx; i++)
        post_receive(r, &r->rx[i]);

    double start = now_s(), last = start;
    long last_completions = 0;
    bool finished = false;
    while (!__atomic_load_n(&r->board->stalled, __ATOMIC_ACQUIRE)) {
        if (!finished && step(r)) {
            finished = true;
            printf("rank %d: %d messages to and from each peer, %d reads, in %.1f s\n", r->me,
                   r->messages, r->reads, now_s() - start);
            fflush(stdout);
            __atomic_add_fetch(&r->board->finished, 1, __ATOMIC_RELEASE);
        }
        if (finished && __atomic_load_n(&r->board->finished, __ATOMIC_ACQUIRE) == r->n)
            break;
        poll_cq(r);
        double t = now_s();
        if (r->completions != last_completions) {
            last = t;
            last_completions = r->completions;
        } else if (!finished && t - last > STALL_S) {
            report_stall(r, t - last);
            __atomic_add_fetch(&r->board->stalled, 1, __ATOMIC_RELEASE);
            return 3;
        }
    }
    if (!finished) { /* another rank stalled first */
        report_stall(r, now_s() - last);
        return 3;
    }
    /* Stay a moment: the peers may still need this side's acks. */
    for (double t = now_s(); now_s() - t < 2;)
        poll_cq(r);
    return r->errors ? 4 : 0;
}

int main(int argc, char **argv)
{
    int n = 3, messages = 2000, reads = 200, opt;
    unsigned seed = 1;
    const char *provider = "udp;ofi_rxd";
    while ((opt = getopt(argc, argv, "n:m:r:p:s:")) != -1) {
        switch (opt) {
        case 'n': n = atoi(optarg); break;
        case 'm': messages = atoi(optarg); break;
        case 'r': reads = atoi(optarg); break;
        case 'p': provider = optarg; break;
        case 's': seed = (unsigned)atoi(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-n ranks] [-m messages] [-r reads] [-p provider] "
                            "[-s seed]\n", argv[0]);
            return 2;
        }
    }
    if (n < 2 || n > MAX_RANKS || messages < 1 || reads < 0) {
        fprintf(stderr, "ranks 2-%d, messages at least 1, reads at least 0\n", MAX_RANKS);
        return 2;
    }
    board_t *board = mmap(NULL, sizeof *board, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                          -1, 0);
    if (board == MAP_FAILED)
        return 2;
    memset(board, 0, sizeof *board);
    for (int i = 0; i < n; i++) {
        if (fork() == 0) {
            static rank_t r;
            r.me = i;
            r.n = n;
            r.messages = messages;
            r.reads = reads;
            r.board = board;
            r.rng = seed * 7919ull + (uint64_t)i;
            _exit(run_rank(&r, provider));
        }
    }
    int worst = 0;
    for (int i = 0; i < n; i++) {
        int status;
        if (wait(&status) < 0)
            return 2;
        int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        worst = rc > worst ? rc : worst;
    }
    printf("%s\n", worst == 0 ? "all delivered" : worst == 3 ? "stalled" : "failed");
    return worst;
}
