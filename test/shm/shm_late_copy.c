/*
 * shm_late_copy.c - a single copy (process_vm_readv/writev) with a peer
 * stops when that peer finalizes: a buffer xdev_finalize abandoned is never
 * touched again, and no receive completes with bytes its sender's buffer
 * held after its send was abandoned. Two ranks; rank 1 sends rank 0 one
 * message, copied once. MODE (argv[1]):
 *
 *   write  (run with XDEV_SHM_CMA_MODE=write: rank 1 writes rank 0's
 *          buffer) rank 0 finalizes once the first bytes have landed,
 *          zeroes its buffer, and checks a while later that it stays
 *          zero; rank 1's send must fail with XDEV_ERR_PEER.
 *   read   (rank 0 reads rank 1's buffer; run with a short
 *          XDEV_FINALIZE_TIMEOUT_MS) rank 0 reads the first piece, then
 *          stops calling xdev until rank 1's finalize has abandoned the
 *          send and rank 1 has filled its buffer with other bytes; rank 0's
 *          receive must then fail with XDEV_ERR_PEER, not complete with
 *          those bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "xdev.h"

#define SENT 0xab
#define REUSED 0xcd

static unsigned char *map_bytes(size_t n, int fill)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    memset(p, fill, n);
    return p;
}

static size_t first_nonzero(const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return i;
    return n;
}

/* Rank 0: post the receive of rank 1's message into a zeroed buffer and
 * return it once its first bytes are in and the rest still to come, or
 * NULL. */
static unsigned char *receive_begun(xdev_t *dev, size_t n, xdev_request_t *req)
{
    unsigned char *buf = map_bytes(n, 0);
    int rc = xdev_irecv(dev, buf, n, 1, 7, 0, req);
    int done = 0;
    while (rc == XDEV_OK && !done && !((volatile unsigned char *)buf)[0])
        rc = xdev_test(req, &done, NULL);
    if (rc != XDEV_OK || done) {
        fprintf(stderr, "rank 0: the copy did not stay under way (%s, done %d)\n",
                xdev_strerror(rc), done);
        return NULL;
    }
    return buf;
}

/* Rank 0 of "write": abandon the receive being written, reuse its buffer. */
static int abandon_written(xdev_t *dev, size_t n)
{
    xdev_request_t req;
    unsigned char *buf = receive_begun(dev, n, &req);
    if (!buf)
        return 1;
    int rc = xdev_finalize(dev);
    if (rc != XDEV_ERR_CANCELED) {
        fprintf(stderr, "rank 0: finalize with a receive under way: %s\n", xdev_strerror(rc));
        return 1;
    }
    memset(buf, 0, n); /* the storage is ours again */
    sleep(2);          /* longer than rank 1 takes to write all of it */
    size_t at = first_nonzero(buf, n);
    if (at < n) {
        fprintf(stderr, "rank 0: the buffer was written after finalize (byte %zu of %zu)\n", at,
                n);
        return 1;
    }
    printf("rank 0: nothing written after finalize\n");
    return 0;
}

/* Rank 0 of "read": read a piece, stall past the sender's finalize. */
static int read_past_abandon(xdev_t *dev, size_t n)
{
    xdev_request_t req;
    unsigned char *buf = receive_begun(dev, n, &req);
    if (!buf)
        return 1;
    sleep(2); /* rank 1's finalize gives up on the send, its buffer is reused */
    xdev_status_t st;
    int rc = xdev_wait(&req, &st);
    if (rc == XDEV_OK)
        rc = st.error;
    size_t reused = 0;
    for (size_t i = 0; i < n; i++)
        reused += buf[i] == REUSED;
    int bad = rc != XDEV_ERR_PEER;
    if (bad)
        fprintf(stderr, "rank 0: the receive ended %s (%zu bytes, %zu of the reused buffer, "
                "last 0x%02x)\n", xdev_strerror(rc), st.count, reused, buf[n - 1]);
    else
        printf("rank 0: the receive failed with XDEV_ERR_PEER\n");
    xdev_finalize(dev);
    return bad;
}

static int sender(xdev_t *dev, size_t n, int write)
{
    unsigned char *buf = map_bytes(n, SENT);
    if (write) {
        int rc = xdev_send(dev, buf, n, 0, 7, 0);
        xdev_finalize(dev);
        if (rc != XDEV_ERR_PEER) {
            fprintf(stderr, "rank 1: a send whose receiver left returned %s\n",
                    xdev_strerror(rc));
            return 1;
        }
        return 0;
    }
    xdev_request_t req;
    int rc = xdev_isend(dev, buf, n, 0, 7, 0, &req);
    if (rc != XDEV_OK)
        return 1;
    rc = xdev_finalize(dev);
    if (rc != XDEV_ERR_CANCELED) {
        fprintf(stderr, "rank 1: finalize did not abandon the send: %s\n", xdev_strerror(rc));
        return 1;
    }
    memset(buf, REUSED, n);
    sleep(4); /* still here, so rank 0 could read us */
    return 0;
}

int main(int argc, char **argv)
{
    int write = argc > 1 && strcmp(argv[1], "write") == 0;
    if (argc < 2 || (!write && strcmp(argv[1], "read") != 0)) {
        fprintf(stderr, "usage: %s write|read\n", argv[0]);
        return 2;
    }
    /* Written: long enough to outlast rank 0's look at it by far. Read:
     * two pieces (XDEV_TP_PASS_BYTES each), so that the second is the
     * last and is read in one call. */
    size_t n = write ? (size_t)512 << 20 : (size_t)8 << 20;
    xdev_t *dev;
    int rc = xdev_init(NULL, &dev);
    if (rc != XDEV_OK) {
        fprintf(stderr, "init: %s\n", xdev_strerror(rc));
        return 1;
    }
    if (xdev_size(dev) != 2)
        return 2;
    if (xdev_rank(dev) == 1)
        return sender(dev, n, write);
    return write ? abandon_written(dev, n) : read_past_abandon(dev, n);
}
