/*
 * fault_args.c - every bad argument returns the documented error and changes
 * nothing (xdev.h: "A call that returns XDEV_ERR_ARG has changed nothing: no
 * request was posted, no output argument was written").
 *
 * Run as `xdevrun -n 2 fault_args`. Rank 0 makes the bad calls; rank 1 is the
 * peer whose receives prove that no bad send leaked onto the wire: it always
 * receives with XDEV_ANY_SOURCE/XDEV_ANY_TAG, so a send that was wrongly posted
 * before a marker message would arrive instead of the marker (non-overtaking).
 */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 3
#define TAG_GO 1
#define TAG_MARK 2
#define TAG_REPLY 3
#define TAG_LIVE 7
#define LIVE_LEN 1000
#define REPLY_LEN 5000
#define USER_SENTINEL ((void *)(uintptr_t)0x5ca1ab1eu)
#define DEV_SENTINEL ((xdev_t *)(uintptr_t)0xd00dfeedu)

enum { OP_ISEND, OP_ISSEND, OP_IRECV, OP_SEND, OP_SSEND, OP_RECV, OP_COUNT };
static const char *op_name[OP_COUNT] = {"isend", "issend", "irecv", "send", "ssend", "recv"};
#define SENDS ((1u << OP_ISEND) | (1u << OP_ISSEND) | (1u << OP_SEND) | (1u << OP_SSEND))
#define RECVS ((1u << OP_IRECV) | (1u << OP_RECV))

/* Storage for requests handed to failing posts. Never reused, so if a post
 * wrongly succeeds the library still owns valid memory. */
static xdev_request_t bad_reqs[256];
static int n_bad_reqs;

static void status_sentinel(xdev_status_t *st) { memset(st, 0xA5, sizeof *st); }

static int status_untouched(const xdev_status_t *st)
{
    xdev_status_t s;
    status_sentinel(&s);
    return memcmp(&s, st, sizeof s) == 0;
}

static void req_fresh(xdev_request_t *r)
{
    memset(r, 0, sizeof *r);
    r->user = USER_SENTINEL;
}

static int req_untouched(const xdev_request_t *r)
{
    xdev_request_t z;
    req_fresh(&z);
    return memcmp(&z, r, sizeof z) == 0;
}

static int do_op(int op, xdev_t *dev, void *buf, size_t len, int peer, int tag, int ctx,
                 xdev_request_t *req, xdev_status_t *st)
{
    switch (op) {
    case OP_ISEND: return xdev_isend(dev, buf, len, peer, tag, ctx, req);
    case OP_ISSEND: return xdev_issend(dev, buf, len, peer, tag, ctx, req);
    case OP_IRECV: return xdev_irecv(dev, buf, len, peer, tag, ctx, req);
    case OP_SEND: return xdev_send(dev, buf, len, peer, tag, ctx);
    case OP_SSEND: return xdev_ssend(dev, buf, len, peer, tag, ctx);
    default: return xdev_recv(dev, buf, len, peer, tag, ctx, st);
    }
}

/* One bad call: must return XDEV_ERR_ARG, leave the request storage and the
 * status untouched, and post nothing (the request is not active after it). */
