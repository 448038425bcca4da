/*
 * stats.c - case "stats": xdev_stats counts what was sent and received.
 *
 * Between two snapshots a rank sends its neighbour 20 eager and 3
 * rendezvous messages and itself one: the snapshots differ by exactly
 * those in messages, bytes and rendezvous sent (received, counted from
 * before the barrier the neighbour may leave first: at least those, and
 * exactly the rendezvous); nobody is dead; the unexpected peak is at least what is
 * held; and a caller's larger struct is written exactly to its size.
 */
#include <stdlib.h>
#include <string.h>

#include "cases.h"
#include "harness.h"

enum { CTX_STATS = 98, NEAGER = 20, NRNDZ = 3 };

static uint64_t total(const xdev_stats_t *s, int sent, int bytes)
{
    uint64_t n = 0;
    for (int i = 0; i < s->ntransports; i++) {
        const struct xdev_stats_transport *t = &s->transport[i];
        n += sent ? (bytes ? t->bytes_sent : t->msgs_sent) : (bytes ? t->bytes_received : t->msgs_received);
    }
    return n;
}

void case_stats(void)
{
    h_phase("stats: counters across an exchange");
    size_t big = h_eager + 10;
    unsigned char *sb = h_malloc(big), *rb = h_malloc(big);
    xdev_stats_t before, a, b;
    /* our neighbour may send its first messages while we are still in the
     * barrier: what we receive is counted from before it */
    CHECK_RC(xdev_stats(h_dev, &before));
    h_barrier();
    CHECK_RC(xdev_stats(h_dev, &a));
    uint64_t bytes = 0;
    for (int i = 0; i < NEAGER + NRNDZ; i++) {
        size_t n = i < NEAGER ? (size_t)i * 10 : big;
        bytes += n;
        xdev_request_t r;
        CHECK_RC(xdev_irecv(h_dev, rb, big, h_prev(), i, CTX_STATS, &r));
        CHECK_RC(xdev_send(h_dev, sb, n, h_next(), i, CTX_STATS));
        CHECK_RC(xdev_wait(&r, NULL));
    }
    CHECK_RC(xdev_send(h_dev, sb, 5, h_rank, 0, CTX_STATS + 1));
    CHECK_RC(xdev_recv(h_dev, rb, big, h_rank, 0, CTX_STATS + 1, NULL));
    CHECK_RC(xdev_stats(h_dev, &b));

    CHECK(b.struct_size == sizeof b && b.ntransports >= 1 && b.ntransports <= XDEV_STATS_MAX_TRANSPORTS,
          "struct_size %zu ntransports %d", b.struct_size, b.ntransports);
    for (int i = 0; i < b.ntransports; i++)
        CHECK(b.transport[i].name[0], "transport %d has no name", i);
    CHECK(total(&b, 1, 0) - total(&a, 1, 0) == NEAGER + NRNDZ, "messages sent: %llu",
          (unsigned long long)(total(&b, 1, 0) - total(&a, 1, 0)));
    CHECK(total(&b, 1, 1) - total(&a, 1, 1) == bytes, "bytes sent: %llu, want %llu",
          (unsigned long long)(total(&b, 1, 1) - total(&a, 1, 1)), (unsigned long long)bytes);
    CHECK(total(&b, 0, 0) - total(&before, 0, 0) >= NEAGER + NRNDZ, "messages received: %llu",
          (unsigned long long)(total(&b, 0, 0) - total(&before, 0, 0)));
    CHECK(total(&b, 0, 1) - total(&before, 0, 1) >= bytes, "bytes received too few");
    CHECK(b.rendezvous_sent - a.rendezvous_sent == NRNDZ &&
          b.rendezvous_received - before.rendezvous_received == NRNDZ,
          "rendezvous sent %llu received %llu", (unsigned long long)(b.rendezvous_sent - a.rendezvous_sent),
          (unsigned long long)(b.rendezvous_received - before.rendezvous_received));
    CHECK(b.self_msgs - a.self_msgs == 1, "messages to self: %llu", (unsigned long long)(b.self_msgs - a.self_msgs));
    CHECK(b.peers_dead == 0 && b.unexpected_peak >= b.unexpected_bytes, "dead %d, peak %zu < held %zu",
          b.peers_dead, b.unexpected_peak, b.unexpected_bytes);

    struct {
        xdev_stats_t s;
        unsigned char newer[8];
        unsigned char guard[8];
    } g;
    memset(&g, 0xa5, sizeof g);
    CHECK_RC(xdev_stats_size(h_dev, &g.s, sizeof g.s + sizeof g.newer));
    CHECK(g.s.struct_size == sizeof g.s + sizeof g.newer && g.newer[0] == 0 && g.newer[7] == 0 &&
          g.guard[0] == 0xa5 && g.guard[7] == 0xa5, "a larger struct was not written to its size exactly");
    CHECK(xdev_stats_size(h_dev, &b, sizeof b - 1) == XDEV_ERR_ARG, "a short struct was accepted");
    CHECK(xdev_stats(NULL, &b) == XDEV_ERR_ARG, "NULL dev");
    free(sb);
    free(rb);
    h_barrier();
}
