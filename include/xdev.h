/*
 * xdev.h - the xdev point-to-point transport device.
 *
 * xdev is the layer under a message-passing library: it moves tagged
 * messages between the ranks of a job over the best transport it has
 * (shared memory within a host; TCP, InfiniBand/RoCE or libfabric between
 * hosts) and offers exactly what an MPI or MPJ device needs:
 *
 *   xdev_init      xdev_finalize
 *   xdev_isend     xdev_issend    xdev_irecv
 *   xdev_send      xdev_ssend     xdev_recv
 *   xdev_wait      xdev_test
 *   xdev_iprobe    xdev_probe     xdev_peek
 *
 * plus a handful of accessors (xdev_rank, xdev_size, xdev_strerror,
 * xdev_version, xdev_config_init).
 *
 * Conventions that hold for every call:
 *  - Every call returns an int error code: XDEV_OK (0) or a negative
 *    XDEV_ERR_*. xdev_strerror() turns one into text. No call aborts the
 *    process or prints anything.
 *  - A call that returns XDEV_ERR_ARG has changed nothing: no request was
 *    posted, no output argument was written.
 *  - Out of memory: a call that returns XDEV_ERR_NOMEM has changed nothing
 *    either, and may be retried. A receive takes at its post what it will
 *    need to answer its sender, so a posted receive never fails for want
 *    of memory. Memory that runs out while a message arrives that no
 *    receive was posted for fails the link to its sender: requests that
 *    involve it fail with XDEV_ERR_PEER on both sides, as if it had died.
 *    A process out of file descriptors takes no peer for dead for it:
 *    reaching a peer it has not yet talked to is tried again until the
 *    peer timeout (xdev_config_t.peer_timeout_ms), and only then do the
 *    requests to that peer fail with XDEV_ERR_PEER.
 *  - A single copy (process_vm_readv/writev, RDMA) the system refuses
 *    after it had worked is not an error: the message is streamed instead.
 *  - Buffers are a pointer and a size_t byte count; a NULL pointer is
 *    accepted only with a count of 0.
 *  - Tags and contexts are non-negative ints. Matching is on (source, tag,
 *    context); receives may use XDEV_ANY_SOURCE and XDEV_ANY_TAG, never a
 *    wildcard context. Messages from one sender to one receiver in one
 *    context are received in the order they were sent (non-overtaking), and
 *    among several matching receives the one posted first wins.
 *  - Thread safety: unless the device was created with XDEV_FLAG_SINGLE_THREAD,
 *    any thread may call any function on it at any time. Calls on different
 *    devices never interfere.
 *  - Signals: a signal caught while a call is inside a system call, also
 *    with a handler installed without SA_RESTART (a profiler's timer, a
 *    runtime's own signals), neither fails the call nor cuts it short: a
 *    blocking call returns when what it waits for comes, its timeout
 *    passes or xdev_wakeup is called, as without the signal.
 *  - fork: a child forked while a device is open must not call anything on
 *    that device, xdev_finalize included. It may exec, exit or run on
 *    without it; the parent's device goes on as before, and so do the
 *    parent's munmaps of buffers it sent or received, also after
 *    xdev_finalize.
 *  - A peer that dies fails exactly the requests that involve it (sends to
 *    it, receives naming it, receives that had matched one of its messages)
 *    with XDEV_ERR_PEER; the device stays usable for everyone else.
 *  - The prefix rule: what a receiver gets from a sender that died is a
 *    prefix of what it sent. Its whole messages stay receivable, in the
 *    order it sent them, up to the first one that can no longer be
 *    completed (a rendezvous whose data had not all arrived, or a message
 *    only partly received). The receive that matches that message, whether
 *    it names the sender or is a wildcard, fails with XDEV_ERR_PEER
 *    (status.source and status.tag name the message, status.count is 0),
 *    and so does every later receive naming the sender, and every receive
 *    that had matched a later message of it (held back, as below; each
 *    names its own message); nothing it sent after that message is
 *    delivered once the death is known. To keep this, the receives of one
 *    sender's messages complete in the order the messages arrived: a
 *    receive whose message arrived behind a rendezvous from the same
 *    sender that a receive has matched completes after that rendezvous
 *    has. A rendezvous no receive has matched yet holds nothing back (a
 *    program may receive a sender's messages in any order of tags), so a
 *    later message received while the sender lived stays received if the
 *    sender then dies before that rendezvous is. So does a later message
 *    claimed by a matched probe whose data had all arrived when the sender
 *    died: its handle still receives it, unless a message of that sender
 *    matched or claimed before it could not be completed.
 *    A send's completion is the sender's own (buf may be reused), not
 *    delivery: a message whose sender died before its head or rendezvous
 *    offer reached the receiver (over tcp: in the sender's own buffer or
 *    still in its socket), whether or not that send had completed, never
 *    arrives: the sender's stream ends before it, with no lost marker.
 *    Only a synchronous send's completion says that a receive matched the
 *    message.
 */
