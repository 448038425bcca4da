/*
 * test_loop.c - the protocol core in one process, through src/loop: a job
 * of one whose messages to itself take the path a peer's would (head,
 * matching, eager, rendezvous, synchronous send, deferral under the
 * unexpected limit, truncation, vectors, order), where the core's own
 * shortcut for such messages would skip all of it; what the core tells a
 * transport of the receives posted for a peer; and a wakeup that comes
 * between a blocking call's start and its wait.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "device.h"
#include "introspect.h"
#include "transport.h"
#include "unit_check.h"

extern const xdev_tp_ops_t xdev_loop_ops;

#define EAGER 1024
#define UX_LIMIT (8 * 1024)

static void fill(uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static bool same(const uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 8)))
            return false;
    return true;
}

/* A message of n bytes, with the receive posted before or after. */
static void check_one(xdev_t *dev, size_t n, bool posted_first, bool sync)
{
    uint8_t *out = malloc(n + 1), *in = malloc(n + 16);
    fill(out, n, (unsigned)n);
    memset(in, 0xee, n + 16);
    xdev_request_t s, r;
    xdev_status_t st;
    if (posted_first)
        CHECK(xdev_irecv(dev, in, n + 16, 0, 3, 0, &r) == XDEV_OK);
    CHECK((sync ? xdev_issend : xdev_isend)(dev, out, n, 0, 3, 0, &s) == XDEV_OK);
    if (sync && !posted_first) { /* a synchronous send waits for its match */
        int done = 1;
        for (int i = 0; i < 10; i++)
            xdev_progress(dev);
        CHECK(xdev_test(&s, &done, NULL) == XDEV_OK && !done);
    }
    if (!posted_first)
        CHECK(xdev_irecv(dev, in, n + 16, 0, 3, 0, &r) == XDEV_OK);
    CHECK(xdev_wait(&r, &st) == XDEV_OK && st.error == XDEV_OK && st.count == n);
    CHECK(xdev_wait(&s, &st) == XDEV_OK && st.error == XDEV_OK);
    CHECK(same(in, n, (unsigned)n) && in[n] == 0xee && in[n + 15] == 0xee);
    free(out);
    free(in);
}

static void check_truncation(xdev_t *dev, size_t n)
{
    uint8_t *out = malloc(n), in[64 + 8];
    fill(out, n, 9);
    memset(in, 0xee, sizeof in);
    xdev_request_t s;
    xdev_status_t st;
    CHECK(xdev_isend(dev, out, n, 0, 4, 0, &s) == XDEV_OK);
    CHECK(xdev_recv(dev, in, 64, 0, 4, 0, &st) == XDEV_ERR_TRUNCATE);
    CHECK(st.count == 64 && st.msg_len == n && same(in, 64, 9) && in[64] == 0xee);
    CHECK(xdev_wait(&s, &st) == XDEV_OK);
    free(out);
}

static void check_vector(xdev_t *dev)
{
    static uint8_t a[100], b[3000], c[7], whole[3107];
    fill(whole, sizeof whole, 5);
    memcpy(a, whole, 100);
    memcpy(b, whole + 100, 3000);
    memcpy(c, whole + 3100, 7);
    xdev_iov_t iov[3] = { { a, 100 }, { b, 3000 }, { c, 7 } };
    uint8_t in[3107];
    xdev_status_t st;
    xdev_request_t s;
    CHECK(xdev_isendv(dev, iov, 3, 0, 5, 0, &s) == XDEV_OK);
    CHECK(xdev_recv(dev, in, sizeof in, 0, 5, 0, &st) == XDEV_OK && st.count == sizeof in);
    CHECK(xdev_wait(&s, NULL) == XDEV_OK && same(in, sizeof in, 5));
}

/* More eager data than the unexpected limit, in order: the core defers
 * what it will not buffer, and the loop holds its queue until a receive
 * gives the deferred message a place. */
static void check_deferral(xdev_t *dev)
{
    enum { N = 40 };
    static uint8_t out[N][EAGER], in[N][EAGER];
    xdev_request_t s[N];
    for (int i = 0; i < N; i++) {
        fill(out[i], EAGER, (unsigned)i);
        CHECK(xdev_isend(dev, out[i], EAGER, 0, 6, 0, &s[i]) == XDEV_OK);
    }
    for (int i = 0; i < 20; i++)
        xdev_progress(dev);
    CHECK(xdev_unexpected_bytes(dev) <= UX_LIMIT);
    for (int i = 0; i < N; i++) {
        xdev_status_t st;
        CHECK(xdev_recv(dev, in[i], EAGER, 0, 6, 0, &st) == XDEV_OK && st.count == EAGER);
        CHECK(same(in[i], EAGER, (unsigned)i));
    }
    for (int i = 0; i < N; i++)
        CHECK(xdev_wait(&s[i], NULL) == XDEV_OK);
    CHECK(xdev_unexpected_peak(dev) <= UX_LIMIT);
}