static void expect_bad(int line, const char *what, int op, xdev_t *dev, void *buf, size_t len,
                       int peer, int tag, int ctx)
{
    char step[160];
    xdev_request_t *req = &bad_reqs[n_bad_reqs++ % 256];
    xdev_status_t st;
    int rc, done = 12345;

    snprintf(step, sizeof step, "bad %s: %s (line %d)", op_name[op], what, line);
    fault_step(step);
    req_fresh(req);
    status_sentinel(&st);
    rc = do_op(op, dev, buf, len, peer, tag, ctx, req, &st);
    if (rc != XDEV_ERR_ARG) {
        fault_fail(__FILE__, line, "%s: %s(buf=%p, len=%zu, peer=%d, tag=%d, ctx=%d) returned %d (%s), want XDEV_ERR_ARG",
                   what, op_name[op], buf, len, peer, tag, ctx, rc, xdev_strerror(rc));
        return;
    }
    if (op == OP_RECV)
        CHECK(status_untouched(&st), "line %d %s: failing recv wrote its status", line, what);
    if (op == OP_ISEND || op == OP_ISSEND || op == OP_IRECV) {
        CHECK(req_untouched(req), "line %d %s: failing %s wrote the request storage (user=%p)",
              line, what, op_name[op], req->user);
        rc = xdev_test(req, &done, &st);
        CHECK(rc == XDEV_ERR_ARG, "line %d %s: after failing %s, xdev_test on its request returned %d, want XDEV_ERR_ARG (request must not be active)",
              line, what, op_name[op], rc);
        CHECK(done == 12345 && status_untouched(&st), "line %d: xdev_test on inactive request wrote done/status", line);
        CHECK(req->user == USER_SENTINEL, "line %d: user field changed to %p", line, req->user);
    }
}

static void expect_bad_ops(int line, const char *what, unsigned ops, xdev_t *dev, void *buf,
                           size_t len, int peer, int tag, int ctx)
{
    for (int op = 0; op < OP_COUNT; op++)
        if (ops & (1u << op)) expect_bad(line, what, op, dev, buf, len, peer, tag, ctx);
}

static void check_strerror(void)
{
    const int codes[] = {XDEV_OK, XDEV_ERR_ARG, XDEV_ERR_NOMEM, XDEV_ERR_TRUNCATE, XDEV_ERR_PEER,
                         XDEV_ERR_CANCELED, XDEV_ERR_INIT, XDEV_ERR_SYSTEM, 1, 7, -8, -1000,
                         INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *s = xdev_strerror(codes[i]);
        CHECK(s != NULL, "xdev_strerror(%d) returned NULL", codes[i]);
        CHECK(s == NULL || s[0] != '\0', "xdev_strerror(%d) returned an empty string", codes[i]);
    }
    CHECK(xdev_version() != NULL, "xdev_version() returned NULL");
}

/* A bad config must fail with one of the allowed codes and leave *dev alone. */
static void expect_bad_init(int line, const char *what, const xdev_config_t *cfg, int want1, int want2)
{
    xdev_t *dev = DEV_SENTINEL;
    int rc;
    fault_step(what);
    rc = xdev_init(cfg, &dev);
    if (rc == XDEV_OK) {
        fault_fail(__FILE__, line, "xdev_init with %s succeeded, want %s", what, xdev_strerror(want1));
        if (dev && dev != DEV_SENTINEL) xdev_finalize(dev);
        return;
    }
    if (rc != want1 && rc != want2)
        fault_fail(__FILE__, line, "xdev_init with %s returned %d (%s), want %d%s%s", what, rc,
                   xdev_strerror(rc), want1, want2 != want1 ? " or " : "",
                   want2 != want1 ? xdev_strerror(want2) : "");
    CHECK(dev == DEV_SENTINEL, "line %d: failing xdev_init (%s) wrote *dev = %p", line, what, (void *)dev);
}

/* xdev_config_t.struct_size: a struct of this release's size or a newer
 * caller's larger one whose unknown tail is zero works; anything smaller,
 * or a tail this release cannot honour, is refused; xdev_config_init_size
 * writes exactly the size it is given. */