#ifndef XDEV_H
#define XDEV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Symbols of the shared library; everything else in it is hidden. */
#if defined(__GNUC__)
#define XDEV_API __attribute__((visibility("default")))
#else
#define XDEV_API
#endif

#define XDEV_VERSION_MAJOR 0
#define XDEV_VERSION_MINOR 1
#define XDEV_VERSION_PATCH 0

/* Wildcards for the source and tag of a receive or probe. */
#define XDEV_ANY_SOURCE (-1)
#define XDEV_ANY_TAG (-1)

/* Error codes. Every call returns one of these. */
enum {
    XDEV_OK = 0,
    XDEV_ERR_ARG = -1,       /* bad argument; nothing was changed */
    XDEV_ERR_NOMEM = -2,     /* out of memory */
    XDEV_ERR_TRUNCATE = -3,  /* message longer than the receive buffer */
    XDEV_ERR_PEER = -4,      /* the peer died, left, or broke the protocol */
    XDEV_ERR_CANCELED = -5,  /* request cancelled by xdev_cancel, or
                              * abandoned by xdev_finalize */
    XDEV_ERR_INIT = -6,      /* bad or missing configuration, bootstrap failed */
    XDEV_ERR_SYSTEM = -7,    /* an operating system call failed unexpectedly */
    XDEV_ERR_TOO_LATE = -8,  /* xdev_cancel: the request has begun and will
                              * complete as usual */
    XDEV_ERR_TIMEOUT = -9,   /* xdev_peek_timed: nothing completed in time */
    XDEV_ERR_WOKEN = -10,    /* a blocked call returned because of
                              * xdev_wakeup */
    XDEV_ERR_PEER_PENDING = -11, /* a wildcard-source receive or probe
                              * failed because a rank that could have
                              * sent it died (XDEV_FLAG_WILDCARD_FAILS) */
    XDEV_ERR_BUSY = -12,     /* xdev_arm: work is waiting; call
                              * xdev_progress before sleeping */
};

/* Flags for xdev_config_t.flags. */
enum {
    /* The caller promises to use the device from one thread at a time;
     * xdev then takes no locks. */
    XDEV_FLAG_SINGLE_THREAD = 1u << 0,
    /* Run a progress thread that advances transfers while the application
     * computes. Without it, progress happens inside xdev calls. A thread
     * needs the locks: with XDEV_FLAG_SINGLE_THREAD, xdev_init fails
     * with XDEV_ERR_ARG. */
    XDEV_FLAG_PROGRESS_THREAD = 1u << 1,
    /* When a peer dies, every receive from XDEV_ANY_SOURCE posted at that
     * moment fails with XDEV_ERR_PEER_PENDING, as ULFM's
     * MPI_ERR_PROC_FAILED_PENDING: the caller learns that a sender it may
     * have waited for is gone (xdev_peer_state says which) and posts
     * again if it wants. So does every xdev_probe and xdev_mprobe from
     * XDEV_ANY_SOURCE blocked at that moment. A peer that finalized
     * counts: it can send no more either. Receives posted and probes
     * begun later are not failed by that death (a thread that looked at
     * xdev_peer_state before posting may miss a death another thread's
     * call noticed in between: wait with a deadline, or xdev_wakeup).
     * The failed receive's status is as posted (source XDEV_ANY_SOURCE,
     * its tag and ctx) with count 0; so is the failed probe's. So that
     * every death is seen, the first wildcard receive or probe (also
     * xdev_iprobe) makes the device reach every peer (over tcp, a
     * connection to each). Without the flag a wildcard receive is never
     * failed by one peer's death. */
    XDEV_FLAG_WILDCARD_FAILS = 1u << 2,
};

/* An opaque device: one rank's endpoint in a job. */
typedef struct xdev xdev_t;

/*
 * Configuration for xdev_init. Initialise with xdev_config_init(), which
 * fills in every field from the environment (see the README's table of
 * XDEV_* variables) or from the defaults, then override what you need.
 */
