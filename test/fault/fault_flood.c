/*
 * fault_flood.c - senders far ahead of their receiver must be slowed down,
 * never allowed to exhaust the receiver's memory, and lose nothing.
 *
 * Run with XDEV_UNEXPECTED_LIMIT=262144 as
 *   xdevrun -n 2 fault_flood     rank 0 floods rank 1
 *   xdevrun -n 4 fault_flood     ranks 1..3 flood rank 0
 * and with --progress every rank runs a progress thread, so the receiver's
 * device keeps reading the sockets while the application sleeps.
 * Each sender pushes 4000 eager 4 KiB messages (16 MiB, 64x the limit) with
 * at most 64 isends outstanding; the receiver sleeps 1 s first, then receives
 * everything, checking order and every byte, and xdev_unexpected_peak must
 * stay at or under the limit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault_util.h"
#include "introspect.h"
#include "xdev.h"

#define CTX 8
#define TAG 1
#define NMSG 4000
#define LEN 4096
#define WINDOW 64

static uint32_t seed_of(int src, int seq) { return (uint32_t)(src * 7919 + seq * 31 + 1); }

static void sender(xdev_t *dev, int rank, int dst)
{
    static unsigned char bufs[WINDOW][LEN];
    static xdev_request_t reqs[WINDOW];
    xdev_status_t st;
    double t0 = fault_now();

    fault_step("flooding");
    for (int i = 0; i < NMSG; i++) {
        int slot = i % WINDOW;
        if (i >= WINDOW) {
            REQUIRE_RC(xdev_wait(&reqs[slot], &st), XDEV_OK);
            CHECK(st.error == XDEV_OK, "send %d: status.error %d", i - WINDOW, st.error);
        }
        fault_fill(bufs[slot], LEN, seed_of(rank, i));
        REQUIRE_RC(xdev_isend(dev, bufs[slot], LEN, dst, TAG, CTX, &reqs[slot]), XDEV_OK);
    }
    for (int i = NMSG - WINDOW; i < NMSG; i++) {
        REQUIRE_RC(xdev_wait(&reqs[i % WINDOW], &st), XDEV_OK);
        CHECK(st.error == XDEV_OK, "send %d: status.error %d", i, st.error);
    }
    fault_log("sent %d x %d bytes to rank %d in %.3f s", NMSG, LEN, dst, fault_now() - t0);
}

static void receiver(xdev_t *dev, int size, size_t limit)
{
    static unsigned char buf[LEN + 16];
    int next[64] = {0};
    int nsenders = size - 1, total = nsenders * NMSG, src = size == 2 ? 0 : XDEV_ANY_SOURCE;
    xdev_status_t st;
    double t0;

    fault_step("receiver asleep");
    fault_sleep_ms(1000);
    fault_log("after 1 s asleep: unexpected bytes %zu, peak %zu", xdev_unexpected_bytes(dev),
              xdev_unexpected_peak(dev));
    fault_step("receiving the flood");
    t0 = fault_now();
    for (int n = 0; n < total; n++) {
        REQUIRE_RC(xdev_recv(dev, buf, sizeof buf, src, TAG, CTX, &st), XDEV_OK);
        REQUIRE(st.source >= 0 && st.source < size && st.source != xdev_rank(dev),
                "message %d: bad source %d", n, st.source);
        int s = st.source, seq = next[s]++;
        CHECK(st.error == XDEV_OK && st.count == LEN, "message %d from %d: error %d count %zu", seq, s,
              st.error, st.count);
        size_t bad = fault_verify(buf, LEN, seed_of(s, seq));
        CHECK(bad == (size_t)-1, "message %d from rank %d: byte %zu wrong (lost, reordered or corrupted)",
              seq, s, bad);
        if (fault_failures > 20) fault_abort();
    }
    for (int s = 0; s < size; s++)
        if (s != xdev_rank(dev))
            CHECK(next[s] == NMSG, "received %d messages from rank %d, want %d", next[s], s, NMSG);

    size_t peak = xdev_unexpected_peak(dev), now = xdev_unexpected_bytes(dev);
    fault_log("received %d messages in %.3f s; unexpected peak %zu bytes (limit %zu), now %zu", total,
              fault_now() - t0, peak, limit, now);
    CHECK(peak <= limit, "unexpected-message memory peaked at %zu bytes, over the limit %zu", peak, limit);
    CHECK(peak > 0, "unexpected peak is 0 although the receiver slept while %d messages were sent: gauge broken?", total);
    CHECK(now <= limit, "unexpected bytes now %zu over the limit %zu", now, limit);
}

int main(int argc, char **argv)
{
    int progress = argc > 1 && strcmp(argv[1], "--progress") == 0;
    const char *lim = getenv("XDEV_UNEXPECTED_LIMIT");
    xdev_config_t cfg;
    xdev_t *dev = NULL;
    int rank, size, recv_rank;
    size_t limit;

    fault_setup(progress ? "fault-flood-progress" : "fault-flood", 100);
    REQUIRE(lim != NULL, "XDEV_UNEXPECTED_LIMIT must be set");
    limit = strtoull(lim, NULL, 10);
    REQUIRE_RC(xdev_config_init(&cfg), XDEV_OK);
    CHECK(cfg.unexpected_limit == limit, "config unexpected_limit %zu, XDEV_UNEXPECTED_LIMIT %zu",
          cfg.unexpected_limit, limit);
    REQUIRE(cfg.eager_limit >= LEN, "eager limit %zu below the message size %d", cfg.eager_limit, LEN);
    if (progress) cfg.flags |= XDEV_FLAG_PROGRESS_THREAD;

    fault_step("xdev_init");
    REQUIRE_RC(xdev_init(&cfg, &dev), XDEV_OK);
    rank = xdev_rank(dev);
    size = xdev_size(dev);
    REQUIRE(size >= 2 && size <= 64, "size %d", size);
    recv_rank = size == 2 ? 1 : 0;
    REQUIRE_RC(fault_barrier(dev), XDEV_OK);

    if (rank == recv_rank) receiver(dev, size, limit);
    else sender(dev, rank, recv_rank);

    REQUIRE_RC(fault_barrier(dev), XDEV_OK);
    fault_step("xdev_finalize");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