static void check_config_size(const xdev_config_t *cfg)
{
    struct newer {
        xdev_config_t known;
        uint64_t added; /* a field a later xdev might add */
    } big;
    struct {
        xdev_config_t c;
        unsigned char guard[16];
    } g;
    xdev_config_t c;
    xdev_t *dev = NULL;

    fault_step("struct_size");
    CHECK(cfg->struct_size == sizeof(xdev_config_t), "xdev_config_init set struct_size %zu, want %zu",
          cfg->struct_size, sizeof(xdev_config_t));
    c = *cfg; c.struct_size = 0;
    expect_bad_init(__LINE__, "struct_size 0", &c, XDEV_ERR_ARG, XDEV_ERR_ARG);
    c = *cfg; c.struct_size = offsetof(xdev_config_t, flags);
    expect_bad_init(__LINE__, "a struct that ends before flags", &c, XDEV_ERR_ARG, XDEV_ERR_ARG);
    CHECK_RC(xdev_config_init_size(&c, 3), XDEV_ERR_ARG);
    /* Half of the options pointer would make a wild one of the default. */
    size_t cut = offsetof(xdev_config_t, options) + sizeof(void *) / 2;
    c = *cfg; c.struct_size = cut;
    expect_bad_init(__LINE__, "a struct that ends inside options", &c, XDEV_ERR_ARG, XDEV_ERR_ARG);
    memset(&g, 0xa5, sizeof g);
    CHECK_RC(xdev_config_init_size(&g.c, cut), XDEV_ERR_ARG);
    for (size_t i = 0; i < sizeof g; i++)
        CHECK(((unsigned char *)&g)[i] == 0xa5, "a refused xdev_config_init_size wrote byte %zu",
              i);

    /* The first release's struct ended at flags: its options, past its
     * struct_size, are never read (here they point nowhere). */
    memset(&g, 0xa5, sizeof g);
    CHECK_RC(xdev_config_init_size(&g.c, offsetof(xdev_config_t, options)), XDEV_OK);
    CHECK(((unsigned char *)&g.c.options)[0] == 0xa5, "xdev_config_init_size wrote past its size");
    g.c.rank = 0;
    g.c.size = 1;
    REQUIRE_RC(xdev_init(&g.c, &dev), XDEV_OK);
    CHECK(xdev_size(dev) == 1, "the first release's struct: size not read");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    dev = NULL;

    memset(&g, 0xa5, sizeof g);
    CHECK_RC(xdev_config_init_size(&g.c, sizeof g.c), XDEV_OK);
    for (size_t i = 0; i < sizeof g.guard; i++)
        CHECK(g.guard[i] == 0xa5, "xdev_config_init_size wrote byte %zu past the struct", i);

    memset(&big, 0xa5, sizeof big);
    CHECK_RC(xdev_config_init_size(&big.known, sizeof big), XDEV_OK);
    CHECK(big.known.struct_size == sizeof big && big.added == 0,
          "a newer caller's struct: struct_size %zu (want %zu), unknown tail %llx (want 0)",
          big.known.struct_size, sizeof big, (unsigned long long)big.added);
    /* a job of one, so that this device publishes nothing the peer sees */
    big.known.rank = 0;
    big.known.size = 1;
    REQUIRE_RC(xdev_init(&big.known, &dev), XDEV_OK);
    CHECK(xdev_size(dev) == 1, "the newer caller's size was not read");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    big.added = 1;
    expect_bad_init(__LINE__, "a nonzero field this release does not know", &big.known,
                    XDEV_ERR_ARG, XDEV_ERR_ARG);
}

/* A malformed variable makes xdev_config_init fail, leaving the defaults
 * (a transport name outside the table's list too, as a size that is not
 * one). */
static void check_malformed_env(const char *name, const char *value)
{
    const char *old = getenv(name);
    char *saved = old ? strdup(old) : NULL;
    xdev_config_t cfg;
    setenv(name, value, 1);
    CHECK(xdev_config_init(&cfg) == XDEV_ERR_INIT, "%s=%s: xdev_config_init did not fail", name,
          value);
    CHECK(!strcmp(cfg.transport, "auto") && cfg.size == 1, "%s=%s: cfg is not the defaults",
          name, value);
    if (saved) setenv(name, saved, 1); else unsetenv(name);
    free(saved);
}