typedef struct xdev_config {
    /* The size of this struct as the caller was compiled, set by
     * xdev_config_init. It is first and stays first: fields a later xdev
     * adds go at the end, and a caller built against an older, smaller
     * struct keeps working (the fields it does not know take their
     * defaults). A larger struct from a newer caller is accepted if the
     * part this xdev does not know is all zero bytes. */
    size_t struct_size;
    int rank;                /* this process's rank, 0 <= rank < size */
    int size;                /* number of ranks in the job */
    /* Optional explicit peer table of `size` entries, IBVX style: entry i is
     * "host:port" where rank i listens. NULL means the addresses are found
     * through the launcher's bootstrap directory (XDEV_BOOT_DIR). */
    const char *const *peers;
    const char *transport;   /* "auto" or "tcp" */
    const char *job_secret;  /* shared by every rank of the job; a
                              * connection that cannot prove it knows this is
                              * dropped. At least 16 characters. */
    size_t eager_limit;      /* largest message sent eagerly (the PSL);
                              * larger ones use rendezvous */
    size_t unexpected_limit; /* bytes of unexpected eager data buffered
                              * before senders are slowed down (exceeded
                              * only to reach what a waiting request or
                              * probe needs from the same sender: a reply,
                              * rendezvous data, an ack, or a message a
                              * posted receive or a probe would take;
                              * see the README) */
    int peer_timeout_ms;     /* how long to try to reach a peer that has not
                              * published an address, refuses connections
                              * or does not answer one (stopped or starved
                              * before it first met us: see the README)
                              * before its requests fail with XDEV_ERR_PEER */
    int finalize_timeout_ms; /* how long xdev_finalize waits for active
                              * sends to finish and peers to close */
    unsigned flags;          /* XDEV_FLAG_* */
    /* Transport options for this device alone: NULL, or a NULL-terminated
     * list of "NAME=value" strings, each naming a variable the README's
     * Environment table marks as an option (XDEV_SHM_RING=4m,
     * XDEV_OFI_PROVIDER=verbs;ofi_rxm, ...). A name given here overrides
     * the environment's variable; the options not given still come from
     * the environment. xdev_init reads both once and copies what it keeps,
     * so the strings may go when it returns, and later changes to the
     * environment do not reach the device. xdev_init fails with
     * XDEV_ERR_ARG, starting nothing, on a string without '=', a name that
     * is not an option (the fields above have their own members), or a
     * value the option's type rejects (for a number or a size, an empty
     * one too, though an empty variable counts as unset). A name given
     * twice: the last holds, but each must be valid. A text value (an
     * address, a provider name) is checked by its transport as it opens,
     * which xdev_init does only for a job with a peer it serves: a wrong
     * one then fails xdev_init with XDEV_ERR_INIT. xdev_config_init
     * leaves it NULL. */
    const char *const *options;
} xdev_config_t;

/* The status of a completed request or of a probed message. */
typedef struct xdev_status {
    int source;   /* sender's rank; for a send, the destination's */
    int tag;      /* message tag */
    int ctx;      /* message context */
    int error;    /* XDEV_OK, XDEV_ERR_TRUNCATE, XDEV_ERR_PEER, ... */
    size_t count; /* bytes delivered (receives, probes); for a send its
                   * length, whatever its outcome, but 0 if cancelled */
    size_t msg_len; /* the message's full length: count, unless a receive
                     * was truncated (then count is the buffer's length)
                     * or failed (then count is 0, and msg_len the cut
                     * message's length, or 0 when it took no message;
                     * the buffer may hold the part of the cut message
                     * that came, never more than len or msg_len bytes);
                     * for a send its length, cancelled or not */
} xdev_status_t;

/*
 * A request: caller-allocated storage for one nonblocking operation.
 * From the call that posts it until xdev_wait or xdev_test reaps it, the
 * request belongs to xdev and must not be moved, freed or reused; after it
 * is reaped, xdev never touches it again. `user` is yours: xdev never reads
 * or writes it (bindings use it to find their own object again).
 * Storage need not be zeroed before its first post: xdev refuses to post
 * only into storage that holds an active request. xdev knows its active
 * requests by where they are: a byte copy or a moved request is never one
 * of them, so xdev_wait and xdev_test refuse it with XDEV_ERR_ARG, as they
 * refuse a request that was already reaped, and a post into it is a post
 * into fresh storage (the original is not touched).
 */
typedef struct xdev_request {
    void *user;
    uint64_t opaque_[40];
} xdev_request_t;

/*
 * Fill *cfg from the XDEV_* environment variables, with defaults for what is
 * unset, and set cfg->struct_size. Returns XDEV_ERR_ARG for a NULL cfg and
 * XDEV_ERR_INIT if a variable of these fields is set but malformed (cfg is
 * then left as the defaults); a transport's variables (options) are read,
 * and a malformed one fails xdev_init, when that transport opens. A
 * macro, so that the caller's own sizeof is what is passed; a binding
 * that cannot use it (ctypes, JNA, Panama) calls
 * xdev_config_init_size with the size of its own layout of the struct:
 * exactly that many bytes are written (past the fields this xdev knows,
 * zeros). XDEV_ERR_ARG, writing nothing, if size is smaller than the
 * first release's struct (it ended with flags: offsetof(xdev_config_t,
 * flags) + sizeof(unsigned), 68 bytes on LP64, so any size from there to
 * the options member, padding included, is that layout) or ends inside a
 * field.
 */
XDEV_API int xdev_config_init_size(xdev_config_t *cfg, size_t size);
#define xdev_config_init(cfg) xdev_config_init_size((cfg), sizeof(xdev_config_t))

