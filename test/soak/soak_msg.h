/*
 * soak_msg.h - what message k of a stream is: its length, tag, context,
 * send mode and every byte, all functions of (seed, source, destination,
 * kind, sender thread, k), so a receiver knows what it must get. The tag
 * carries the sender thread and k, so a message found by a probe says
 * which one it claims to be.
 */
#ifndef SOAK_MSG_H
#define SOAK_MSG_H

#include <stddef.h>
#include <stdint.h>

/* The largest message, and the largest of a K_WILD stream: a wildcard
 * receive must be ready for any of them, so those stay at 1 MiB. */
#define SOAK_MAX_LEN ((size_t)16 << 20)
#define SOAK_WILD_MAX_LEN ((size_t)1 << 20)

/* Bytes past a receive buffer (and past a message in it) that must stay
 * as posted. */
#define SOAK_GUARD 64
#define SOAK_GUARD_BYTE 0xa5

enum soak_mode { M_ISEND, M_ISSEND, M_SEND, M_SSEND };

uint64_t soak_key(int src, int dst, int kind, int t, int k);
size_t soak_len(int kind, uint64_t key);
enum soak_mode soak_mode(uint64_t key);
int soak_ctx(int kind, int t);
int soak_tag(int t, int k);
int soak_tag_thread(int tag);
int soak_tag_seq(int tag);

/* A message's bytes are fault_fill_keyed(key), checked by
 * fault_verify_keyed (fault_util.h), as fault_random_kill's are. */

/* A receive buffer of cap bytes and the guard after it, every byte the
 * guard byte; free() it. */
unsigned char *soak_rbuf(size_t cap);
/* Index of the first byte of buf[from, to) that is not the guard byte, or -1. */
size_t soak_untouched(const unsigned char *buf, size_t from, size_t to);

#endif
