/*
 * fuzz_core.h - the real protocol core on a device of its own, for targets
 * whose parser hands what it read to the core (the tcp frame reader, the
 * shm ring reader, the tcp handshake). A transport's promise is only
 * visible through what it did to the core: bytes placed in receive
 * buffers, messages queued, peers failed; this keeps those where a target
 * can look at them.
 */
#ifndef XDEV_FUZZ_CORE_H
#define XDEV_FUZZ_CORE_H

#include "device.h"
#include "fuzz_check.h"

/* Eager limit of every peer: large enough that a few-KiB input holds
 * several eager messages, small enough that a longer one is refused. */
#define FUZZ_EAGER_LIMIT 1024
#define FUZZ_NRECV 4
#define FUZZ_LATE FUZZ_NRECV /* the receive fuzz_core_catch_up posts */

typedef struct fuzz_core {
    xdev_t *dev;
    xdev_request_t recv[FUZZ_NRECV + 1];
    uint8_t *buf[FUZZ_NRECV + 1];
    bool was_waiting;        /* a receive waited at the last step's end */
    uint64_t *awaited_upto;  /* per peer: its stream read while one waited */
} fuzz_core_t;

/* A device of `size` ranks, this one `rank`, every peer served by (ops,
 * tp), with receives from any source posted for tags 0..FUZZ_NRECV-1 into
 * heap buffers of exactly their length (0, 7, 64, 300 bytes), so that ASan
 * stops a byte placed past one, or placed once its receive ended
 * (fuzz_core_step frees the buffer then). */
void fuzz_core_open(fuzz_core_t *fc, int rank, int size, const xdev_tp_ops_t *ops, xdev_tp_t *tp);

/* A receiver that catches up: one more receive, of any tag, into a heap
 * buffer of exactly its length (200 bytes). It takes the oldest message
 * the core holds, which frees memory or names a buffer for a message the
 * core deferred: either way a deferred transport is resumed, which no
 * input could make happen otherwise. Once per device. */
void fuzz_core_catch_up(fuzz_core_t *fc);

/* Call after each step of the transport (a progress call, a poll, one
 * event): the core may buffer past its unexpected-memory bound only to
 * reach what a waiting receive needs (stream_awaited), so what a peer sent
 * after the last step or arrival in which one waited is held to the
 * bound. The target's receives are posted between steps; the core's own
 * reads of offers start and end within them (fuzz_core.c). */
void fuzz_core_step(fuzz_core_t *fc);

/* Abort unless the core holds only what `received` bytes from outside
 * could have carried: no receive completed with more bytes than its buffer
 * or than came in, no eager message buffered longer than that, and what
 * arrived after the last step in which a receive waited is within the
 * bound. */
void fuzz_core_check(const fuzz_core_t *fc, size_t received);

/* Free the device (its transports are the caller's). */
void fuzz_core_close(fuzz_core_t *fc);

#endif
