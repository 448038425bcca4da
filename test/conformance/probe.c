/*
 * probe.c - part of case "matching": probe and iprobe.
 *
 * A probe reports the waiting message's source, tag, context and full byte
 * count without taking it; the next matching receive then gets that very
 * message. iprobe finds nothing when nothing matches, and finds a message
 * that is on its way by driving progress itself.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cases.h"
#include "harness.h"

enum { CTX_P = 30, CTX_Q, CTX_EMPTY };

static uint64_t seed_of(int tag) { return 7000 + (uint64_t)tag; }

static void send_msg(size_t len, int tag, int ctx, unsigned char **buf, xdev_request_t *req)
{
    *buf = h_malloc(len);
    h_fill(*buf, len, seed_of(tag), h_rank);
    CHECK_RC(xdev_isend(h_dev, *buf, len, h_next(), tag, ctx, req));
}

/* Receive into a buffer of exactly the probed size and check the data. */
static void recv_probed(const xdev_status_t *pst, const char *what)
{
    unsigned char *b = h_malloc(pst->count);
    xdev_status_t st;
    CHECK_RC(xdev_recv(h_dev, b, pst->count, pst->source, pst->tag, pst->ctx, &st));
    CHECK_STATUS(&st, pst->source, pst->tag, pst->ctx, XDEV_OK, pst->count, what);
    CHECK_DATA(b, st.count, seed_of(st.tag), st.source, what);
    free(b);
}

/* Three messages (0 bytes, eager, rendezvous size): each probed with
 * wildcards, then iprobed specifically, then received. */
static void probe_then_receive(void)
{
    h_phase("probe: status before the receive");
    const size_t lens[3] = {0, 1000, 1 * MiB + 3};
    unsigned char *sb[3];
    xdev_request_t sq[3];
    h_barrier();
    for (int i = 0; i < 3; i++)
        send_msg(lens[i], 50 + i, CTX_P, &sb[i], &sq[i]);
    for (int i = 0; i < 3; i++) {
        xdev_status_t st, st2;
        int found = 0;
        char what[80];
        snprintf(what, sizeof what, "probe of the %zu-byte message", lens[i]);
        CHECK_RC(xdev_probe(h_dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX_P, &st));
        CHECK_STATUS(&st, h_prev(), 50 + i, CTX_P, XDEV_OK, lens[i], what);
        /* probing did not take it */
        CHECK_RC(xdev_iprobe(h_dev, h_prev(), 50 + i, CTX_P, &found, &st2));
        CHECK(found == 1, "iprobe after probe did not find the %zu-byte message", lens[i]);
        CHECK_STATUS(&st2, h_prev(), 50 + i, CTX_P, XDEV_OK, lens[i], "iprobe after probe");
        recv_probed(&st, "receive of the probed message");
    }
    for (int i = 0; i < 3; i++) {
        WAIT_SEND(&sq[i], lens[i], "probed send");
        free(sb[i]);
    }
    h_barrier();
}

/* Two queued messages; a probe for the second tag reports the second one,
 * and after it is received only the first is left. */
static void probe_specific_tag(void)
{
    h_phase("probe: specific tag among queued messages");
    unsigned char *sb[2];
    xdev_request_t sq[2];
    xdev_status_t st;
    int found;
    h_barrier();
    send_msg(300, 60, CTX_Q, &sb[0], &sq[0]);
    send_msg(400, 61, CTX_Q, &sb[1], &sq[1]);
    CHECK_RC(xdev_probe(h_dev, h_prev(), 61, CTX_Q, &st));
    CHECK_STATUS(&st, h_prev(), 61, CTX_Q, XDEV_OK, 400, "probe for tag 61");
    recv_probed(&st, "receive of tag 61 after its probe");
    CHECK_RC(xdev_iprobe(h_dev, h_prev(), 61, CTX_Q, &found, &st));
    CHECK(found == 0, "iprobe for tag 61 found a message after the only one was received "
          "(source %d tag %d count %zu)", st.source, st.tag, st.count);
    CHECK_RC(xdev_probe(h_dev, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX_Q, &st));
    CHECK_STATUS(&st, h_prev(), 60, CTX_Q, XDEV_OK, 300, "probe for what is left");
    recv_probed(&st, "receive of tag 60");
    for (int i = 0; i < 2; i++) {
        WAIT_SEND(&sq[i], i ? 400 : 300, "probe send");
        free(sb[i]);
    }
    h_barrier();
}

