/*
 * payloads.h - buffers for unexpected messages' payloads, kept for the
 * next ones.
 *
 * A burst of unexpected eager messages (a window sent ahead of its
 * receives, every member's block of an alltoall) mallocs tens of KiB
 * apiece and frees them all once they are received. glibc gives the top
 * of its heap back to the kernel once more than 128 KiB lie free there
 * (M_TRIM_THRESHOLD), so the next burst faults every page in again, at
 * some 13 us a page on these VMs: an 8-rank alltoall of 64 KiB blocks,
 * everything posted at once, ran 1.9 times slower for it. So freed
 * payloads of PAYLOADS_MIN bytes and more are kept, up to PAYLOADS_BYTES
 * in all, and a new payload takes the last kept buffer that holds it
 * without wasting more than half of it. Kept buffers are plain malloc
 * blocks: whoever holds one may also just free() it.
 */
#ifndef XDEV_PAYLOADS_H
#define XDEV_PAYLOADS_H

#include <stddef.h>

#define PAYLOADS_MIN ((size_t)4 << 10)
#define PAYLOADS_SLOTS 32
#define PAYLOADS_BYTES ((size_t)4 << 20)

typedef struct xdev_payloads {
    struct {
        void *buf;
        size_t cap;
    } kept[PAYLOADS_SLOTS];
    int nkept;
    size_t bytes; /* of the kept buffers together */
} xdev_payloads_t;

/* A buffer of at least len bytes (len > 0), its size in *cap; NULL when
 * memory ran out. */
void *xdev_payload_get(xdev_payloads_t *p, size_t len, size_t *cap);
/* Hand back buf (NULL: nothing), of cap bytes as xdev_payload_get said:
 * kept, or freed. */
void xdev_payload_put(xdev_payloads_t *p, void *buf, size_t cap);
/* Free every kept buffer. */
void xdev_payloads_drain(xdev_payloads_t *p);

#endif
