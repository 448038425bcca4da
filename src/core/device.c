/*
 * device.c - creating and destroying a device, and the accessors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "device.h"
#include "introspect.h"
#include "options.h"

void device_free(xdev_t *d)
{
    while (d->ux_head) {
        uxmsg_t *e = d->ux_head;
        d->ux_head = e->next;
        if (e->data != e->small)
            free(e->data);
        free(e->fetch); /* its request was abandoned with the caller's */
        free(e);
    }
    while (d->ux_spare) {
        uxmsg_t *e = d->ux_spare;
        d->ux_spare = e->next;
        free(e);
    }
    xdev_payloads_drain(&d->payloads);
    xdev_mtable_destroy(&d->posted);
    xdev_mtable_destroy(&d->unexpected);
    req_table_destroy(d);
    proto_free_ctl(d);
    if (d->wake_fd >= 0)
        close(d->wake_fd);
    if (d->event_fd >= 0)
        close(d->event_fd);
    if (d->tick_fd >= 0)
        close(d->tick_fd);
    if (!(d->flags & XDEV_FLAG_SINGLE_THREAD))
        pthread_mutex_destroy(&d->lock);
    free(d->peers);
    free(d->cfg_strings);
    free(d->boot_dir);
    xdev_options_free(d);
    boot_pmix_close(d->pmix);
    free(d);
}

static void close_transports(xdev_t *d)
{
    while (d->ntps > 0) {
        d->ntps--;
        d->tps[d->ntps].ops->close(d->tps[d->ntps].tp);
    }
}

int xdev_init(const xdev_config_t *cfg, xdev_t **out)
{
    if (!out)
        return XDEV_ERR_ARG;
    xdev_config_t full;
    int rc = cfg ? config_from_caller(&full, cfg) : xdev_config_init(&full);
    if (rc != XDEV_OK)
        return rc;
    boot_pmix_t *pmix = NULL;
    if (!full.peers && boot_pmix_wanted() && (rc = boot_pmix_open(&full, &pmix)) != XDEV_OK)
        return rc;
    cfg = &full;
    rc = config_validate(cfg);
    xdev_t *d = rc == XDEV_OK ? calloc(1, sizeof *d) : NULL;
    if (!d) {
        boot_pmix_close(pmix);
        return rc != XDEV_OK ? rc : XDEV_ERR_NOMEM;
    }
    d->pmix = pmix;
    d->rank = cfg->rank;
    d->size = cfg->size;
    /* Without it, xdev_wakeup still works: sleepers notice within their
     * nap or poll timeout instead of at once. */
    d->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    d->event_fd = d->tick_fd = -1;
    d->flags = cfg->flags;
    d->clock_stride = progress_clock_stride(progress_clock_reading_ns());
    if (!(d->flags & XDEV_FLAG_SINGLE_THREAD))
        pthread_mutex_init(&d->lock, NULL);
    if ((rc = config_copy(d, cfg)) != XDEV_OK ||
        (rc = xdev_options_load(d, cfg->options)) != XDEV_OK ||
        (rc = xdev_boot_load(d)) != XDEV_OK || (rc = req_table_init(d)) != XDEV_OK ||
        (rc = xdev_mtable_init(&d->posted)) != XDEV_OK ||
        (rc = xdev_mtable_init(&d->unexpected)) != XDEV_OK) {
        device_free(d);
        return rc;
    }
    d->peers = calloc((size_t)d->size, sizeof *d->peers);
    if (!d->peers) {
        device_free(d);
        return XDEV_ERR_NOMEM;
    }
    for (int i = 0; i < d->size; i++) {
        d->peers[i].cut = UINT64_MAX;
        d->peers[i].rndz_from = d->cfg.eager_limit + 1;
    }
    auth_init(d);
    if ((rc = select_transports(d)) != XDEV_OK || (rc = xdev_boot_sync(d)) != XDEV_OK ||
        (rc = xdev_boot_done(d)) != XDEV_OK ||
        ((d->flags & XDEV_FLAG_PROGRESS_THREAD) && (rc = progress_thread_start(d)) != XDEV_OK)) {
        close_transports(d);
        device_free(d);
        return rc;
    }
    *out = d;
    return XDEV_OK;
}

static bool sends_done(xdev_t *d, void *deadline)
{
    if (xdev_now_ms() >= *(uint64_t *)deadline)
        return true;
    for (uint32_t i = 0; i < d->nslots; i++) {
        xreq_t *r = d->slots[i].req;
        if (r && r->kind == REQ_SEND && r->phase != PH_DONE)
            return false;
    }
    return true;
}

static bool closed(xdev_t *d, void *deadline)
{
    bool all = true;
    for (int i = 0; i < d->ntps; i++)
        all &= d->tps[i].ops->shutdown(d->tps[i].tp) != 0;
    return all || xdev_now_ms() >= *(uint64_t *)deadline;
}