static void expect_nothing(int src, int tag, int ctx, const char *what)
{
    int found = -1;
    xdev_status_t st = {0};
    CHECK_RC(xdev_iprobe(h_dev, src, tag, ctx, &found, &st));
    CHECK(found == 0, "iprobe(src %d, tag %d, ctx %d) [%s] found a message: source %d tag %d "
          "ctx %d count %zu", src, tag, ctx, what, st.source, st.tag, st.ctx, st.count);
}

/* A message has arrived (a probe saw it); iprobes that do not match it find
 * nothing; after the receive, nothing at all is left. */
static void iprobe_nothing(void)
{
    h_phase("iprobe: nothing matches");
    unsigned char *sb;
    xdev_request_t sq;
    xdev_status_t st;
    h_barrier();
    expect_nothing(XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX_EMPTY, "context never used");
    send_msg(10, 70, CTX_P, &sb, &sq);
    CHECK_RC(xdev_probe(h_dev, h_prev(), 70, CTX_P, &st));
    CHECK_STATUS(&st, h_prev(), 70, CTX_P, XDEV_OK, 10, "probe for tag 70");
    expect_nothing(h_prev(), 71, CTX_P, "other tag");
    expect_nothing(XDEV_ANY_SOURCE, 71, CTX_P, "other tag, any source");
    expect_nothing(h_prev(), 70, CTX_Q, "other context");
    expect_nothing(XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX_EMPTY, "context never used");
    expect_nothing(h_rank, 70, CTX_P, "self, who sent nothing to itself");
    for (int r = 0; r < h_size; r++)
        if (r != h_prev())
            expect_nothing(r, XDEV_ANY_TAG, CTX_P, "a rank that sent nothing here");
    recv_probed(&st, "receive of tag 70");
    expect_nothing(XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX_P, "after the only message was received");
    WAIT_SEND(&sq, 10, "iprobe send");
    free(sb);
    h_barrier();
}

/* iprobe alone (no receive, no probe) must see a message sent after a
 * barrier within a few seconds: it drives progress. */
static void iprobe_progress(void)
{
    h_phase("iprobe: finds a message on its way");
    const size_t lens[2] = {20, 1 * MiB};
    for (int i = 0; i < 2; i++) {
        unsigned char *sb;
        xdev_request_t sq;
        xdev_status_t st;
        int found = 0, done = 0;
        h_barrier();
        send_msg(lens[i], 80 + i, CTX_P, &sb, &sq);
        double t0 = h_now();
        while (!found && h_now() - t0 < 20) {
            CHECK_RC(xdev_iprobe(h_dev, h_prev(), 80 + i, CTX_P, &found, &st));
            if (!done) {
                xdev_status_t sst;
                CHECK_RC(xdev_test(&sq, &done, &sst));
                if (done)
                    CHECK_SEND_STATUS(&sst, lens[i], "iprobe progress send (xdev_test)");
            }
        }
        CHECK(found, "iprobe did not find a %zu-byte message sent %.1f s ago", lens[i],
              h_now() - t0);
        CHECK_STATUS(&st, h_prev(), 80 + i, CTX_P, XDEV_OK, lens[i], "iprobe");
        recv_probed(&st, "receive after iprobe");
        if (!done)
            WAIT_SEND(&sq, lens[i], "iprobe progress send");
        free(sb);
    }
    h_barrier();
}

void matching_probe(void)
{
    probe_then_receive();
    probe_specific_tag();
    iprobe_nothing();
    iprobe_progress();
}