/*
 * Start a device. cfg == NULL means "everything from the environment", as
 * set by xdevrun. The config is copied; the caller may free it afterwards.
 * Connections to peers are made on first use, not here.
 *
 * Started by a PMIx server instead (Open MPI's mpirun, Slurm's srun
 * --mpi=pmix: PMIX_NAMESPACE and PMIX_RANK set, XDEV_RANK and
 * XDEV_BOOT_DIR not) and with no peer table in cfg, rank, size, job
 * secret and job id come from PMIx, whatever cfg says of them, and the
 * call is collective: it returns once every rank of the job has reached
 * it (two PMIx fences; README, Launching), or fails with XDEV_ERR_INIT
 * when one has not within the peer timeout (it died first). Unless ibv
 * is open, it then drops its own hold on PMIx (PMIx_Finalize; a caller's
 * own PMIx_Init still holds), so that Slurm takes this rank's later death
 * for one rank's, not the step's.
 *
 * A process may start several devices from its launcher (xdevrun or
 * PMIx, no peer table in cfg, two ranks or more), open at once or one
 * after another: the nth such xdev_init of each rank makes one job of its
 * own. Its messages never reach another device, and ranks need not keep
 * in step: a device whose peer is still in its previous device waits for
 * the peer's nth as for a peer slow to start. So every rank makes those
 * calls in the same order. A call that fails with XDEV_ERR_ARG does not
 * count; one that fails otherwise may, so after it the ranks' counts may
 * differ. Under PMIx, a process that starts more than one device holds
 * PMIx itself from before the first to after the last (README, Launching).
 * Errors: XDEV_ERR_ARG (NULL dev, rank or size out of range, secret too
 * short, a struct_size this xdev cannot read: see xdev_config_t),
 * XDEV_ERR_INIT (no rank/size/bootstrap, no secret in a job of two ranks
 * or more, unknown transport, address in use), XDEV_ERR_NOMEM,
 * XDEV_ERR_SYSTEM. A job of one rank (the default of a process started
 * without a launcher) has nobody to prove itself to: it needs no secret,
 * opens no transport, and so never reads its own peer-table entry.
 */
XDEV_API int xdev_init(const xdev_config_t *cfg, xdev_t **dev);

/*
 * Finish with a device. First it keeps driving progress until every active
 * send request has completed (or its peer failed), for at most the
 * configured finalize timeout, and closes connections in order so that no
 * data already sent is lost. Requests not reaped by then (receives that
 * never matched, sends whose receiver never posted a receive, and requests
 * that completed but were never passed to xdev_wait/xdev_test) are
 * abandoned: their buffers are never touched again, their storage may be
 * reused by the caller, and finalize returns XDEV_ERR_CANCELED instead of
 * XDEV_OK. Either way the device is freed. Not to be called while another
 * thread is inside a call on the same device.
 */
XDEV_API int xdev_finalize(xdev_t *dev);

/*
 * Standard-mode nonblocking send of len bytes from buf to rank dst.
 * Completes when buf may be reused, which for a message of at most the
 * eager limit is usually before the call returns (over shared memory, one
 * of 8 KiB or more may instead be read once by its receiver, and then
 * completes when the receiver's progress has read it, receive posted or
 * not: see the README).
 * Errors: XDEV_ERR_ARG (NULL dev/req, NULL buf with len > 0, dst out of
 * range, negative tag or ctx, req still active), XDEV_ERR_NOMEM. A dead
 * peer is never an error of the post: a send to a rank known to be dead
 * is posted and completes at once with status.error == XDEV_ERR_PEER, as
 * a failure found later is reported in the request's status.error (a
 * receive naming such a rank likewise, unless a message of it is still
 * queued: see the prefix rule).
 */
XDEV_API int xdev_isend(xdev_t *dev, const void *buf, size_t len, int dst, int tag, int ctx,
               xdev_request_t *req);

/*
 * Synchronous-mode nonblocking send: as xdev_isend, but the request
 * completes only after the receiver has matched the message with a
 * receive. A matched probe's claim (xdev_improbe) is not yet a receive:
 * the send completes when the claim is received (xdev_imrecv), or when
 * the receiver reads a claimed rendezvous into memory of its own because
 * a later message of the sender came in (see xdev_imrecv). So a rank that
 * waits for its own synchronous send before receiving the claim of it
 * may wait for ever.
 */
XDEV_API int xdev_issend(xdev_t *dev, const void *buf, size_t len, int dst, int tag, int ctx,
                xdev_request_t *req);

/*
 * Nonblocking receive of at most len bytes into buf. src may be
 * XDEV_ANY_SOURCE and tag XDEV_ANY_TAG; ctx may not be a wildcard. A longer
 * message fills the buffer and completes with status.error ==
 * XDEV_ERR_TRUNCATE, status.count == len and status.msg_len the full
 * length; nothing is written past buf + len. A receive from a specific
 * rank fails with XDEV_ERR_PEER if that rank dies with nothing left for
 * it (see the prefix rule above), its status as posted (that source, its
 * tag, XDEV_ANY_TAG if so posted, and ctx) with count and msg_len 0; one
 * that takes the message at which the stream was cut, or had taken a
 * later one held back behind it, names the message it took (its tag,
 * msg_len its length). A wildcard receive is not failed by one peer's
 * death, only by taking such a message.
 * Errors: as xdev_isend, and XDEV_ERR_ARG for a negative tag other than
 * XDEV_ANY_TAG or a source other than XDEV_ANY_SOURCE out of range.
 */
