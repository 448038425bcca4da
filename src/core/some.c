/*
 * some.c - xdev_testsome and xdev_waitsome: many requests, one progress
 * pass. Testing N requests one by one drives progress N times; these
 * drive it once per call (waitsome: once per poll of its wait) and then
 * look at every request, which costs a load each.
 */
#include "device.h"

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

/* Lock held: is r still a request of ours? While xdev_waitsome slept,
 * another thread's wait or test may have reaped it (its phase stays
 * PH_DONE): reaping it again would free a slot twice. */
static bool still_ours(xdev_t *d, xreq_t *r)
{
    return req_is_active(r) && req_lookup(d, r->id) == r;
}

/* Lock held: are they all still ours (not reaped meanwhile by another
 * thread, not copies), each listed once? A request listed twice would be
 * reaped twice, and the second reap frees a slot a later request holds. */
static bool all_ours(xdev_t *d, int n, xdev_request_t *const *reqs)
{
    int i;
    for (i = 0; i < n; i++) {
        if (!reqs[i])
            continue;
        xreq_t *r = xreq_of(reqs[i]);
        if (!still_ours(d, r) || (r->flags & F_LISTED))
            break;
        r->flags |= F_LISTED;
    }
    for (int j = 0; j < i; j++)
        if (reqs[j])
            xreq_of(reqs[j])->flags &= (uint16_t)~F_LISTED;
    return i == n;
}

static int reap_done(xdev_t *d, int n, xdev_request_t *const *reqs, int *idx, xdev_status_t *st)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (!reqs[i])
            continue;
        xreq_t *r = xreq_of(reqs[i]);
        if (r->phase != PH_DONE || !still_ours(d, r))
            continue;
        req_reap(d, r, st ? &st[k] : NULL);
        idx[k++] = i;
    }
    return k;
}

/* Lock held: did another thread reap one of them? */
static bool any_lost(xdev_t *d, int n, xdev_request_t *const *reqs)
{
    for (int i = 0; i < n; i++)
        if (reqs[i] && !still_ours(d, xreq_of(reqs[i])))
            return true;
    return false;
}

struct some {
    int n;
    xdev_request_t *const *reqs;
    uint64_t seen;
};

static bool any_done(xdev_t *d, void *arg)
{
    struct some *s = arg;
    if (d->completions == s->seen)
        return false;
    s->seen = d->completions;
    for (int i = 0; i < s->n; i++)
        if (s->reqs[i] && xreq_of(s->reqs[i])->phase == PH_DONE)
            return true; /* ours to reap, or lost to another reaper */
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
    dev_lock(d);
    int rc = all_ours(d, n, reqs) ? XDEV_OK : XDEV_ERR_ARG;
    int count = 0;
    if (rc == XDEV_OK) {
        progress_once(d);
        struct some s = { n, reqs, d->completions - 1 };
        if (wait && !any_done(d, &s))
            rc = progress_until(d, any_done, &s, -1);
        /* woken: reap what is done anyway, the rest stays active */
        if (rc == XDEV_ERR_WOKEN || rc == XDEV_OK)
            count = reap_done(d, n, reqs, idx, st);
        if (rc == XDEV_ERR_WOKEN && count)
            rc = XDEV_OK;
        /* as xdev_wait: the thread that lost the race gets XDEV_ERR_ARG */
        if (wait && rc == XDEV_OK && !count && any_lost(d, n, reqs))
            rc = XDEV_ERR_ARG;
    }
    dev_unlock(d);
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
