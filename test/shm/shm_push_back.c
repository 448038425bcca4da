/*
 * shm_push_back.c - a receiver that lags buffers one unexpected message
 * per progress call and leaves the rest in the ring, losing nothing.
 *
 * After a round trip, rank 0 sends NMSG small messages that rank 1 has
 * not asked for, then says so through a file in the job's boot directory
 * (a channel beside the one under test). Rank 1 waits for that file
 * without touching xdev, so every message is in its ring, then makes
 * progress calls that match nothing (xdev_iprobe for a tag never sent) until nothing more comes:
 * each must move exactly one message into the unexpected queue, so that
 * what they buffer in all is NMSG times what one call buffers.
 * Draining the ring into buffers instead is what made a lagging receiver
 * (the members of a pipelined broadcast) allocate memory for everything
 * its sender got ahead. Then rank 1 receives all NMSG in order and checks
 * every byte.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "introspect.h"
#include "xdev.h"
#include "../check.h"

#define NMSG 200
#define TAG 3
#define CTX 5
#define NEVER_SENT 99

static void flag_path(char *path, size_t size)
{
    const char *dir = getenv("XDEV_BOOT_DIR");
    snprintf(path, size, "%s/push-back.sent", dir ? dir : "/tmp");
}

/* A round trip first: a ring carries traffic only once its reader has
 * been seen reading it. */
static void sender(xdev_t *dev)
{
    CHECK(xdev_send(dev, NULL, 0, 1, TAG, CTX) == XDEV_OK, "hello");
    CHECK(xdev_recv(dev, NULL, 0, 1, TAG, CTX, NULL) == XDEV_OK, "hello back");
    for (int i = 0; i < NMSG; i++) {
        int v[2] = { i, ~i };
        CHECK(xdev_send(dev, v, sizeof v, 1, TAG, CTX) == XDEV_OK, "send %d", i);
    }
    char path[PATH_MAX];
    flag_path(path, sizeof path);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot create %s", path);
    if (f)
        fclose(f);
    /* Stay until the receiver has everything. */
    CHECK(xdev_recv(dev, NULL, 0, 1, TAG, CTX, NULL) == XDEV_OK, "the receiver's done");
}

static size_t probe_once(xdev_t *dev)
{
    int found = 1;
    xdev_status_t st;
    CHECK(xdev_iprobe(dev, 0, NEVER_SENT, CTX, &found, &st) == XDEV_OK, "iprobe");
    CHECK(!found, "iprobe found a message that was never sent");
    return xdev_unexpected_bytes(dev);
}

static void receiver(xdev_t *dev)
{
    CHECK(xdev_recv(dev, NULL, 0, 0, TAG, CTX, NULL) == XDEV_OK, "hello");
    CHECK(xdev_send(dev, NULL, 0, 0, TAG, CTX) == XDEV_OK, "hello back");
    char path[PATH_MAX];
    flag_path(path, sizeof path);
    for (int waited = 0; access(path, F_OK) != 0; waited++) {
        if (waited == 30000) {
            CHECK(0, "rank 0 never said it had sent (%s)", path);
            xdev_send(dev, NULL, 0, 0, TAG, CTX);
            return;
        }
        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
    }
    /* A call made before the file appeared (sending "hello back") may
     * have buffered a message already; count from here. */
    size_t prev = xdev_unexpected_bytes(dev), one = 0;
    for (int calls = 1; calls <= 2 * NMSG; calls++) {
        size_t now = probe_once(dev);
        if (now == prev)
            break; /* everything is buffered */
        if (!one)
            one = now - prev;
        CHECK(now - prev == one, "progress call %d buffered %zu bytes, the first %zu", calls,
              now - prev, one);
        prev = now;
    }
    /* All NMSG are the same size, so one message per call means the
     * total is NMSG times what each call added. */
    CHECK(one > 0 && prev == one * NMSG,
          "%zu bytes buffered for %d messages, but each progress call added %zu: "
          "more than one message per call",
          prev, NMSG, one);
    for (int i = 0; i < NMSG; i++) {
        int v[2] = { -1, -1 };
        xdev_status_t st;
        CHECK(xdev_recv(dev, v, sizeof v, 0, TAG, CTX, &st) == XDEV_OK, "recv %d", i);
        CHECK(st.count == sizeof v && v[0] == i && v[1] == ~i,
              "message %d: got %d/%d, %zu bytes (lost, reordered or corrupted)", i, v[0], v[1],
              st.count);
    }
    CHECK(xdev_unexpected_bytes(dev) == 0, "%zu bytes still buffered after every receive",
          xdev_unexpected_bytes(dev));
    CHECK(xdev_send(dev, NULL, 0, 0, TAG, CTX) == XDEV_OK, "done");
}

int main(void)
{
    xdev_t *dev;
    if (xdev_init(NULL, &dev) != XDEV_OK || xdev_size(dev) != 2) {
        fprintf(stderr, "shm_push_back: needs a 2-rank job\n");
        return 1;
    }
    CHECK(strcmp(xdev_peer_transport(dev, 1 - xdev_rank(dev)), "shm") == 0,
          "peer reached over %s, not shm", xdev_peer_transport(dev, 1 - xdev_rank(dev)));
    if (xdev_rank(dev) == 0)
        sender(dev);
    else
        receiver(dev);
    CHECK(xdev_finalize(dev) == XDEV_OK, "finalize");
    printf("shm_push_back: %s\n", failures ? "FAIL" : "ok");
    return failures ? 1 : 0;
}
