/*
 * test_rx_whole.c - a message the transport has whole in memory
 * (xdev_rx_t.payload) through xdev_core_rx_begin, without a transport: a
 * bad head is refused and changes nothing; a plain eager message for a
 * posted receive fills it, no more than its buffer holds, completes it
 * with the right status, and is done in that one call (XDEV_RX_DONE); one
 * nobody has posted for is buffered whole, and a receive posted later
 * gets it; one over the sender's eager limit is refused; during finalize
 * it is dropped; a burst of them is received in order, each whole,
 * short or not, and leaves its entries for the next. None of these may
 * ask the transport for anything (this device has none).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "device.h"
#include "unit_check.h"

enum { ME = 0, PEER = 1, TAG = 5, CTX = 3, LIMIT = 64 };

static xdev_t *new_dev(void)
{
    xdev_t *d = calloc(1, sizeof *d);
    if (!d || req_table_init(d) || xdev_mtable_init(&d->posted) || xdev_mtable_init(&d->unexpected))
        exit(2);
    d->rank = ME;
    d->size = 3;
    d->flags = XDEV_FLAG_SINGLE_THREAD;
    d->wake_fd = d->event_fd = d->tick_fd = -1; /* none opened */
    d->cfg.unexpected_limit = 1 << 20;
    d->peers = calloc(3, sizeof *d->peers);
    if (!d->peers)
        exit(2);
    for (int i = 0; i < 3; i++) {
        d->peers[i].eager_limit = LIMIT;
        d->peers[i].cut = UINT64_MAX;
    }
    return d;
}

/* A receive from any source (no transport to watch a peer with). */
static void post(xdev_t *d, xreq_t *r, void *buf, size_t len)
{
    CHECK(req_start(d, r, REQ_RECV, buf, len, XDEV_ANY_SOURCE, TAG, CTX) == XDEV_OK);
    CHECK(proto_recv(d, r) == XDEV_OK);
}

/* rx_begin on a whole plain eager message from PEER with this head. */
static int arrive(xdev_t *d, xdev_hdr_t h, const void *payload, size_t len)
{
    xdev_rx_t rx = { .len = len, .payload = payload };
    rx.head.hdr = h;
    return xdev_core_rx_begin(d, PEER, NULL, &rx);
}

static xdev_hdr_t good(void)
{
    return (xdev_hdr_t){ .src = PEER, .dst = ME, .tag = TAG, .ctx = CTX, .type = XDEV_MSG_EAGER };
}

static void test_refused(void)
{
    xdev_t *d = new_dev();
    char buf[16], payload[LIMIT + 1];
    memset(buf, 0x11, sizeof buf);
    memset(payload, 0x22, sizeof payload);
    xreq_t r;
    post(d, &r, buf, sizeof buf);
    xdev_hdr_t h[4];
    for (int i = 0; i < 4; i++)
        h[i] = good();
    h[0].src = 2; /* not the rank it came by */
    h[1].dst = 2; /* not for us */
    h[2].tag = -1;
    h[3].ctx = -1;
    for (int i = 0; i < 4; i++)
        CHECK(arrive(d, h[i], payload, 8) == XDEV_ERR_PEER);
    CHECK(arrive(d, good(), payload, LIMIT + 1) == XDEV_ERR_PEER); /* over its limit */
    /* the receive is still posted, untouched, and nothing was buffered */
    CHECK(r.phase == PH_RECV_POSTED && buf[0] == 0x11 && !d->ux_head);
    req_reap(d, &r, NULL);
    device_free(d);
}

