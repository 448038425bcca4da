/*
 * test_rx_whole.c - the core's shortcut for a whole eager message
 * (xdev_core_rx_whole), without a transport: a message it must not take
 * (from another rank than the one it came by, to another rank, a negative
 * tag or context, over the sender's eager limit, not plain eager, during
 * finalize, or with no receive posted for it) leaves everything as it was
 * for the two-step path to judge; one it takes fills the receive, no more
 * than its buffer holds, and completes it with the right status.
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
    d->peers = calloc(3, sizeof *d->peers);
    if (!d->peers)
        exit(2);
    for (int i = 0; i < 3; i++) {
        d->peers[i].eager_limit = LIMIT;
        d->peers[i].cut = UINT64_MAX;
    }
    return d;
}

static void free_dev(xdev_t *d)
{
    xdev_mtable_destroy(&d->posted);
    xdev_mtable_destroy(&d->unexpected);
    req_table_destroy(d);
    free(d->peers);
    free(d);
}

/* A receive from any source (no transport to watch a peer with). */
static void post(xdev_t *d, xreq_t *r, void *buf, size_t len)
{
    CHECK(req_start(d, r, REQ_RECV, buf, len, XDEV_ANY_SOURCE, TAG, CTX) == XDEV_OK);
    CHECK(proto_recv(d, r) == XDEV_OK && r->phase == PH_RECV_POSTED);
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
    xdev_hdr_t h[6];
    for (int i = 0; i < 6; i++)
        h[i] = good();
    h[0].src = 2;                      /* not the rank it came by */
    h[1].dst = 2;                      /* not for us */
    h[2].tag = -1;
    h[3].ctx = -1;
    h[4].type = XDEV_MSG_EAGER_SYNC;   /* needs its acknowledgement */
    h[5].type = XDEV_MSG_RNDZ_START;
    for (int i = 0; i < 6; i++)
        CHECK(xdev_core_rx_whole(d, PEER, &h[i], payload, 8) == 0);
    xdev_hdr_t ok = good();
    CHECK(xdev_core_rx_whole(d, PEER, &ok, payload, LIMIT + 1) == 0); /* over its limit */
    d->finalizing = true;
    CHECK(xdev_core_rx_whole(d, PEER, &ok, payload, 8) == 0);
    d->finalizing = false;
    ok.tag = TAG + 1; /* nothing posted for it */
    CHECK(xdev_core_rx_whole(d, PEER, &ok, payload, 8) == 0);
    /* the receive is still posted, untouched */
    CHECK(r.phase == PH_RECV_POSTED && buf[0] == 0x11 && d->activity == 0);
    req_reap(d, &r, NULL);
    free_dev(d);
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
    xdev_hdr_t h = good();
    CHECK(xdev_core_rx_whole(d, PEER, &h, payload, 12) == 1);
    CHECK(r.phase == PH_DONE && r.status.source == PEER && r.status.tag == TAG);
    CHECK(r.status.count == 8 && r.status.error == XDEV_ERR_TRUNCATE);
    CHECK(memcmp(buf, payload, 8) == 0 && buf[8] == 0x11 && buf[11] == 0x11);
    CHECK(req_cq_pop(d) == &r); /* xdev_peek hands it out */
    CHECK(xdev_core_rx_whole(d, PEER, &h, payload, 4) == 0); /* nothing posted now */
    req_reap(d, &r, NULL);
    free_dev(d);
}

int main(void)
{
    test_refused();
    test_taken();
    printf("test_rx_whole: %s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