/* xdev_core_posted_from counts the receives posted that name the peer:
 * those from any source are not, and one taken by its message, or
 * cancelled, leaves the count. */
static void check_posted_from(xdev_t *dev)
{
    uint8_t out = 7, in[3];
    xdev_request_t any, r[2], s;
    CHECK(!xdev_core_posted_from(dev, 0));
    CHECK(xdev_irecv(dev, &in[2], 1, XDEV_ANY_SOURCE, 9, 0, &any) == XDEV_OK);
    CHECK(!xdev_core_posted_from(dev, 0));
    for (int i = 0; i < 2; i++)
        CHECK(xdev_irecv(dev, &in[i], 1, 0, 8, 0, &r[i]) == XDEV_OK);
    CHECK(xdev_core_posted_from(dev, 0));
    CHECK(xdev_send(dev, &out, 1, 0, 8, 0) == XDEV_OK && xdev_wait(&r[0], NULL) == XDEV_OK);
    CHECK(xdev_core_posted_from(dev, 0));
    xdev_status_t st;
    CHECK(xdev_cancel(&r[1]) == XDEV_OK && xdev_wait(&r[1], &st) == XDEV_OK &&
          st.error == XDEV_ERR_CANCELED);
    CHECK(!xdev_core_posted_from(dev, 0));
    CHECK(xdev_isend(dev, &out, 1, 0, 9, 0, &s) == XDEV_OK && xdev_wait(&any, NULL) == XDEV_OK &&
          xdev_wait(&s, NULL) == XDEV_OK);
    CHECK(!xdev_core_posted_from(dev, 0) && in[0] == 7 && in[2] == 7);
}

/* A wakeup after a blocking call began, but before it waits (while it
 * waited for the device lock, or posted), ends that call: the call marks
 * the wakeup count on entry (wake_mark) and its wait compares with the
 * mark. Taken here through xdev_recv's own steps, since no thread can be
 * stopped between them from outside; a receive begun after the wakeup
 * then blocks as usual. */
static void check_wakeup_at_entry(xdev_t *dev)
{
    uint8_t out[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, in[8];
    xdev_request_t req, s;
    xdev_status_t st;
    unsigned mark = wake_mark(dev);
    CHECK(xdev_wakeup(dev) == XDEV_OK);
    CHECK(wait_result(post_recv(dev, in, sizeof in, 0, 8, 0, &req, F_PRIVATE, 0), &req, &st,
                      mark) == XDEV_ERR_WOKEN);
    CHECK(st.error == XDEV_ERR_CANCELED && st.count == 0);
    CHECK(xdev_isend(dev, out, sizeof out, 0, 8, 0, &s) == XDEV_OK);
    CHECK(xdev_recv(dev, in, sizeof in, 0, 8, 0, &st) == XDEV_OK && st.count == sizeof in);
    CHECK(xdev_wait(&s, NULL) == XDEV_OK && !memcmp(in, out, sizeof in));
}

int main(void)
{
    xdev_transport_add(&xdev_loop_ops);
    xdev_config_t cfg;
    xdev_config_init(&cfg);
    cfg.rank = 0;
    cfg.size = 1;
    cfg.transport = "loop";
    cfg.eager_limit = EAGER;
    cfg.unexpected_limit = UX_LIMIT;
    xdev_t *dev;
    int rc = xdev_init(&cfg, &dev);
    CHECK(rc == XDEV_OK);
    if (rc != XDEV_OK)
        return 1;
    CHECK(!strcmp(xdev_peer_transport(dev, 0), "loop")); /* not the core's "self" */
    static const size_t sizes[] = { 0, 1, 8, EAGER - 1, EAGER, EAGER + 1, 64 * 1024, 1 << 20 };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int order = 0; order < 4; order++)
            check_one(dev, sizes[i], order & 1, order & 2);
    check_truncation(dev, 200);
    check_truncation(dev, 100 * 1024);
    check_vector(dev);
    check_deferral(dev);
    check_posted_from(dev);
    check_wakeup_at_entry(dev);
    xdev_stats_t stats;
    CHECK(xdev_stats(dev, &stats) == XDEV_OK && stats.self_msgs == 0 && stats.rendezvous_sent > 0);
    CHECK(xdev_finalize(dev) == XDEV_OK);
    if (failures)
        fprintf(stderr, "%d checks failed\n", failures);
    return failures != 0;
}
