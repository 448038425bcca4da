/*
 * test_prefix.c - what a receiver has of a sender that dies is a prefix of
 * what it sent. Messages are fed to the core through the transport seam
 * (xdev_core_rx_begin/_end, xdev_core_peer_failed) by a fake transport
 * that sends every control message at once, so each case is exact:
 *  - an unexpected rendezvous offer whose data can no longer come fails the
 *    receive that takes it (named or wildcard) and probes report it; an
 *    eager message that arrived after it is never delivered;
 *  - whole messages before the cut stay receivable after the death;
 *  - a later eager message whose receive is done while an earlier
 *    rendezvous from the same sender is under way completes only after it,
 *    and fails with it when the sender dies; so does a later rendezvous
 *    whose read failed, with its error, and what arrives after that one
 *    is dropped while the stream is read on;
 *  - a message claimed by a matched probe is never freed under its handle,
 *    and one whole when its sender dies is still received, past a cut at
 *    a message nobody matched, but not past a claim that cannot complete;
 *  - a claimed rendezvous that a later message's receive would overtake is
 *    fetched first, also when it was claimed while that receive was held,
 *    and its handle received while the fetch is under way waits for it;
 *  - receives failed by the death leave the posted set and its counts (the
 *    shm reader reads on by the per-peer one; matching skips wildcard keys
 *    by the others), and a wildcard receive left posted still matches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "device.h"
#include "unit_check.h"


enum { ME = 0, PEER = 1, CTX = 3, BIG = 1000 };

static int fake_send(xdev_tp_t *tp, int peer, xdev_txop_t *op, int how)
{
    (void)tp, (void)peer, (void)op, (void)how;
    return 1; /* on the wire at once */
}
static void fake_watch(xdev_tp_t *tp, int peer) { (void)tp, (void)peer; }
static const xdev_tp_ops_t fake_ops = { .name = "fake", .send = fake_send, .watch = fake_watch };

/* One-sided reads that stay under way until the test ends them. */
static int pending_rma(xdev_tp_t *tp, int peer, xdev_rmaop_t *op)
{
    (void)tp, (void)peer, (void)op;
    return 0;
}
static const xdev_tp_ops_t rma_ops = { .name = "fake-rma", .send = fake_send, .watch = fake_watch,
                                       .rma = pending_rma };
static int offer_mode = XDEV_RNDZ_SEND; /* what offers ask for */

static xdev_t *new_dev(void)
{
    xdev_t *d = calloc(1, sizeof *d);
    if (!d || req_table_init(d) || xdev_mtable_init(&d->posted) || xdev_mtable_init(&d->unexpected))
        exit(2);
    d->rank = ME;
    d->size = 2;
    d->flags = XDEV_FLAG_SINGLE_THREAD;
    d->wake_fd = d->event_fd = d->tick_fd = -1; /* none opened (device_free closes them) */
    d->cfg.unexpected_limit = 1 << 20;
    d->cfg.eager_limit = 64;
    d->tps[0].ops = &fake_ops;
    d->ntps = 1;
    d->peers = calloc(2, sizeof *d->peers);
    if (!d->peers)
        exit(2);
    for (int i = 0; i < 2; i++) {
        d->peers[i].eager_limit = 64;
        d->peers[i].cut = UINT64_MAX;
    }
    return d;
}

static void free_dev(xdev_t *d)
{
    device_free(d);
}

/* One message from PEER through both steps of the seam. */
static void arrive(xdev_t *d, uint32_t type, int tag, const void *payload, size_t len,
                   uint64_t f0, uint64_t f1)
{
    xdev_rx_t rx;
    memset(&rx, 0, sizeof rx);
    rx.head.hdr = (xdev_hdr_t){ .src = PEER, .dst = ME, .tag = tag, .ctx = CTX, .type = type };
    rx.head.f[0] = f0;
    rx.head.f[1] = f1;
    rx.head.f[2] = (uint64_t)offer_mode;
    rx.len = len;
    CHECK(xdev_core_rx_begin(d, PEER, NULL, &rx) == XDEV_RX_DELIVER);
    if (rx.dst_len)
        memcpy(rx.dst, payload, rx.dst_len);
    xdev_core_rx_end(d, &rx);
}

