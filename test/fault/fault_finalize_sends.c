/*
 * fault_finalize_sends.c - a receiver that finalizes right after taking
 * what it was sent fails none of those sends.
 *
 * Run as `xdevrun -n N fault_finalize_sends [ROUNDS]` (N >= 3). In each of
 * ROUNDS rounds (default 2), every rank sends COUNT messages of 1-68 KiB
 * (eager and rendezvous) to every other, receives and checks all it is
 * sent, and waits for its sends; then it finalizes. Every send must
 * complete with XDEV_OK: its receiver took it whole, and a rank that
 * finalized has left, not failed what it had already taken.
 *
 * Why: over ofi with libfabric's shm provider, a receiver's goodbye can
 * come before the provider completes the sender's sends to it. The sender
 * took the goodbye as the peer's leaving at once and failed those sends
 * with XDEV_ERR_PEER (3 or more ranks).
 */
#include <stdlib.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 11
#define COUNT 12
#define MAX_SIZE 70000 /* across the default eager limit (64 KiB) */

static size_t size_of(int i)
{
    return 1024 + (size_t)i * (MAX_SIZE - 1024) / (COUNT - 1);
}

static uint64_t key_of(int round, int src, int dst, int i)
{
    return ((uint64_t)round << 40) | ((uint64_t)src << 24) | ((uint64_t)dst << 8) | (uint64_t)i;
}

static void exchange(xdev_t *dev, int round)
{
    int me = xdev_rank(dev), n = xdev_size(dev);
    size_t slots = (size_t)n * COUNT;
    unsigned char *out = malloc(slots * MAX_SIZE), *in = malloc(slots * MAX_SIZE);
    xdev_request_t *sreq = calloc(slots, sizeof *sreq), *rreq = calloc(slots, sizeof *rreq);
    REQUIRE(out && in && sreq && rreq, "out of memory");

    fault_step("posting the receives, then the sends");
    for (int peer = 0; peer < n; peer++)
        for (int i = 0; peer != me && i < COUNT; i++) {
            size_t k = (size_t)peer * COUNT + (size_t)i;
            REQUIRE_RC(xdev_irecv(dev, in + k * MAX_SIZE, MAX_SIZE, peer, i, CTX + round, &rreq[k]),
                       XDEV_OK);
        }
    for (int peer = 0; peer < n; peer++)
        for (int i = 0; peer != me && i < COUNT; i++) {
            size_t k = (size_t)peer * COUNT + (size_t)i;
            fault_fill_keyed(out + k * MAX_SIZE, size_of(i), key_of(round, me, peer, i));
            REQUIRE_RC(xdev_isend(dev, out + k * MAX_SIZE, size_of(i), peer, i, CTX + round,
                                  &sreq[k]),
                       XDEV_OK);
        }

    fault_step("receiving");
    for (int peer = 0; peer < n; peer++)
        for (int i = 0; peer != me && i < COUNT; i++) {
            size_t k = (size_t)peer * COUNT + (size_t)i;
            xdev_status_t st;
            CHECK_RC(xdev_wait(&rreq[k], &st), XDEV_OK);
            CHECK(st.error == XDEV_OK && st.count == size_of(i),
                  "round %d: message %d from rank %d: error %d, %zu bytes", round, i, peer,
                  st.error, st.count);
            CHECK(fault_verify_keyed(in + k * MAX_SIZE, size_of(i), key_of(round, peer, me, i)) ==
                      (size_t)-1,
                  "round %d: message %d from rank %d: wrong bytes", round, i, peer);
        }

    fault_step("waiting for the sends");
    for (int peer = 0; peer < n; peer++)
        for (int i = 0; peer != me && i < COUNT; i++) {
            xdev_status_t st;
            int rc = xdev_wait(&sreq[(size_t)peer * COUNT + (size_t)i], &st);
            CHECK(rc == XDEV_OK && st.error == XDEV_OK,
                  "round %d: send %d to rank %d, which took it whole: %d, status.error %d (%s)",
                  round, i, peer, rc, st.error, xdev_strerror(st.error));
        }

    free(out);
    free(in);
    free(sreq);
    free(rreq);
}

int main(int argc, char **argv)
{
    fault_setup("fault_finalize_sends", 100);
    int rounds = argc > 1 ? atoi(argv[1]) : 2;
    xdev_t *dev;
    fault_step("xdev_init");
    REQUIRE_RC(xdev_init(NULL, &dev), XDEV_OK);
    REQUIRE(xdev_size(dev) >= 3, "needs 3 ranks or more, not %d", xdev_size(dev));
    for (int r = 0; r < rounds; r++)
        exchange(dev, r);
    fault_step("xdev_finalize");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
