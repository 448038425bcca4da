/*
 * fault_behind.c - a request waiting for something its peer sends behind
 * a flood of unexpected messages: the receiver's stream must not stop at
 * the unexpected-memory limit, since the program receives the flood only
 * after that request completed (a correct program; the limit only slows
 * senders down).
 *
 * Run with 2 ranks and XDEV_UNEXPECTED_LIMIT=262144 as
 *   fault_behind recv   rank 0 offers a rendezvous to rank 1, then floods
 *                       it; rank 1 receives the rendezvous first, so its
 *                       data comes behind the flood
 *   fault_behind send   rank 1 sends a rendezvous to rank 0, which has
 *                       posted its receive and floods rank 1: the reply
 *                       comes behind the flood
 *   fault_behind posted rank 0 posts the whole flood, then an 8-byte
 *                       message; rank 1 receives that one first
 *   fault_behind probe  the same, rank 1 probing for it first
 * Rank 1 starts its request 0.3 s late, once the flood has filled its
 * limit. Every byte is checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 9
#define TAG_BIG 2
#define TAG_FLOOD 3
#define BIG (1u << 20)
#define NMSG 1000
#define LEN 4096
#define WINDOW 64

static uint32_t seed_of(int seq) { return (uint32_t)(seq * 31 + 7); }

static void flood(xdev_t *dev, int dst)
{
    static unsigned char bufs[WINDOW][LEN];
    static xdev_request_t reqs[WINDOW];
    xdev_status_t st;
    fault_step("flooding");
    for (int i = 0; i < NMSG + WINDOW; i++) {
        int slot = i % WINDOW;
        if (i >= WINDOW) {
            REQUIRE_RC(xdev_wait(&reqs[slot], &st), XDEV_OK);
            CHECK(st.error == XDEV_OK, "flood send %d: error %d", i - WINDOW, st.error);
        }
        if (i < NMSG) {
            fault_fill(bufs[slot], LEN, seed_of(i));
            REQUIRE_RC(xdev_isend(dev, bufs[slot], LEN, dst, TAG_FLOOD, CTX, &reqs[slot]), XDEV_OK);
        }
    }
}

/* The flood posted at once, then one small message behind it. */
static void flood_then_small(xdev_t *dev, int dst)
{
    static unsigned char bufs[NMSG][LEN];
    static xdev_request_t reqs[NMSG];
    xdev_status_t st;
    fault_step("posting the flood and the small message behind it");
    for (int i = 0; i < NMSG; i++) {
        fault_fill(bufs[i], LEN, seed_of(i));
        REQUIRE_RC(xdev_isend(dev, bufs[i], LEN, dst, TAG_FLOOD, CTX, &reqs[i]), XDEV_OK);
    }
    unsigned char small[8];
    fault_fill(small, sizeof small, 97);
    REQUIRE_RC(xdev_send(dev, small, sizeof small, dst, TAG_BIG, CTX), XDEV_OK);
    for (int i = 0; i < NMSG; i++) {
        REQUIRE_RC(xdev_wait(&reqs[i], &st), XDEV_OK);
        CHECK(st.error == XDEV_OK, "flood send %d: error %d", i, st.error);
    }
}

static void receive_small(xdev_t *dev, int src, int probe_first)
{
    unsigned char small[8];
    xdev_status_t st;
    if (probe_first) {
        fault_step("probing for the small message");
        REQUIRE_RC(xdev_probe(dev, src, TAG_BIG, CTX, &st), XDEV_OK);
        CHECK(st.error == XDEV_OK && st.msg_len == sizeof small, "probe: error %d length %zu",
              st.error, st.msg_len);
    }
    fault_step("receiving the small message");
    REQUIRE_RC(xdev_recv(dev, small, sizeof small, src, TAG_BIG, CTX, &st), XDEV_OK);
    CHECK(st.error == XDEV_OK && st.count == sizeof small, "small: error %d count %zu", st.error,
          st.count);
    CHECK(fault_verify(small, sizeof small, 97) == (size_t)-1, "small: wrong bytes");
}

static void receive_flood(xdev_t *dev, int src)
{
    static unsigned char buf[LEN];
    xdev_status_t st;
    fault_step("receiving the flood");
    for (int i = 0; i < NMSG; i++) {
        REQUIRE_RC(xdev_recv(dev, buf, LEN, src, TAG_FLOOD, CTX, &st), XDEV_OK);
        CHECK(st.error == XDEV_OK && st.count == LEN, "flood %d: error %d count %zu", i, st.error,
              st.count);
        CHECK(fault_verify(buf, LEN, seed_of(i)) == (size_t)-1, "flood %d: wrong bytes", i);
        if (fault_failures > 20) fault_abort();
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "recv";
    int send_mode = strcmp(mode, "send") == 0;
    int small_mode = strcmp(mode, "posted") == 0 || strcmp(mode, "probe") == 0;
    xdev_t *dev = NULL;
    xdev_status_t st;
    xdev_request_t big_req;
    unsigned char *big = malloc(BIG);
    REQUIRE(big != NULL, "no memory");

    char name[32];
    snprintf(name, sizeof name, "fault-behind-%s", mode);
    fault_setup(name, 100);
    int rank = fault_start(&dev, 2);
    REQUIRE_RC(fault_barrier(dev), XDEV_OK);

    if (small_mode) {
        if (rank == 0) {
            flood_then_small(dev, 1);
        } else {
            fault_sleep_ms(300); /* the flood fills the limit meanwhile */
            receive_small(dev, 0, strcmp(mode, "probe") == 0);
            receive_flood(dev, 0);
        }
    } else if (rank == 0) {
        if (send_mode) {
            REQUIRE_RC(xdev_irecv(dev, big, BIG, 1, TAG_BIG, CTX, &big_req), XDEV_OK);
        } else {
            fault_fill(big, BIG, 99);
            REQUIRE_RC(xdev_isend(dev, big, BIG, 1, TAG_BIG, CTX, &big_req), XDEV_OK);
        }
        flood(dev, 1);
        fault_step("waiting for the rendezvous");
        REQUIRE_RC(xdev_wait(&big_req, &st), XDEV_OK);
        CHECK(st.error == XDEV_OK && st.count == BIG, "rendezvous: error %d count %zu", st.error,
              st.count);
        if (send_mode)
            CHECK(fault_verify(big, BIG, 98) == (size_t)-1, "rendezvous: wrong bytes");
    } else {
        fault_sleep_ms(300); /* the flood fills the limit meanwhile */
        fault_step(send_mode ? "sending the rendezvous" : "receiving the rendezvous");
        if (send_mode) {
            fault_fill(big, BIG, 98);
            REQUIRE_RC(xdev_send(dev, big, BIG, 0, TAG_BIG, CTX), XDEV_OK);
        } else {
            REQUIRE_RC(xdev_recv(dev, big, BIG, 0, TAG_BIG, CTX, &st), XDEV_OK);
            CHECK(st.error == XDEV_OK && st.count == BIG, "rendezvous: error %d count %zu",
                  st.error, st.count);
            CHECK(fault_verify(big, BIG, 99) == (size_t)-1, "rendezvous: wrong bytes");
        }
        receive_flood(dev, 0);
    }
    REQUIRE_RC(fault_barrier(dev), XDEV_OK);
    fault_step("xdev_finalize");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    free(big);
    return fault_finish();
}