static void offer(xdev_t *d, int tag) { arrive(d, XDEV_MSG_RNDZ_START, tag, NULL, 0, 77, BIG); }
static void eager(xdev_t *d, int tag, const char *s) { arrive(d, XDEV_MSG_EAGER, tag, s, strlen(s), 0, 0); }

static void post(xdev_t *d, xreq_t *r, void *buf, size_t len, int src, int tag)
{
    CHECK(req_start(d, r, REQ_RECV, buf, len, src, tag, CTX) == XDEV_OK);
    CHECK(proto_recv(d, r) == XDEV_OK);
}

static void reap(xdev_t *d, xreq_t *r, xdev_status_t *st)
{
    CHECK(r->phase == PH_DONE);
    req_reap(d, r, st);
}

static void test_lost_offer(void)
{
    xdev_t *d = new_dev();
    offer(d, 1);
    eager(d, 2, "later");
    xdev_core_peer_failed(d, PEER);

    /* a probe finds the offer, as the receive that takes it will */
    uxmsg_t *e = proto_probe(d, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX);
    CHECK(e && e->tag == 1 && proto_lost(d, e));
    CHECK(!proto_probe(d, PEER, 2, CTX)); /* the later message is gone */

    char buf[BIG];
    xreq_t r;
    xdev_status_t st;
    post(d, &r, buf, sizeof buf, PEER, 2);
    reap(d, &r, &st);
    CHECK(st.error == XDEV_ERR_PEER && st.count == 0);

    post(d, &r, buf, sizeof buf, XDEV_ANY_SOURCE, XDEV_ANY_TAG);
    reap(d, &r, &st);
    CHECK(st.error == XDEV_ERR_PEER && st.source == PEER && st.tag == 1 && st.count == 0);

    post(d, &r, buf, sizeof buf, PEER, XDEV_ANY_TAG);
    reap(d, &r, &st);
    CHECK(st.error == XDEV_ERR_PEER);
    CHECK(d->ux_head == NULL && d->ux_bytes == 0);
    free_dev(d);
}

static void test_prefix_kept(void)
{
    xdev_t *d = new_dev();
    eager(d, 5, "first");
    eager(d, 6, "second");
    offer(d, 7);
    eager(d, 8, "after");
    xdev_core_peer_failed(d, PEER);

    char buf[BIG];
    xreq_t r;
    xdev_status_t st;
    post(d, &r, buf, sizeof buf, PEER, 6); /* a whole message before the cut */
    reap(d, &r, &st);
    CHECK(st.error == XDEV_OK && st.count == 6 && memcmp(buf, "second", 6) == 0);
    post(d, &r, buf, sizeof buf, PEER, XDEV_ANY_TAG);
    reap(d, &r, &st);
    CHECK(st.error == XDEV_OK && st.tag == 5 && memcmp(buf, "first", 5) == 0);
    post(d, &r, buf, sizeof buf, PEER, XDEV_ANY_TAG);
    reap(d, &r, &st);
    CHECK(st.error == XDEV_ERR_PEER && st.tag == 7);
    post(d, &r, buf, sizeof buf, PEER, 8);
    reap(d, &r, &st);
    CHECK(st.error == XDEV_ERR_PEER && st.count == 0);
    free_dev(d);
}

/* r1 takes a rendezvous, r2 a later eager message from the same sender. */
static void two_matched(xdev_t *d, xreq_t *r1, char *b1, xreq_t *r2, char *b2)
{
    post(d, r1, b1, BIG, PEER, 1);
    post(d, r2, b2, 16, PEER, 2);
    offer(d, 1);
    CHECK(r1->phase == PH_WAIT_DATA);
    eager(d, 2, "overtaker");
    CHECK(r2->phase != PH_DONE && d->cq_head == NULL); /* held behind r1 */
}