XDEV_API int xdev_irecv(xdev_t *dev, void *buf, size_t len, int src, int tag, int ctx,
               xdev_request_t *req);

/* Blocking forms: post, then xdev_wait. They return the first error of
 * either step, including the request's status.error (XDEV_ERR_TRUNCATE,
 * XDEV_ERR_PEER). st may be NULL for xdev_recv. Woken by xdev_wakeup, a
 * blocking call whose operation has not begun cancels it and returns
 * XDEV_ERR_WOKEN (a receive nothing has matched yet: no message is taken,
 * and xdev_recv's st, when not NULL, holds the cancelled receive's status:
 * error XDEV_ERR_CANCELED, count 0);
 * one that has begun (a send handed to a transport, a matched receive)
 * finishes it first, since its buffer cannot be left to xdev, and returns
 * as if it had not been woken. */
XDEV_API int xdev_send(xdev_t *dev, const void *buf, size_t len, int dst, int tag, int ctx);
XDEV_API int xdev_ssend(xdev_t *dev, const void *buf, size_t len, int dst, int tag, int ctx);
XDEV_API int xdev_recv(xdev_t *dev, void *buf, size_t len, int src, int tag, int ctx,
              xdev_status_t *st);

/*
 * Block until req completes, then reap it: fill *st (which may be NULL) and
 * give the request back to the caller. Returns XDEV_OK when the wait
 * itself worked; the operation's own outcome is st->error. Returns
 * XDEV_ERR_ARG, changing nothing, if req is NULL or not active (never
 * posted, already reaped, or a copy or moved request). When several
 * threads wait on one request, exactly one reaps it and the others return
 * XDEV_ERR_ARG. Returns XDEV_ERR_WOKEN if xdev_wakeup was called while it
 * waited: req is then still active (wait again, test it, or cancel it).
 */
XDEV_API int xdev_wait(xdev_request_t *req, xdev_status_t *st);

/*
 * Check req without blocking (driving progress once). *done is set to 1 if
 * it completed, in which case it is reaped and *st filled (st may be NULL),
 * else to 0. Errors: XDEV_ERR_ARG for NULL req or done, or req not active
 * (as for xdev_wait).
 */
XDEV_API int xdev_test(xdev_request_t *req, int *done, xdev_status_t *st);

/*
 * Is a message matching (src, tag, ctx) waiting to be received? Sets *found
 * to 1 and fills *st (source, tag, ctx, full byte count) if so, else *found =
 * 0. The message stays queued: the next matching receive gets it.
 * Errors: XDEV_ERR_ARG for NULL dev, found or st, or bad src/tag/ctx.
 */
XDEV_API int xdev_iprobe(xdev_t *dev, int src, int tag, int ctx, int *found, xdev_status_t *st);

/* Blocking xdev_iprobe (XDEV_ERR_WOKEN after xdev_wakeup, st untouched).
 * Fails with XDEV_ERR_PEER if src is a specific rank
 * that died with nothing matching left queued from it (*st is then
 * {src, XDEV_ANY_TAG, ctx, XDEV_ERR_PEER, count 0}: no message has tag
 * XDEV_ANY_TAG, which tells it from a cut marker), or if the message it
 * finds is the one at which a dead sender's stream was cut (xdev_iprobe
 * reports that one as found, with st->error == XDEV_ERR_PEER and
 * st->count == 0: the receive that takes it will fail). With
 * XDEV_FLAG_WILDCARD_FAILS, one from XDEV_ANY_SOURCE fails with
 * XDEV_ERR_PEER_PENDING when a peer dies while it waits (*st is then
 * {XDEV_ANY_SOURCE, tag, ctx, XDEV_ERR_PEER_PENDING, count 0}). */
XDEV_API int xdev_probe(xdev_t *dev, int src, int tag, int ctx, xdev_status_t *st);

/*
 * Block until some request posted on dev has completed and not yet been
 * handed out or reaped, and hand out the oldest such completion in *req.
 * Each completion is handed out at most once, also when several threads
 * peek at once. The request stays active until reaped with xdev_wait or
 * xdev_test (which then return at once); a request reaped before it is
 * peeked is never handed out. Errors: XDEV_ERR_ARG for NULL dev or req;
 * XDEV_ERR_WOKEN (nothing handed out) after xdev_wakeup.
 */
XDEV_API int xdev_peek(xdev_t *dev, xdev_request_t **req);