int xdev_finalize(xdev_t *d)
{
    if (!d)
        return XDEV_ERR_ARG;
    progress_thread_stop(d);
    dev_lock(d);
    uint64_t deadline = xdev_now_ms() + (uint64_t)d->cfg.finalize_timeout_ms;
    /* Wakeups meant for the caller's other threads do not cut this short. */
    while (progress_until(d, sends_done, &deadline, -1, wake_mark(d)) == XDEV_ERR_WOKEN)
        ;
    d->finalizing = true;
    proto_drop_unexpected(d);
    while (progress_until(d, closed, &deadline, -1, wake_mark(d)) == XDEV_ERR_WOKEN)
        ;
    close_transports(d);

    /* Abandon what the caller never reaped, finished or not: its storage
     * is the caller's again. */
    int rc = XDEV_OK;
    for (uint32_t i = 0; i < d->nslots; i++) {
        xreq_t *r = d->slots[i].req;
        if (r && !(r->flags & F_FETCH)) /* the core's own are not the caller's */
            rc = XDEV_ERR_CANCELED;
        if (r)
            req_reap(d, r, NULL);
    }
    dev_unlock(d);
    device_free(d);
    return rc;
}

int xdev_stats_size(xdev_t *d, xdev_stats_t *stats, size_t size)
{
    if (!d || !stats || size < sizeof *stats)
        return XDEV_ERR_ARG;
    xdev_stats_t st;
    memset(&st, 0, sizeof st);
    dev_lock(d);
    st.ntransports = d->ntps;
    for (int i = 0; i < d->ntps && i < XDEV_STATS_MAX_TRANSPORTS; i++)
        snprintf(st.transport[i].name, sizeof st.transport[i].name, "%s", d->tps[i].ops->name);
    /* counted per peer, where the hot paths already are */
    for (int r = 0; r < d->size; r++) {
        const peer_t *p = &d->peers[r];
        if (r == d->rank || p->tp >= XDEV_STATS_MAX_TRANSPORTS)
            continue;
        struct xdev_stats_transport *t = &st.transport[p->tp];
        t->msgs_sent += p->msgs_sent;
        t->bytes_sent += p->bytes_sent;
        t->msgs_received += p->arrivals;
        t->bytes_received += p->bytes_received;
    }
    st.peers_dead = (int)d->deaths;
    st.self_msgs = d->self_msgs;
    st.rendezvous_sent = d->rndz_sent;
    st.rendezvous_received = d->rndz_received;
    st.unexpected_bytes = d->ux_bytes;
    st.unexpected_peak = d->ux_peak;
    dev_unlock(d);
    st.struct_size = size;
    memcpy(stats, &st, sizeof st);
    memset((char *)stats + sizeof st, 0, size - sizeof st);
    return XDEV_OK;
}

int xdev_rank(const xdev_t *d) { return d ? d->rank : XDEV_ERR_ARG; }
int xdev_size(const xdev_t *d) { return d ? d->size : XDEV_ERR_ARG; }

const char *xdev_strerror(int err)
{
    switch (err) {
    case XDEV_OK: return "success";
    case XDEV_ERR_ARG: return "invalid argument";
    case XDEV_ERR_NOMEM: return "out of memory";
    case XDEV_ERR_TRUNCATE: return "message truncated: longer than the receive buffer";
    case XDEV_ERR_PEER: return "peer failed, left, or broke the protocol";
    case XDEV_ERR_CANCELED: return "request cancelled, or abandoned by xdev_finalize";
    case XDEV_ERR_INIT: return "bad or missing configuration";
    case XDEV_ERR_SYSTEM: return "operating system call failed";
    case XDEV_ERR_TOO_LATE: return "too late to cancel: the request has begun";
    case XDEV_ERR_TIMEOUT: return "timed out: nothing completed";
    case XDEV_ERR_WOKEN: return "woken by xdev_wakeup";
    case XDEV_ERR_BUSY: return "work is waiting: drive progress before sleeping";
    case XDEV_ERR_PEER_PENDING: return "a rank this wildcard receive or probe waited on died";
    default: return "unknown xdev error code";
    }
}

const char *xdev_version(void)
{
#define XDEV_STR_(x) #x
#define XDEV_STR(x) XDEV_STR_(x)
    return XDEV_STR(XDEV_VERSION_MAJOR) "." XDEV_STR(XDEV_VERSION_MINOR) "." XDEV_STR(
        XDEV_VERSION_PATCH);
}

size_t xdev_unexpected_bytes(xdev_t *d)
{
    dev_lock(d);
    size_t n = d->ux_bytes;
    dev_unlock(d);
    return n;
}

size_t xdev_unexpected_peak(xdev_t *d)
{
    dev_lock(d);
    size_t n = d->ux_peak;
    dev_unlock(d);
    return n;
}

const char *xdev_peer_transport(xdev_t *d, int peer)
{
    return peer == d->rank && !d->self_by_tp ? "self" : peer_ops(d, peer)->name;
}