static void test_held_then_released(void)
{
    xdev_t *d = new_dev();
    static char b1[BIG], b2[16], data[BIG];
    memset(data, 0x5a, sizeof data);
    xreq_t r1, r2;
    two_matched(d, &r1, b1, &r2, b2);
    arrive(d, XDEV_MSG_RNDZ_DATA, 1, data, BIG, r1.id, 0);
    CHECK(req_cq_pop(d) == &r1 && req_cq_pop(d) == &r2); /* in arrival order */
    xdev_status_t st;
    reap(d, &r1, &st);
    CHECK(st.error == XDEV_OK && st.count == BIG && memcmp(b1, data, BIG) == 0);
    reap(d, &r2, &st);
    CHECK(st.error == XDEV_OK && st.count == 9 && memcmp(b2, "overtaker", 9) == 0);
    CHECK(d->peers[PEER].open == NULL && d->peers[PEER].held == NULL);
    free_dev(d);
}

static void test_held_then_death(void)
{
    xdev_t *d = new_dev();
    static char b1[BIG], b2[16];
    xreq_t r1, r2;
    two_matched(d, &r1, b1, &r2, b2);
    xdev_core_peer_failed(d, PEER);
    xdev_status_t st;
    reap(d, &r1, &st);
    CHECK(st.error == XDEV_ERR_PEER && st.count == 0 && st.tag == 1 && st.msg_len == BIG);
    reap(d, &r2, &st); /* names the message it had taken (xdev.h) */
    CHECK(st.error == XDEV_ERR_PEER && st.count == 0 && st.tag == 2 && st.msg_len == 9);
    CHECK(d->peers[PEER].open == NULL && d->peers[PEER].held == NULL);
    free_dev(d);
}

/* A later rendezvous whose read fails (shm: the copy met ESRCH) completes
 * its receive only after an earlier one from the same sender, with its
 * error: receives of one sender's messages complete in arrival order. */
static void test_failed_read_held(void)
{
    xdev_t *d = new_dev();
    offer_mode = XDEV_RNDZ_READ;
    d->tps[0].ops = &rma_ops;
    static char b1[BIG], b2[BIG];
    xreq_t r1, r2;
    post(d, &r1, b1, BIG, PEER, 1);
    post(d, &r2, b2, BIG, PEER, 2);
    offer(d, 1);
    offer(d, 2);
    CHECK(r1.phase == PH_RMA && r2.phase == PH_RMA);
    xdev_core_rma_done(d, &r2.rma, XDEV_ERR_PEER);
    CHECK(r2.phase != PH_DONE && d->cq_head == NULL); /* held behind r1 */
    xdev_core_rma_done(d, &r1.rma, XDEV_OK);
    CHECK(req_cq_pop(d) == &r1 && req_cq_pop(d) == &r2); /* in arrival order */
    xdev_status_t st;
    reap(d, &r1, &st);
    CHECK(st.error == XDEV_OK && st.count == BIG && st.tag == 1);
    reap(d, &r2, &st);
    CHECK(st.error == XDEV_ERR_PEER && st.count == 0 && st.tag == 2 && st.msg_len == BIG);
    CHECK(d->peers[PEER].open == NULL && d->peers[PEER].held == NULL);
    offer_mode = XDEV_RNDZ_SEND;
    free_dev(d);
}

/* A failed read cuts the stream before the sender is known dead; what
 * arrives after it is dropped, and the stream is read on: the streamed
 * data of an earlier rendezvous behind it still completes that one. */