/*
 * ---- Beyond the 13 calls ----
 * What a real MPI, MPJ device or binding needs on top of the core calls,
 * each with the same error contract (a bad argument returns XDEV_ERR_ARG
 * and changes nothing).
 */

/*
 * A message taken out of matching by a matched probe; only xdev_imrecv or
 * xdev_mrecv with this handle can receive it (MPI_Mprobe/MPI_Mrecv, MPJ's
 * iprobeAndFetch). Caller-allocated; need not be initialised. A received
 * handle is zeroed, and a handle used twice (or a copy of a received one)
 * gets XDEV_ERR_ARG. A claimed message that is never received is freed by
 * xdev_finalize.
 */
typedef struct xdev_message {
    uint64_t opaque_[3];
} xdev_message_t;

/*
 * As xdev_iprobe, but a message found is also claimed: removed from
 * matching, so that no other receive or probe sees it, and named by *msg.
 * If what it finds is the message at which a dead sender's stream was cut
 * (see the prefix rule), that marker is consumed instead: *found = 1,
 * *msg is empty, st->error == XDEV_ERR_PEER and the call returns
 * XDEV_ERR_PEER. Errors: as xdev_iprobe, and XDEV_ERR_ARG for a NULL msg.
 */
XDEV_API int xdev_improbe(xdev_t *dev, int src, int tag, int ctx, int *found,
                          xdev_message_t *msg, xdev_status_t *st);

/* Blocking xdev_improbe: waits for a message to claim. XDEV_ERR_PEER (and
 * an empty *msg) if src is a specific rank that died with nothing matching
 * left (st then {src, XDEV_ANY_TAG, ctx, XDEV_ERR_PEER, count 0}, as
 * xdev_probe's), or for a dead sender's cut marker (st then names it: its
 * tag is the cut message's). XDEV_ERR_PEER_PENDING (and an empty *msg)
 * as xdev_probe's from XDEV_ANY_SOURCE. XDEV_ERR_WOKEN after
 * xdev_wakeup, with *msg empty and st untouched. */
XDEV_API int xdev_mprobe(xdev_t *dev, int src, int tag, int ctx, xdev_message_t *msg,
                         xdev_status_t *st);

/*
 * Receive the claimed message *msg into buf, as xdev_irecv would have
 * (truncation, status and the prefix rule alike), and zero *msg. Claims
 * may be received in any order. When a sender's later message is
 * received before its earlier claimed rendezvous, the library first
 * reads that rendezvous's data into memory of its own, outside
 * unexpected_limit (the prefix rule needs it in before the later message
 * completes, and a thread that receives its claims out of order must not
 * wait for itself); the claim's receive is then a copy. If that memory
 * cannot be had, the later message completes at once, and should the
 * sender then die the earlier claim fails with XDEV_ERR_PEER. Errors:
 * XDEV_ERR_ARG for a NULL dev, msg or req, an active req, NULL buf with
 * len > 0, or a handle that is empty, of another device, or received
 * already.
 */
XDEV_API int xdev_imrecv(xdev_t *dev, void *buf, size_t len, xdev_message_t *msg,
                         xdev_request_t *req);
/* Blocking xdev_imrecv; returns the first error, as xdev_recv does. */
XDEV_API int xdev_mrecv(xdev_t *dev, void *buf, size_t len, xdev_message_t *msg,
                        xdev_status_t *st);

/*
 * Cancel an active request if it has not begun: a receive that no message
 * has matched, or a send of which nothing has left and that no receive
 * has matched (today that is a send to one's own rank still waiting for
 * its receive; a send handed to a transport has begun). Returns XDEV_OK
 * when cancelled: the request is complete with status.error ==
 * XDEV_ERR_CANCELED and status.count 0, its buffer is never touched again,
 * and it is reaped with xdev_wait or xdev_test as usual (xdev_peek hands
 * it out too). Returns XDEV_ERR_TOO_LATE when it has begun or completed:
 * it then completes as usual, whole. Never both: a cancelled receive
 * takes no message, so that message stays for the next receive.
 * Errors: XDEV_ERR_ARG for NULL or a request that is not active.
 */
XDEV_API int xdev_cancel(xdev_request_t *req);

/*
 * xdev_peek with a bound: wait at most timeout_ms milliseconds (0: drive
 * progress once and look; -1: forever, as xdev_peek). XDEV_ERR_TIMEOUT
 * when nothing completed in time, XDEV_ERR_WOKEN after xdev_wakeup (*req
 * untouched in both); XDEV_ERR_ARG for NULL dev or req or a timeout below
 * -1.
 */
XDEV_API int xdev_peek_timed(xdev_t *dev, int timeout_ms, xdev_request_t **req);

/*
 * Make every call blocked on dev at this moment (xdev_wait, xdev_peek,
 * xdev_peek_timed, xdev_probe, xdev_mprobe and the blocking forms, each
 * from the moment it is entered) return XDEV_ERR_WOKEN, as described at
 * each; calls entered afterwards block as usual. Safe from any thread
 * and from a signal handler (it takes no lock and keeps errno): Ctrl-C in
 * Python, Thread.interrupt in Java, or a thread that wants to call
 * xdev_finalize once the others have returned.
 * A sleeping caller wakes at once; one busy-polling notices within
 * microseconds. Errors: XDEV_ERR_ARG for NULL dev.
 */