static void check_bad_init(void)
{
    xdev_config_t cfg, c;
    xdev_t *dev = DEV_SENTINEL;

    CHECK_RC(xdev_config_init(NULL), XDEV_ERR_ARG);
    check_malformed_env("XDEV_EAGER_LIMIT", "banana");
    check_malformed_env("XDEV_TRANSPORT", "bogus");

    REQUIRE_RC(xdev_config_init(&cfg), XDEV_OK);
    REQUIRE(cfg.size == 2, "config from the environment has size %d, want 2", cfg.size);
    CHECK_RC(xdev_init(&cfg, NULL), XDEV_ERR_ARG);
    CHECK_RC(xdev_init(NULL, NULL), XDEV_ERR_ARG);
    CHECK(dev == DEV_SENTINEL, "dev changed");

    c = cfg; c.size = 0;
    expect_bad_init(__LINE__, "size 0", &c, XDEV_ERR_ARG, XDEV_ERR_INIT);
    c = cfg; c.flags = XDEV_FLAG_SINGLE_THREAD | XDEV_FLAG_PROGRESS_THREAD;
    expect_bad_init(__LINE__, "a progress thread without locks", &c, XDEV_ERR_ARG, XDEV_ERR_ARG);
    c = cfg; c.flags = 1u << 30;
    expect_bad_init(__LINE__, "an unknown flag", &c, XDEV_ERR_ARG, XDEV_ERR_ARG);
    c = cfg; c.size = -1;
    expect_bad_init(__LINE__, "size -1", &c, XDEV_ERR_ARG, XDEV_ERR_INIT);
    c = cfg; c.rank = c.size;
    expect_bad_init(__LINE__, "rank == size", &c, XDEV_ERR_ARG, XDEV_ERR_ARG);
    c = cfg; c.rank = c.size + 5;
    expect_bad_init(__LINE__, "rank > size", &c, XDEV_ERR_ARG, XDEV_ERR_ARG);
    c = cfg; c.rank = -1;
    expect_bad_init(__LINE__, "rank -1", &c, XDEV_ERR_ARG, XDEV_ERR_ARG);
    c = cfg; c.job_secret = "short";
    expect_bad_init(__LINE__, "5-character secret", &c, XDEV_ERR_ARG, XDEV_ERR_ARG);
    c = cfg; c.job_secret = "0123456789abcde";
    expect_bad_init(__LINE__, "15-character secret", &c, XDEV_ERR_ARG, XDEV_ERR_ARG);
    c = cfg; c.job_secret = NULL;
    expect_bad_init(__LINE__, "NULL secret", &c, XDEV_ERR_INIT, XDEV_ERR_ARG);
    c = cfg; c.transport = "no-such-transport";
    expect_bad_init(__LINE__, "unknown transport", &c, XDEV_ERR_INIT, XDEV_ERR_INIT);
    check_config_size(&cfg);
}

