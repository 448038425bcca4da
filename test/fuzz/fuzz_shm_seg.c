/*
 * fuzz_shm_seg.c - the check of a segment header a local peer wrote
 * (shm_seg_header_sane, which map_peer asks before it uses anything of a
 * peer's segment). The input is the mapping's size (32 bits, little-
 * endian; up to 1 MiB), then the segment's first bytes; the rest of the
 * mapping is zeros, as in a new segment. So a few hundred bytes describe a
 * whole segment, and the fuzzer can change its size and its header apart.
 *
 * The peer writes its segment as it likes, so the check promises that a
 * header it accepts describes a segment inside the mapping, laid out as
 * the rest of shm uses it: the senders table, then the ring control
 * blocks, then the data areas, none overlapping the next, the control
 * blocks aligned for their atomics, the data areas on page boundaries,
 * each ring a power of two of at least a page and at most 4 GiB (the
 * ring code masks positions with size - 1 and records count their bytes
 * in 32 bits), and one mapper counted per ring plus the owner (the last
 * one unlinks the name). The target checks each rule on what was
 * accepted, on a mapping that is a heap block of exactly its size, so that
 * ASan stops any read of the check past it.
 */
#include <stddef.h>
#include <string.h>
#include "fuzz_check.h"
#include "shm.h"

enum { OWNER = 1, PAGE = 4096, MAP_MAX = 1 << 20 };

/* n pieces of `each` bytes from off on end by `end`. */
static bool inside(uint64_t off, uint64_t n, uint64_t each, uint64_t end)
{
    uint64_t len;
    return !__builtin_mul_overflow(n, each, &len) && off <= end && len <= end - off;
}

static bool pow2(uint64_t n) { return n && !(n & (n - 1)); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    size_t bytes = xdev_get_le32(data);
    /* map_peer maps nothing shorter than a header */
    if (bytes < sizeof(shm_seg_hdr_t) || bytes > MAP_MAX)
        return 0;
    size_t given = size - 4 < bytes ? size - 4 : bytes;
    void *map;
    FUZZ_CHECK(posix_memalign(&map, _Alignof(shm_seg_hdr_t), bytes) == 0);
    memcpy(map, data + 4, given);
    memset((uint8_t *)map + given, 0, bytes - given);
    const shm_seg_hdr_t *h = map;
    if (shm_seg_header_sane(h, bytes, OWNER)) {
        uint64_t n = h->nrings;
        FUZZ_CHECK(h->version == SHM_VERSION && h->owner_rank == OWNER && h->total_bytes == bytes);
        FUZZ_CHECK(n > 0 && h->nlocal == n + 1);
        FUZZ_CHECK(inside(offsetof(shm_seg_hdr_t, senders), n, sizeof(int32_t), h->ctl_off));
        FUZZ_CHECK(inside(h->ctl_off, n, sizeof(shm_ring_ctl_t), h->data_off));
        FUZZ_CHECK(inside(h->data_off, n, h->ring_bytes, bytes));
        FUZZ_CHECK(h->ctl_off % _Alignof(shm_ring_ctl_t) == 0 && h->data_off % PAGE == 0);
        FUZZ_CHECK(pow2(h->ring_bytes) && h->ring_bytes >= PAGE &&
                   h->ring_bytes <= (uint64_t)1 << 32);
    }
    free(map);
    return 0;
}