static void test_read_on_past_cut(void)
{
    xdev_t *d = new_dev();
    d->tps[0].ops = &rma_ops;
    static char b1[BIG], b2[BIG], b3[16], data[BIG];
    memset(data, 0x3c, sizeof data);
    xreq_t r1, r2, r3;
    post(d, &r1, b1, BIG, PEER, 1);
    post(d, &r2, b2, BIG, PEER, 2);
    post(d, &r3, b3, sizeof b3, PEER, 3);
    offer(d, 1); /* streamed */
    offer_mode = XDEV_RNDZ_READ;
    offer(d, 2);
    offer_mode = XDEV_RNDZ_SEND;
    CHECK(r1.phase == PH_WAIT_DATA && r2.phase == PH_RMA);
    xdev_core_rma_done(d, &r2.rma, XDEV_ERR_PEER); /* shm: the copy met ESRCH */
    eager(d, 3, "past the cut"); /* read, and dropped */
    CHECK(r3.phase == PH_RECV_POSTED && d->ux_head == NULL);
    arrive(d, XDEV_MSG_RNDZ_DATA, 1, data, BIG, r1.id, 0);
    CHECK(req_cq_pop(d) == &r1 && req_cq_pop(d) == &r2 && req_cq_pop(d) == NULL);
    xdev_status_t st;
    reap(d, &r1, &st);
    CHECK(st.error == XDEV_OK && st.count == BIG && memcmp(b1, data, BIG) == 0);
    reap(d, &r2, &st);
    CHECK(st.error == XDEV_ERR_PEER && st.count == 0 && st.tag == 2);
    xdev_core_peer_failed(d, PEER);
    reap(d, &r3, &st); /* a receive naming it fails with the death */
    CHECK(st.error == XDEV_ERR_PEER && st.count == 0);
    free_dev(d);
}

/* A receive that took an earlier message completes at once: nothing
 * before it is under way. */
static void test_earlier_not_held(void)
{
    xdev_t *d = new_dev();
    static char b1[BIG], b2[16], data[BIG];
    eager(d, 2, "early");           /* unexpected, before the offer */
    xreq_t r1, r2;
    post(d, &r1, b1, BIG, PEER, 1);
    offer(d, 1);
    post(d, &r2, b2, sizeof b2, PEER, 2);
    CHECK(r2.phase == PH_DONE);      /* not held behind the later offer */
    arrive(d, XDEV_MSG_RNDZ_DATA, 1, data, BIG, r1.id, 0);
    CHECK(r1.phase == PH_DONE);
    reap(d, &r1, NULL);
    reap(d, &r2, NULL);
    free_dev(d);
}

static uxmsg_t *claim(xdev_t *d, int tag)
{
    uxmsg_t *e = proto_probe(d, PEER, tag, CTX);
    CHECK(e != NULL);
    proto_claim(d, e);
    return e;
}

static xreq_t *fetch_of(uxmsg_t *e)
{
    return xreq_of((xdev_request_t *)(void *)e->fetch);
}

/* Receive claim e (tag) into buf after the death; its status. */
static xdev_status_t receive_claim(xdev_t *d, uxmsg_t *e, int tag, char *buf, size_t len)
{
    xreq_t r;
    xdev_status_t st;
    CHECK(proto_find_claim(d, e, e->claim) == e); /* not freed under its handle */
    CHECK(req_start(d, &r, REQ_RECV, buf, len, PEER, tag, CTX) == XDEV_OK);
    proto_recv_claimed(d, e, &r);
    reap(d, &r, &st);
    return st;
}

/* Claims whole when their sender dies are received through their handles,
 * one past the cut too: the offer nobody matched holds back no claim, as
 * it holds back no receive. The offer is then found lost. */
static void test_claimed_through_death(void)
{
    xdev_t *d = new_dev();
    eager(d, 5, "kept");
    offer(d, 6);
    eager(d, 7, "after");
    uxmsg_t *before = claim(d, 5), *after = claim(d, 7);
    xdev_core_peer_failed(d, PEER);
    char buf[16];
    xdev_status_t st = receive_claim(d, after, 7, buf, sizeof buf);
    CHECK(st.error == XDEV_OK && st.count == 5 && memcmp(buf, "after", 5) == 0);
    st = receive_claim(d, before, 5, buf, sizeof buf);
    CHECK(st.error == XDEV_OK && st.count == 4 && memcmp(buf, "kept", 4) == 0);
    uxmsg_t *e = proto_probe(d, PEER, XDEV_ANY_TAG, CTX);
    CHECK(e && e->tag == 6 && proto_lost(d, e));
    CHECK(d->claimed == NULL);
    free_dev(d);
}

/* The soak's case: an offer U nobody matches, then A claimed, then F
 * received, which had A's data read in first. The sender dies, cutting its
 * stream at U: F stays received, so A must too. */
