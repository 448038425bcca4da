/*
 * gen_corpus.h - what gen_corpus.c shares with the seed makers that need
 * a transport's own header (which cannot be included beside another's:
 * each defines struct xdev_tp).
 */
#ifndef XDEV_GEN_CORPUS_H
#define XDEV_GEN_CORPUS_H

#include <stddef.h>
#include <stdint.h>
#include "wire.h"

/* A message from rank 1 to rank 0 (the targets' peer and self). */
typedef struct msg {
    xdev_head_t h;
    size_t len; /* payload bytes, all 0x5a */
} msg_t;

#define GEN_PAYLOAD_MAX 1024

extern const msg_t msgs[];
extern const int nmsgs;

/* Write a seed: <corpus dir>/<target>/<name>. */
void put(const char *target, const char *name, const void *data, size_t len);

/* A message as every transport carries it: the head, then the payload. */
size_t head_and_payload(uint8_t *out, const msg_t *m);

/* gen_corpus_ofi.c */
void ofi_seeds(void);

/* gen_corpus_ibv.c */
void ibv_seeds(void);

#endif
