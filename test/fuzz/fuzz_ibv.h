/*
 * fuzz_ibv.h - the input of fuzz_ibv_frame.c, which its seed maker
 * (gen_corpus_ibv.c) writes too: a run of receive completions, each
 *   a flags byte (FUZZ_IBV_*),
 *   the immediate data, 4 bytes in network order as the peer sent them
 *   (there even without FUZZ_IBV_IMM, so that every record's header has
 *   one size and a flipped flag keeps the rest of the input in step),
 *   a 16-bit little-endian length, and that many bytes (fewer at the end).
 */
#ifndef XDEV_FUZZ_IBV_H
#define XDEV_FUZZ_IBV_H

#define FUZZ_IBV_IMM 1      /* completed with immediate data */
#define FUZZ_IBV_OTHER_QP 2 /* on a QP of no peer's */
#define FUZZ_IBV_ERROR 4    /* in error: the peer's connection broke */
#define FUZZ_IBV_HDR 7

/* Receive buffers of XDEV_IBV_BUF's least size, so that a message of the
 * eager limit takes two of them. A longer record completes in error, as a
 * send longer than the buffer does. */
#define FUZZ_IBV_BUF 1024

#endif
