/*
 * some.c - xdev_testsome and xdev_waitsome: many requests, one progress
 * pass. Testing N requests one by one drives progress N times; these
 * drive it once per call (waitsome: once per poll of its wait) and then
 * look at every request, which costs a load each.
 */
#include <stdlib.h>
#include "device.h"

#define IDS_ON_STACK 64 /* more requests than this: their ids on the heap */

/* The device all of reqs belong to (NULL entries skipped), or NULL with
 * *bad set if one is not an active request or belongs elsewhere. */
static xdev_t *device_of(int n, xdev_request_t *const *reqs, bool *bad)
{
    xdev_t *d = NULL;
    *bad = n < 0 || (n > 0 && !reqs);
    for (int i = 0; i < n && !*bad; i++) {
        if (!reqs[i])
            continue;
        xdev_t *rd = req_device(xreq_of(reqs[i]));
        if (!rd || (d && rd != d))
            *bad = true;
        d = rd;
    }
    return *bad ? NULL : d;
}

/* Lock held: is r still the request with this id? While xdev_waitsome
 * slept, another thread's wait or test may have reaped it (its phase
 * stays PH_DONE), and even posted its storage again (a new id): reaping
 * it would free a slot twice, or take another thread's request. */
static bool still_ours(xdev_t *d, xreq_t *r, uint64_t id)
{
    return req_is_active(r) && r->id == id && req_lookup(d, id) == r;
}

/* Lock held: are they all active requests (not copies), each listed once?
 * Their ids go to ids. A request listed twice would be reaped twice, and
 * the second reap frees a slot a later request holds. */
static bool all_ours(xdev_t *d, int n, xdev_request_t *const *reqs, uint64_t *ids)
{
    int i;
    for (i = 0; i < n; i++) {
        if (!reqs[i])
            continue;
        xreq_t *r = xreq_of(reqs[i]);
        ids[i] = r->id;
        if (!still_ours(d, r, ids[i]) || (r->flags & F_LISTED))
            break;
        r->flags |= F_LISTED;
    }
    for (int j = 0; j < i; j++)
        if (reqs[j])
            xreq_of(reqs[j])->flags &= (uint16_t)~F_LISTED;
    return i == n;
}

static int reap_done(xdev_t *d, int n, xdev_request_t *const *reqs, const uint64_t *ids, int *idx,
                     xdev_status_t *st)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!reqs[i])
            continue;
        xreq_t *r = xreq_of(reqs[i]);
        if (r->phase != PH_DONE || !still_ours(d, r, ids[i]))
            continue;
        req_reap(d, r, st ? &st[k] : NULL);
        idx[k++] = i;
    }
    return k;
}

/* Lock held: did another thread reap one of them? */
static bool any_lost(xdev_t *d, int n, xdev_request_t *const *reqs, const uint64_t *ids)
{
    for (int i = 0; i < n; i++)
        if (reqs[i] && !still_ours(d, xreq_of(reqs[i]), ids[i]))
            return true;
    return false;
}

struct some {
    int n;
    xdev_request_t *const *reqs;
    const uint64_t *ids;
    uint64_t seen;
};

static bool any_done(xdev_t *d, void *arg)
{
    struct some *s = arg;
    if (d->completions == s->seen)
        return false;
    s->seen = d->completions;
    for (int i = 0; i < s->n; i++) {
        const xreq_t *r = s->reqs[i] ? xreq_of(s->reqs[i]) : NULL;
        if (r && (r->phase == PH_DONE || r->id != s->ids[i]))
            return true; /* ours to reap, or lost to another reaper */
    }
    return false;
}

static int some(int n, xdev_request_t *const *reqs, int *outcount, int *idx, xdev_status_t *st,
                bool wait)
{
    bool bad;
    xdev_t *d = device_of(n, reqs, &bad);
    if (bad || !outcount || (n > 0 && !idx))
        return XDEV_ERR_ARG;
    if (!d) {
        *outcount = 0;
        return XDEV_OK; /* nothing active */
    }
    uint64_t ids_here[IDS_ON_STACK];
    uint64_t *ids = n <= IDS_ON_STACK ? ids_here : malloc((size_t)n * sizeof *ids);
    if (!ids)
        return XDEV_ERR_NOMEM;
    unsigned woken = wake_mark(d);
    dev_lock(d);
    int rc = all_ours(d, n, reqs, ids) ? XDEV_OK : XDEV_ERR_ARG;
    int count = 0;
    if (rc == XDEV_OK) {
        progress_once(d);
        struct some s = { n, reqs, ids, d->completions - 1 };
        if (wait && !any_done(d, &s))
            rc = progress_until(d, any_done, &s, -1, woken);
        /* woken: reap what is done anyway, the rest stays active */
        if (rc == XDEV_ERR_WOKEN || rc == XDEV_OK)
            count = reap_done(d, n, reqs, ids, idx, st);
        if (rc == XDEV_ERR_WOKEN && count)
            rc = XDEV_OK;
        /* as xdev_wait: the thread that lost the race gets XDEV_ERR_ARG */
        if (wait && rc == XDEV_OK && !count && any_lost(d, n, reqs, ids))
            rc = XDEV_ERR_ARG;
    }
    dev_unlock(d);
    if (ids != ids_here)
        free(ids);
    if (rc != XDEV_ERR_ARG)
        *outcount = count;
    return rc;
}

int xdev_testsome(int n, xdev_request_t *const *reqs, int *outcount, int *idx, xdev_status_t *st)
{
    return some(n, reqs, outcount, idx, st, false);
}

int xdev_waitsome(int n, xdev_request_t *const *reqs, int *outcount, int *idx, xdev_status_t *st)
{
    return some(n, reqs, outcount, idx, st, true);
}