/* NULL dev everywhere; NULL request, status, found, done pointers. */
static void check_null_pointers(xdev_t *dev)
{
    char buf[16] = {0};
    xdev_status_t st;
    xdev_request_t *rp = (xdev_request_t *)(uintptr_t)0x1;
    int found = 777, done = 777;

    fault_step("NULL pointers");
    for (int op = 0; op < OP_COUNT; op++)
        expect_bad(__LINE__, "NULL dev", op, NULL, buf, sizeof buf, 1, 5, CTX);
    status_sentinel(&st);
    CHECK_RC(xdev_iprobe(NULL, 1, 5, CTX, &found, &st), XDEV_ERR_ARG);
    CHECK_RC(xdev_probe(NULL, 1, 5, CTX, &st), XDEV_ERR_ARG);
    CHECK_RC(xdev_peek(NULL, &rp), XDEV_ERR_ARG);
    CHECK(rp == (xdev_request_t *)(uintptr_t)0x1, "failing xdev_peek(NULL dev) wrote *req");
    CHECK_RC(xdev_peek(dev, NULL), XDEV_ERR_ARG);
    CHECK_RC(xdev_rank(NULL), XDEV_ERR_ARG);
    CHECK_RC(xdev_size(NULL), XDEV_ERR_ARG);
    CHECK_RC(xdev_finalize(NULL), XDEV_ERR_ARG);
    CHECK(found == 777 && status_untouched(&st), "failing NULL-dev probe wrote found/status");

    /* NULL request pointer to the nonblocking posts. */
    CHECK_RC(xdev_isend(dev, buf, sizeof buf, 1, 5, CTX, NULL), XDEV_ERR_ARG);
    CHECK_RC(xdev_issend(dev, buf, sizeof buf, 1, 5, CTX, NULL), XDEV_ERR_ARG);
    CHECK_RC(xdev_irecv(dev, buf, sizeof buf, 1, 5, CTX, NULL), XDEV_ERR_ARG);

    /* NULL status / found where required. */
    CHECK_RC(xdev_iprobe(dev, 1, 5, CTX, &found, NULL), XDEV_ERR_ARG);
    CHECK_RC(xdev_iprobe(dev, 1, 5, CTX, NULL, &st), XDEV_ERR_ARG);
    CHECK_RC(xdev_probe(dev, 1, 5, CTX, NULL), XDEV_ERR_ARG);
    CHECK(found == 777 && status_untouched(&st), "failing iprobe wrote found/status");

    /* NULL request to wait/test. */
    CHECK_RC(xdev_wait(NULL, &st), XDEV_ERR_ARG);
    CHECK_RC(xdev_test(NULL, &done, &st), XDEV_ERR_ARG);
    CHECK(done == 777 && status_untouched(&st), "failing wait/test(NULL) wrote done/status");
}

static void check_bad_ranks_tags_ctx(xdev_t *dev, int size)
{
    char buf[16] = {0};
    const int bad_peers[] = {size, size + 1, -2, -3, INT_MAX, INT_MIN};
    const int bad_tags[] = {-2, -100, INT_MIN};
    const int bad_ctxs[] = {-1, -2, INT_MIN};

    fault_step("bad ranks/tags/contexts");
    expect_bad_ops(__LINE__, "NULL buf with len 1", SENDS | RECVS, dev, NULL, 1, 1, 5, CTX);
    expect_bad_ops(__LINE__, "NULL buf with len 4096", SENDS | RECVS, dev, NULL, 4096, 1, 5, CTX);
    for (size_t i = 0; i < sizeof bad_peers / sizeof *bad_peers; i++)
        expect_bad_ops(__LINE__, "peer out of range", SENDS | RECVS, dev, buf, sizeof buf,
                       bad_peers[i], 5, CTX);
    expect_bad_ops(__LINE__, "XDEV_ANY_SOURCE as destination", SENDS, dev, buf, sizeof buf,
                   XDEV_ANY_SOURCE, 5, CTX);
    expect_bad_ops(__LINE__, "XDEV_ANY_TAG in a send", SENDS, dev, buf, sizeof buf, 1,
                   XDEV_ANY_TAG, CTX);
    for (size_t i = 0; i < sizeof bad_tags / sizeof *bad_tags; i++)
        expect_bad_ops(__LINE__, "negative tag", SENDS | RECVS, dev, buf, sizeof buf, 1,
                       bad_tags[i], CTX);
    for (size_t i = 0; i < sizeof bad_ctxs / sizeof *bad_ctxs; i++) {
        expect_bad_ops(__LINE__, "negative or wildcard ctx", SENDS | RECVS, dev, buf, sizeof buf,
                       1, 5, bad_ctxs[i]);
        expect_bad_ops(__LINE__, "wildcard ctx with wildcard source/tag", RECVS, dev, buf,
                       sizeof buf, XDEV_ANY_SOURCE, XDEV_ANY_TAG, bad_ctxs[i]);
    }

    /* Probes with bad src/tag/ctx. */
    for (int k = 0; k < 9; k++) {
        int src = 1, tag = 5, ctx = CTX, found = 777;
        xdev_status_t st;
        if (k < 3) src = (int[]){size, -2, INT_MAX}[k];
        else if (k < 6) tag = bad_tags[k - 3];
        else ctx = bad_ctxs[k - 6];
        status_sentinel(&st);
        CHECK_RC(xdev_iprobe(dev, src, tag, ctx, &found, &st), XDEV_ERR_ARG);
        CHECK(found == 777 && status_untouched(&st), "failing iprobe(%d,%d,%d) wrote found/status", src, tag, ctx);
        CHECK_RC(xdev_probe(dev, src, tag, ctx, &st), XDEV_ERR_ARG);
        CHECK(status_untouched(&st), "failing probe(%d,%d,%d) wrote status", src, tag, ctx);
    }
}