XDEV_API int xdev_wakeup(xdev_t *dev);

/*
 * Vector messages: one message made of up to XDEV_IOV_MAX pieces of
 * memory, sent or received without a packing copy (MPJ's two-section
 * buffers, derived datatypes). On the wire a vector message is an ordinary
 * message of the pieces' total length, in order: a vector send may be
 * received by xdev_irecv and a plain send by xdev_irecvv. A receive fills
 * the pieces in order; a longer message fills all of them and truncates as
 * xdev_irecv does (status.count bytes delivered, status.msg_len the full
 * length, nothing written past any piece, even when the cut falls inside
 * one). Pieces of length 0 are allowed and skipped.
 *
 * The array iov itself, not only the memory it names, must stay valid and
 * unchanged until the request completes (xdev reads it as data moves); the
 * blocking forms return only after that.
 *
 * Errors: as xdev_isend and xdev_irecv, and XDEV_ERR_ARG, changing
 * nothing, for a NULL iov, iovcnt outside 1..XDEV_IOV_MAX, a piece with a
 * NULL base and a non-zero length, or a total length that does not fit in
 * size_t.
 */
#define XDEV_IOV_MAX 64
typedef struct xdev_iov {
    void *base;
    size_t len;
} xdev_iov_t;

XDEV_API int xdev_isendv(xdev_t *dev, const xdev_iov_t *iov, int iovcnt, int dst, int tag,
                         int ctx, xdev_request_t *req);
XDEV_API int xdev_irecvv(xdev_t *dev, const xdev_iov_t *iov, int iovcnt, int src, int tag,
                         int ctx, xdev_request_t *req);
XDEV_API int xdev_sendv(xdev_t *dev, const xdev_iov_t *iov, int iovcnt, int dst, int tag,
                        int ctx);
XDEV_API int xdev_recvv(xdev_t *dev, const xdev_iov_t *iov, int iovcnt, int src, int tag,
                        int ctx, xdev_status_t *st);

/*
 * Event loops (epoll, libuv, asyncio, Java NIO selectors):
 *
 *   int fd = xdev_fd(dev);                 once; add fd to the loop
 *   for (;;) {
 *       while (xdev_progress(dev) > 0)     drive transfers ...
 *           ;
 *       ... xdev_test or xdev_testsome the requests the loop waits for ...
 *       if (xdev_arm(dev) == XDEV_OK)      nothing pending: safe to sleep
 *           poll(&(struct pollfd){ fd, POLLIN }, 1, timeout);
 *   }
 *
 * xdev_progress drives every transport once without blocking: arrivals
 * are matched, sends move on, requests complete. It returns 1 if anything
 * arrived, was sent or completed, 0 if not, XDEV_ERR_ARG for NULL dev.
 *
 * xdev_fd returns a file descriptor that becomes readable when a call on
 * dev may have work (XDEV_ERR_ARG for NULL dev, XDEV_ERR_SYSTEM if one
 * cannot be made). It is the device's, the same on every call, valid until
 * xdev_finalize; do not read it or close it, only poll it, level- or
 * edge-triggered (EPOLLET, as mio and tokio): every event after
 * xdev_arm is a new edge.
 *
 * xdev_arm is the step before each sleep. XDEV_OK: from now on anything
 * that arrives for dev, frees room for its sends or ends a peer makes fd
 * readable, so no event is lost between the caller's last look and its
 * poll. XDEV_ERR_BUSY: a transport has work already; call xdev_progress
 * and arm again. XDEV_ERR_ARG for NULL dev or before xdev_fd. Arming
 * consumes what made fd readable last time, so arm before every poll,
 * not once. Arming costs a few system calls; being armed costs peers on
 * this host a doorbell write per message until the next xdev_progress
 * (or any other call that drives progress) disarms: call it promptly
 * after waking. fd also becomes readable after at most 100 ms while
 * armed (1 ms with a libfabric provider that has no wait object), so that
 * timeouts (xdev_config_t.peer_timeout_ms) keep running in an idle loop; that
 * wakeup finds no work and costs microseconds.
 *
 * A completed request does not make fd readable by itself: after
 * xdev_progress, look at the requests (xdev_test, xdev_testsome, or
 * xdev_peek_timed with timeout 0) before arming, in that order: with a
 * progress thread, a request it completes between a look and the next
 * xdev_progress is seen by neither the look nor xdev_arm, and waits for
 * the armed fd's timed wakeup. Thread-safe as every call; one thread per
 * device should own the loop. Other threads may use the device beside
 * it, and a progress thread (XDEV_FLAG_PROGRESS_THREAD) may run: they
 * read the transports themselves, so xdev_arm returns XDEV_ERR_BUSY when
 * any call moved something since the loop's last xdev_progress, and once
 * armed, whatever another thread's call receives, sends or completes
 * makes fd readable.
 */