static void test_claim_fetched_past_cut(void)
{
    xdev_t *d = new_dev();
    static char data[BIG], ba[BIG];
    char bf[16];
    for (int i = 0; i < BIG; i++)
        data[i] = (char)i;
    offer(d, 1);
    offer(d, 2);
    eager(d, 3, "F");
    uxmsg_t *a = claim(d, 2);
    xreq_t f;
    xdev_status_t st;
    post(d, &f, bf, sizeof bf, PEER, 3);
    CHECK(a->fetch && f.phase != PH_DONE);
    arrive(d, XDEV_MSG_RNDZ_DATA, 2, data, BIG, fetch_of(a)->id, 0);
    reap(d, &f, &st);
    CHECK(st.error == XDEV_OK && st.count == 1);
    xdev_core_peer_failed(d, PEER);
    CHECK(d->peers[PEER].cut == 1);
    st = receive_claim(d, a, 2, ba, BIG);
    CHECK(st.error == XDEV_OK && st.count == BIG && memcmp(ba, data, BIG) == 0);
    free_dev(d);
}

/* A claimed offer whose data never came holds back the claims after it:
 * delivering a later one would leave a hole in what the claims got. */
static void test_claim_behind_lost_claim(void)
{
    xdev_t *d = new_dev();
    eager(d, 5, "kept");
    offer(d, 6);
    eager(d, 7, "after");
    uxmsg_t *before = claim(d, 5), *lost = claim(d, 6), *after = claim(d, 7);
    xdev_core_peer_failed(d, PEER);
    static char buf[BIG];
    xdev_status_t st = receive_claim(d, after, 7, buf, BIG);
    CHECK(st.error == XDEV_ERR_PEER && st.count == 0 && st.tag == 7);
    st = receive_claim(d, lost, 6, buf, BIG);
    CHECK(st.error == XDEV_ERR_PEER && st.count == 0 && st.tag == 6);
    st = receive_claim(d, before, 5, buf, BIG);
    CHECK(st.error == XDEV_OK && st.count == 4 && memcmp(buf, "kept", 4) == 0);
    CHECK(d->claimed == NULL);
    free_dev(d);
}

/* E claimed, then a later F received: E is fetched and F held behind it;
 * an offer A, before both, claimed only now, must be fetched before F is
 * let go, and the sender's death then fails F and A alike. */
static void test_claim_while_held(void)
{
    xdev_t *d = new_dev();
    static char data[BIG], ba[BIG];
    char bf[16];
    offer(d, 1);
    offer(d, 2);
    eager(d, 3, "F");
    uxmsg_t *e = claim(d, 2);
    xreq_t f, a;
    xdev_status_t st;
    post(d, &f, bf, sizeof bf, PEER, 3);
    CHECK(e->fetch && f.phase != PH_DONE);
    uxmsg_t *ea = claim(d, 1);
    arrive(d, XDEV_MSG_RNDZ_DATA, 2, data, BIG, fetch_of(e)->id, 0);
    CHECK(ea->fetch && f.phase != PH_DONE); /* now behind A's fetch */
    xdev_core_peer_failed(d, PEER);
    reap(d, &f, &st);
    CHECK(st.error == XDEV_ERR_PEER && st.count == 0);
    CHECK(req_start(d, &a, REQ_RECV, ba, BIG, PEER, 1, CTX) == XDEV_OK);
    proto_recv_claimed(d, ea, &a);
    reap(d, &a, &st);
    CHECK(st.error == XDEV_ERR_PEER && st.count == 0);
    CHECK(d->nactive == 0); /* the fetches too */
    free_dev(d); /* E, fetched and never received, goes with the device */
}

/* A's fetch fails before the sender is known dead, which cuts its stream
 * at A; E's handle, received while E is still being fetched, must wait
 * for that fetch (the entry is not freed under it) and then fail. */