static void check_inactive_requests(void)
{
    xdev_request_t r;
    xdev_status_t st;
    int done = 777;
    fault_step("wait/test on never-posted request");
    req_fresh(&r);
    status_sentinel(&st);
    CHECK_RC(xdev_wait(&r, &st), XDEV_ERR_ARG);
    CHECK_RC(xdev_test(&r, &done, &st), XDEV_ERR_ARG);
    CHECK(req_untouched(&r), "wait/test on a never-posted request wrote it (user=%p)", r.user);
    CHECK(done == 777 && status_untouched(&st), "wait/test on a never-posted request wrote done/status");
}

/* A request that was already reaped is not active: wait/test reject it. */
static void check_reaped(xdev_request_t *r, const char *how)
{
    xdev_status_t st;
    int done = 777;
    status_sentinel(&st);
    CHECK(r->user == USER_SENTINEL, "%s: user field changed to %p", how, r->user);
    CHECK_RC(xdev_wait(r, &st), XDEV_ERR_ARG);
    CHECK_RC(xdev_test(r, &done, &st), XDEV_ERR_ARG);
    CHECK(done == 777 && status_untouched(&st), "%s: wait/test on reaped request wrote done/status", how);
    CHECK(r->user == USER_SENTINEL, "%s: user field changed to %p", how, r->user);
}

static void rank0(xdev_t *dev, int size)
{
    static char live_buf[LIVE_LEN], reply[REPLY_LEN], other[64];
    xdev_request_t live, mark;
    xdev_status_t st;
    int done = 0;

    check_null_pointers(dev);
    check_bad_ranks_tags_ctx(dev, size);
    check_inactive_requests();

    /* A request reused while still active. */
    fault_step("reuse of an active request");
    req_fresh(&live);
    memset(live_buf, 0x5A, sizeof live_buf);
    REQUIRE_RC(xdev_irecv(dev, live_buf, sizeof live_buf, 1, TAG_LIVE, CTX, &live), XDEV_OK);
    CHECK_RC(xdev_isend(dev, other, 10, 1, 8, CTX, &live), XDEV_ERR_ARG);
    CHECK_RC(xdev_issend(dev, other, 10, 1, 8, CTX, &live), XDEV_ERR_ARG);
    CHECK_RC(xdev_irecv(dev, other, sizeof other, 1, 9, CTX, &live), XDEV_ERR_ARG);
    CHECK_RC(xdev_irecv(dev, live_buf, sizeof live_buf, 1, TAG_LIVE, CTX, &live), XDEV_ERR_ARG);
    status_sentinel(&st);
    CHECK_RC(xdev_test(&live, NULL, &st), XDEV_ERR_ARG);
    CHECK(status_untouched(&st), "xdev_test(req, NULL done) wrote the status");
    CHECK(live.user == USER_SENTINEL, "failing reuse changed user to %p", live.user);
    CHECK(live_buf[0] == 0x5A && live_buf[LIVE_LEN - 1] == 0x5A, "receive buffer written before any send");

    /* Release rank 1; it receives with wildcards, so any leaked send shows. */
    REQUIRE_RC(xdev_send(dev, "go", 2, 1, TAG_GO, CTX), XDEV_OK);
    fault_step("wait for the live receive");
    status_sentinel(&st);
    REQUIRE_RC(xdev_wait(&live, &st), XDEV_OK);
    CHECK(st.error == XDEV_OK && st.source == 1 && st.tag == TAG_LIVE && st.ctx == CTX &&
              st.count == LIVE_LEN,
          "live receive status: error %d source %d tag %d ctx %d count %zu", st.error, st.source,
          st.tag, st.ctx, st.count);
    CHECK(fault_verify(live_buf, LIVE_LEN, TAG_LIVE) == (size_t)-1,
          "live receive data wrong at byte %zu", fault_verify(live_buf, LIVE_LEN, TAG_LIVE));
    check_reaped(&live, "reaped by xdev_wait");

    /* A request reaped by xdev_test; a zero-byte send with a NULL buffer. */
    fault_step("reap by xdev_test");
    req_fresh(&mark);
    REQUIRE_RC(xdev_isend(dev, NULL, 0, 1, TAG_MARK, CTX, &mark), XDEV_OK);
    REQUIRE_RC(fault_wait_for(&mark, &st, 20.0, &done), XDEV_OK);
    REQUIRE(done, "zero-byte isend did not complete in 20 s");
    CHECK(st.error == XDEV_OK, "zero-byte isend status.error %d", st.error);
    check_reaped(&mark, "reaped by xdev_test");

    /* The device still works: a valid exchange, recv with st == NULL. */
    fault_step("final exchange");
    memset(reply, 0, sizeof reply);
    REQUIRE_RC(xdev_recv(dev, reply, sizeof reply, 1, TAG_REPLY, CTX, NULL), XDEV_OK);
    CHECK(fault_verify(reply, REPLY_LEN, TAG_REPLY) == (size_t)-1, "reply data wrong");
}