XDEV_API int xdev_progress(xdev_t *dev);
XDEV_API int xdev_fd(xdev_t *dev);
XDEV_API int xdev_arm(xdev_t *dev);

/*
 * Many requests with one progress pass (MPI_Testsome, Waitany, Waitsome):
 * reqs holds n pointers to requests of one device; NULL entries are
 * skipped (as MPI_REQUEST_NULL). Every request found complete is reaped:
 * its index goes to idx[k] and its status to st[k] (st may be NULL), for
 * k < *outcount, in index order. idx needs room for n entries (st too).
 * xdev_testsome drives progress once and never blocks (*outcount may be
 * 0); xdev_waitsome blocks until at least one has completed. With no
 * non-NULL entry, *outcount = 0 at once. Errors: XDEV_ERR_ARG, changing
 * nothing, for n < 0, a NULL outcount (or reqs or idx with n > 0), an entry
 * that is not an active request, a request listed twice, or requests of
 * different devices;
 * xdev_waitsome returns XDEV_ERR_WOKEN (*outcount = 0) after xdev_wakeup.
 * With more than 64 entries they may return XDEV_ERR_NOMEM, changing
 * nothing: each notes which request every entry held when it began.
 * A request another thread reaps while xdev_waitsome waits is not reaped
 * again: xdev_waitsome returns what it reaped, or, if that was nothing,
 * XDEV_ERR_ARG, as the losing waiter of xdev_wait (and as every
 * XDEV_ERR_ARG, writing nothing, *outcount included).
 */
XDEV_API int xdev_testsome(int n, xdev_request_t *const *reqs, int *outcount, int *idx,
                           xdev_status_t *st);
XDEV_API int xdev_waitsome(int n, xdev_request_t *const *reqs, int *outcount, int *idx,
                           xdev_status_t *st);

/* What this device knows of a rank (xdev_peer_state). */
enum {
    XDEV_PEER_UNKNOWN = 0, /* nothing has arrived from it yet */
    XDEV_PEER_ALIVE = 1,   /* a message from it has arrived (or it is us) */
    XDEV_PEER_DEAD = 2,    /* it died, left, or broke the protocol: every
                            * request naming it fails with XDEV_ERR_PEER */
};

/* XDEV_PEER_* for rank, or XDEV_ERR_ARG for a NULL dev or a rank out of
 * range. A dead rank stays dead. */
XDEV_API int xdev_peer_state(xdev_t *dev, int rank);

/*
 * Counters of a device, for tools and tuning (xdev-bench, an MPI's
 * MPI_T). Like xdev_config_t, the struct says its own size: call
 * xdev_stats (a macro passing the caller's sizeof) or, from an FFI,
 * xdev_stats_size with the size of its own layout; exactly that many
 * bytes are written. Messages are the caller's messages (a rendezvous
 * counts once, with its whole length), by the transport that carried
 * them; messages to oneself are counted apart.
 */
#define XDEV_STATS_MAX_TRANSPORTS 4
typedef struct xdev_stats {
    size_t struct_size;          /* set by xdev_stats */
    int ntransports;             /* entries of transport[] in use */
    struct xdev_stats_transport {
        char name[16];           /* "shm", "tcp", "ibv", "ofi" */
        uint64_t msgs_sent, bytes_sent;
        uint64_t msgs_received, bytes_received;
    } transport[XDEV_STATS_MAX_TRANSPORTS];
    uint64_t self_msgs;          /* sends to one's own rank, counted
                                  * when posted (cancelled ones too) */
    uint64_t rendezvous_sent;    /* messages sent by rendezvous */
    uint64_t rendezvous_received;
    size_t unexpected_bytes;     /* unexpected-message memory held now */
    size_t unexpected_peak;      /* the most it ever held */
    int peers_dead;              /* ranks seen dead */
} xdev_stats_t;

/* Fill *stats (see xdev_stats_t). XDEV_ERR_ARG for a NULL dev or stats or
 * a size smaller than this release's struct. */
XDEV_API int xdev_stats_size(xdev_t *dev, xdev_stats_t *stats, size_t size);
#define xdev_stats(dev, stats) xdev_stats_size((dev), (stats), sizeof(xdev_stats_t))

/* Accessors. */
XDEV_API int xdev_rank(const xdev_t *dev); /* this process's rank, or XDEV_ERR_ARG */
XDEV_API int xdev_size(const xdev_t *dev); /* number of ranks, or XDEV_ERR_ARG */
XDEV_API const char *xdev_strerror(int err); /* never NULL */
XDEV_API const char *xdev_version(void);     /* "MAJOR.MINOR.PATCH" */

#ifdef __cplusplus
}
#endif
#endif /* XDEV_H */