static void test_claim_received_while_fetched(void)
{
    offer_mode = XDEV_RNDZ_READ;
    xdev_t *d = new_dev();
    d->tps[0].ops = &rma_ops;
    static char be[BIG];
    char bf[16];
    offer(d, 1);
    offer(d, 2);
    eager(d, 3, "F");
    uxmsg_t *ee = claim(d, 2), *ea = claim(d, 1);
    xreq_t f, e;
    xdev_status_t st;
    post(d, &f, bf, sizeof bf, PEER, 3);
    CHECK(ea->fetch && ee->fetch && f.phase != PH_DONE);
    xdev_core_rma_done(d, &fetch_of(ea)->rma, XDEV_ERR_PEER); /* shm: the copy met ESRCH */
    CHECK(d->peers[PEER].cut == ea->arrival && !d->peers[PEER].dead);
    CHECK(req_start(d, &e, REQ_RECV, be, BIG, PEER, 2, CTX) == XDEV_OK);
    proto_recv_claimed(d, ee, &e);
    CHECK(e.phase != PH_DONE && ee->rreq == &e);
    xdev_core_peer_failed(d, PEER);
    reap(d, &e, &st);
    CHECK(st.error == XDEV_ERR_PEER && st.count == 0);
    reap(d, &f, &st);
    CHECK(st.error == XDEV_ERR_PEER);
    CHECK(d->nactive == 0); /* the fetches too */
    free_dev(d); /* A's claim, lost, goes with the device */
    offer_mode = XDEV_RNDZ_SEND;
}

static int wild_posted(const xdev_t *d)
{
    return d->posted_wild[1] + d->posted_wild[2] + d->posted_wild[3];
}

static void test_posted_counts_after_death(bool wildcards_fail)
{
    xdev_t *d = new_dev();
    if (wildcards_fail)
        d->flags |= XDEV_FLAG_WILDCARD_FAILS;
    char b1[8], b2[8], b3[8];
    xreq_t r1, r2, r3;
    xdev_status_t st;
    post(d, &r1, b1, sizeof b1, PEER, 1);
    post(d, &r2, b2, sizeof b2, PEER, XDEV_ANY_TAG);
    post(d, &r3, b3, sizeof b3, XDEV_ANY_SOURCE, 2);
    CHECK(xdev_core_posted_from(d, PEER) && wild_posted(d) == 2);
    xdev_core_peer_failed(d, PEER);
    CHECK(!xdev_core_posted_from(d, PEER));
    reap(d, &r1, &st);
    CHECK(st.error == XDEV_ERR_PEER);
    reap(d, &r2, &st);
    CHECK(st.error == XDEV_ERR_PEER);
    if (wildcards_fail) {
        CHECK(wild_posted(d) == 0);
        reap(d, &r3, &st);
        CHECK(st.error == XDEV_ERR_PEER_PENDING);
    } else {
        /* The wildcard stays, counted, and a message from ourselves takes it. */
        CHECK(wild_posted(d) == 1 && r3.phase == PH_RECV_POSTED);
        xdev_rx_t rx;
        memset(&rx, 0, sizeof rx);
        rx.head.hdr = (xdev_hdr_t){ .src = ME, .dst = ME, .tag = 2, .ctx = CTX, .type = XDEV_MSG_EAGER };
        rx.len = 2;
        CHECK(xdev_core_rx_begin(d, ME, NULL, &rx) == XDEV_RX_DELIVER && rx.dst == b3);
        memcpy(rx.dst, "ok", 2);
        xdev_core_rx_end(d, &rx);
        reap(d, &r3, &st);
        CHECK(st.error == XDEV_OK && st.source == ME && memcmp(b3, "ok", 2) == 0);
        CHECK(wild_posted(d) == 0);
    }
    free_dev(d);
}

int main(void)
{
    test_claim_while_held();
    test_claim_received_while_fetched();
    test_claimed_through_death();
    test_claim_fetched_past_cut();
    test_claim_behind_lost_claim();
    test_lost_offer();
    test_prefix_kept();
    test_held_then_released();
    test_held_then_death();
    test_failed_read_held();
    test_read_on_past_cut();
    test_earlier_not_held();
    test_posted_counts_after_death(false);
    test_posted_counts_after_death(true);
    printf("test_prefix: %s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