static void rank1(xdev_t *dev)
{
    static char buf[REPLY_LEN];
    xdev_status_t st;

    fault_step("rank 1 waits for go");
    REQUIRE_RC(xdev_recv(dev, buf, sizeof buf, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX, &st), XDEV_OK);
    CHECK(st.source == 0 && st.tag == TAG_GO && st.count == 2 && memcmp(buf, "go", 2) == 0,
          "first message should be 'go' (tag %d) but got source %d tag %d count %zu: a failing call posted a send",
          TAG_GO, st.source, st.tag, st.count);
    fault_fill(buf, LIVE_LEN, TAG_LIVE);
    REQUIRE_RC(xdev_send(dev, buf, LIVE_LEN, 0, TAG_LIVE, CTX), XDEV_OK);

    fault_step("rank 1 waits for marker");
    REQUIRE_RC(xdev_recv(dev, buf, sizeof buf, XDEV_ANY_SOURCE, XDEV_ANY_TAG, CTX, &st), XDEV_OK);
    CHECK(st.source == 0 && st.tag == TAG_MARK && st.count == 0,
          "second message should be the zero-byte marker but got source %d tag %d count %zu",
          st.source, st.tag, st.count);
    fault_fill(buf, REPLY_LEN, TAG_REPLY);
    REQUIRE_RC(xdev_send(dev, buf, REPLY_LEN, 0, TAG_REPLY, CTX), XDEV_OK);
}

int main(void)
{
    xdev_t *dev = NULL;
    int rank, size;
    const char *env_rank = getenv("XDEV_RANK");

    fault_setup("fault-args", 90);
    check_strerror();
    if (env_rank && atoi(env_rank) == 0) check_bad_init();

    fault_step("xdev_init");
    REQUIRE_RC(xdev_init(NULL, &dev), XDEV_OK);
    rank = xdev_rank(dev);
    size = xdev_size(dev);
    REQUIRE(size == 2, "run under xdevrun -n 2 (size %d)", size);
    REQUIRE(env_rank && rank == atoi(env_rank), "xdev_rank %d != XDEV_RANK %s", rank,
            env_rank ? env_rank : "(unset)");
    REQUIRE_RC(fault_barrier(dev), XDEV_OK);

    if (rank == 0) rank0(dev, size);
    else rank1(dev);

    REQUIRE_RC(fault_barrier(dev), XDEV_OK);
    fault_step("xdev_finalize");
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
