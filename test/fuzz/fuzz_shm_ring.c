/*
 * fuzz_shm_ring.c - the shm ring's record reader (shm_rx_poll: read_ring,
 * start_message, fragment) on a ring whose every byte a broken or
 * malicious local peer chose: the input's first byte says at which of
 * the 4 KiB data area's 64-byte lines the reader stands, the rest is laid
 * from there on, wrapping at the end as the ring does.
 *
 * The ring is shared memory the peer writes as it likes, so the reader
 * promises (shm_rx.c) that no control word or length makes it read outside
 * the data area or place more into a receive than the core gave it room
 * for (ASan: both are heap blocks of exactly their size), that it releases
 * only whole records, publishing what it released, that a peer it finds
 * broken is failed, told to the core and told to the peer through the
 * ring's `closed` flag, and that the core never holds more than the ring
 * carried (fuzz_core_check).
 */
#include <stdatomic.h>
#include "fuzz_core.h"
#include "shm.h"

enum { ME = 0, PEER = 1, RING = 4096 };

static void ring_init(shm_rxring_t *r, uint8_t *data, uint64_t head)
{
    r->data = data;
    r->ctl = aligned_alloc(SHM_SPLIT, sizeof *r->ctl);
    FUZZ_CHECK(r->ctl);
    memset(r->ctl, 0, sizeof *r->ctl);
    atomic_store(&r->ctl->head, head);
    r->size = RING;
    r->mask = RING - 1;
    r->head = head;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint64_t start = (uint64_t)(data[0] % (RING / SHM_LINE)) * SHM_LINE;
    xdev_tp_t *tp = calloc(1, sizeof *tp);
    shm_peer_t *p = calloc(1, sizeof *p);
    uint8_t *rx_data = calloc(1, RING), *tx_data = calloc(1, RING);
    FUZZ_CHECK(tp && p && rx_data && tx_data);
    for (size_t i = 1; i < size && i <= RING; i++)
        rx_data[(start + i - 1) % RING] = data[i];
    tp->rank = ME;
    tp->size = 2;
    tp->by_rank = calloc(2, sizeof *tp->by_rank);
    FUZZ_CHECK(tp->by_rank);
    tp->by_rank[PEER] = tp->peers = p;
    tp->npeers = 1;
    tp->bell_fd = tp->epfd = -1;
    tp->cma_min = SIZE_MAX;
    p->rank = PEER;
    p->proven = true;
    p->cma = CMA_BROKEN; /* never copy from an address the input names */
    p->pidfd = p->bell_fd = -1;
    p->seg.hdr = aligned_alloc(SHM_SPLIT, sizeof *p->seg.hdr);
    FUZZ_CHECK(p->seg.hdr);
    memset(p->seg.hdr, 0, sizeof *p->seg.hdr);
    ring_init(&p->rx, rx_data, start);
    p->rx.ctl->eager_limit = FUZZ_EAGER_LIMIT; /* what the peer wrote beside the ring */
    /* our ring to the peer, for the core's answers (SYNC_ACK, RNDZ_REPLY) */
    shm_rxring_t tx_view;
    ring_init(&tx_view, tx_data, 0);
    p->tx = (shm_txring_t){ .data = tx_data, .ctl = tx_view.ctl, .size = RING, .mask = RING - 1,
                            .zeroed = RING };
    shm_ring_set_frags(&p->tx);
    fuzz_core_t fc;
    fuzz_core_open(&fc, ME, 2, &xdev_shm_ops, tp);
    tp->dev = fc.dev;

    for (int i = 0; i < 8 && !p->failed && p->in.state != XDEV_RXMSG_DEFERRED; i++) {
        shm_rx_poll(tp, p);
        fuzz_core_step(&fc);
    }

    FUZZ_CHECK(p->rx.head % SHM_LINE == 0);
    FUZZ_CHECK(atomic_load(&p->rx.ctl->head) == p->rx.head);
    FUZZ_CHECK(p->failed == fc.dev->peers[PEER].dead);
    FUZZ_CHECK(p->failed == (atomic_load(&p->rx.ctl->closed) == 1));
    if (p->in.state == XDEV_RXMSG_PAYLOAD)
        FUZZ_CHECK(p->in.got <= p->in.rx.len);
    /* what was released, and at most one record still being read */
    fuzz_core_check(&fc, p->rx.head - start + RING);

    shm_fail_queue(tp, p);
    fuzz_core_close(&fc);
    free(p->rx.ctl);
    free(p->tx.ctl);
    free(p->seg.hdr);
    free(rx_data);
    free(tx_data);
    free(tp->by_rank);
    free(p);
    free(tp);
    return 0;
}