static void test_taken(void)
{
    xdev_t *d = new_dev();
    char buf[8 + 4], payload[12];
    for (int i = 0; i < 12; i++)
        payload[i] = (char)(i + 1);
    memset(buf, 0x11, sizeof buf);
    xreq_t r;
    post(d, &r, buf, 8); /* 4 bytes of guard after it */
    CHECK(arrive(d, good(), payload, 12) == XDEV_RX_DONE);
    CHECK(r.phase == PH_DONE && r.status.source == PEER && r.status.tag == TAG);
    CHECK(r.status.count == 8 && r.status.msg_len == 12 && r.status.error == XDEV_ERR_TRUNCATE);
    CHECK(memcmp(buf, payload, 8) == 0 && buf[8] == 0x11 && buf[11] == 0x11);
    CHECK(req_cq_pop(d) == &r); /* xdev_peek hands it out */
    req_reap(d, &r, NULL);
    device_free(d);
}

static void test_buffered(void)
{
    xdev_t *d = new_dev();
    char buf[16], payload[10];
    for (int i = 0; i < 10; i++)
        payload[i] = (char)(0x40 + i);
    CHECK(arrive(d, good(), payload, sizeof payload) == XDEV_RX_DONE);
    memset(payload, 0, sizeof payload); /* the transport's memory is its own again */
    CHECK(d->ux_head && d->ux_head->state == UX_READY && d->ux_head->len == 10);
    xreq_t r;
    memset(buf, 0x11, sizeof buf);
    post(d, &r, buf, sizeof buf);
    CHECK(r.phase == PH_DONE && r.status.count == 10 && r.status.error == XDEV_OK);
    CHECK(buf[0] == 0x40 && buf[9] == 0x49 && buf[10] == 0x11 && !d->ux_head);
    req_reap(d, &r, NULL);

    d->finalizing = true; /* nobody will receive it: dropped, not buffered */
    CHECK(arrive(d, good(), payload, sizeof payload) == XDEV_RX_DONE && !d->ux_head);
    device_free(d);
}

/* A burst buffered before any receive: short payloads in their entries,
 * one byte over in a buffer of its own, none at all; tags that repeat
 * (an entry queued through the one before it) and one that does not.
 * Receives of any tag or of theirs take them whole, in the order they
 * came. Their entries are kept for the next burst, no more than the
 * bound lets the queue hold. */
static void test_burst(void)
{
    enum { N = 5 };
    static const size_t lens[N] = { UX_SMALL, UX_SMALL + 1, 0, UX_SMALL, 1 };
    static const int tags[N] = { TAG, TAG, TAG + 1, TAG, TAG };
    xdev_t *d = new_dev();
    d->peers[PEER].eager_limit = 2 * UX_SMALL;
    char payload[N][2 * UX_SMALL], buf[2 * UX_SMALL + 4];
    for (int m = 0; m < N; m++) {
        memset(payload[m], 0x30 + m, sizeof payload[m]);
        xdev_hdr_t h = good();
        h.tag = tags[m];
        CHECK(arrive(d, h, payload[m], lens[m]) == XDEV_RX_DONE);
    }
    for (int m = 0; m < N; m++) {
        xreq_t r;
        memset(buf, 0x11, sizeof buf);
        int tag = m % 2 ? tags[m] : XDEV_ANY_TAG; /* through either list */
        CHECK(req_start(d, &r, REQ_RECV, buf, sizeof buf, XDEV_ANY_SOURCE, tag, CTX) == XDEV_OK);
        CHECK(proto_recv(d, &r) == XDEV_OK);
        CHECK(r.phase == PH_DONE && r.status.tag == tags[m] && r.status.count == lens[m]);
        CHECK(memcmp(buf, payload[m], lens[m]) == 0 && buf[lens[m]] == 0x11);
        req_reap(d, &r, NULL);
        if (m == 1)
            d->cfg.unexpected_limit = 2 * sizeof(uxmsg_t); /* room for two from here on */
    }
    CHECK(!d->ux_head && d->ux_bytes == 0 && d->ux_nspare == 2);
    CHECK(arrive(d, good(), payload[0], 8) == XDEV_RX_DONE && d->ux_nspare == 1);
    device_free(d);
}

int main(void)
{
    test_refused();
    test_taken();
    test_buffered();
    test_burst();
    printf("test_rx_whole: %s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
