/* soak_check.c - checks of completed receives; see soak_check.h. */
#include "soak_check.h"

#include "soak.h"
#include "soak_msg.h"

void soak_check_recv(const char *who, int src, int kind, int t, int k, const xdev_status_t *st,
                     const unsigned char *buf, size_t cap)
{
    uint64_t key = soak_key(src, soak.rank, kind, t, k);
    size_t len = soak_len(kind, key), count = len < cap ? len : cap, bad;
    int error = len > cap ? XDEV_ERR_TRUNCATE : XDEV_OK;
    if (st->error != error || st->count != count || st->msg_len != len ||
        st->source != src || st->tag != soak_tag(t, k) || st->ctx != soak_ctx(kind, t)) {
        SOAK_FAIL("seed %llu %s: message #%d of stream (src %d, thread %d) into %zu bytes: got "
                  "error %d count %zu msg_len %zu source %d tag %#x ctx %d, want error %d count "
                  "%zu msg_len %zu source %d tag %#x ctx %d (lost, duplicated, out of order or "
                  "misreported)", (unsigned long long)soak.seed, who, k, src, t, cap, st->error,
                  st->count, st->msg_len, st->source, st->tag, st->ctx, error, count, len, src,
                  soak_tag(t, k), soak_ctx(kind, t));
        return;
    }
    if ((bad = fault_verify_keyed(buf, count, key)) != (size_t)-1)
        SOAK_FAIL("seed %llu %s: message #%d from %d (thread %d, %zu of %zu bytes): byte %zu wrong",
                  (unsigned long long)soak.seed, who, k, src, t, count, len, bad);
    else if ((bad = soak_untouched(buf, count, cap + SOAK_GUARD)) != (size_t)-1)
        SOAK_FAIL("seed %llu %s: message #%d from %d (thread %d, %zu bytes into %zu): byte %zu "
                  "written past the message", (unsigned long long)soak.seed, who, k, src, t, len,
                  cap, bad);
    atomic_fetch_add(&soak_count.recv_msgs, 1);
    atomic_fetch_add(&soak_count.recv_bytes, count);
    if (error == XDEV_ERR_TRUNCATE)
        atomic_fetch_add(&soak_count.truncated, 1);
}

void soak_check_cancelled(const char *who, const xdev_status_t *st, const unsigned char *buf,
                          size_t cap)
{
    size_t bad;
    if (st->error != XDEV_ERR_CANCELED || st->count != 0)
        SOAK_FAIL("seed %llu %s: a cancelled receive completed with error %d count %zu (source %d "
                  "tag %#x)", (unsigned long long)soak.seed, who, st->error, st->count, st->source,
                  st->tag);
    else if ((bad = soak_untouched(buf, 0, cap + SOAK_GUARD)) != (size_t)-1)
        SOAK_FAIL("seed %llu %s: a cancelled receive's buffer (%zu bytes) was written at byte %zu",
                  (unsigned long long)soak.seed, who, cap, bad);
    atomic_fetch_add(&soak_count.cancelled, 1);
}
