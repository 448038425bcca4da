/*
 * select.c - which transport carries traffic to each peer.
 *
 * "tcp", "shm" and "ofi" serve every peer with that transport. "auto" serves
 * the ranks on this host with shm and the others with tcp (or with a
 * transport that finds a high-speed network here: ofi over verbs, EFA,
 * Slingshot..., never tcp-over-ofi), which needs to know
 * where every rank runs: each rank publishes a host identity through the
 * bootstrap and reads everyone's at init (a file read per rank, not a
 * connection). A hostname is not enough to decide that two processes can
 * share memory: the identity is the kernel's boot id plus the IPC, mount
 * and PID namespaces (shm segments, /dev/shm and process_vm_readv all
 * depend on them). XDEV_HOST_ID overrides it, which is how tests make
 * several simulated hosts on one machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "device.h"
#include "introspect.h"

#define HOST_ID_MAX 256

/* Under a PMIx launcher the node it names comes first: ranks it puts on
 * different nodes never share memory, and ranks on one node do only if
 * they also share the kernel and namespaces. */
static void host_id(const xdev_t *d, char *out, size_t cap)
{
    const char *env = getenv("XDEV_HOST_ID");
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return;
    }
    static const char *const shared[] = { "ipc", "mnt", "pid" };
    int n = d->pmix ? snprintf(out, cap, "%s:", boot_pmix_node(d->pmix)) : 0;
    xdev_host_token(out + n, cap - (size_t)n, shared, 3);
}

/* The transports this library was built with. ibv before ofi: where both
 * find an RDMA port, xdev's own verbs transport is the one tuned for it. */
static const xdev_tp_ops_t *const transports[] = {
    &xdev_tcp_ops,
    &xdev_shm_ops,
#ifdef XDEV_HAVE_IBV
    &xdev_ibv_ops,
#endif
#ifdef XDEV_HAVE_OFI
    &xdev_ofi_ops,
#endif
};

const xdev_tp_ops_t *const *xdev_transports_built(size_t *n)
{
    *n = sizeof transports / sizeof transports[0];
    return transports;
}

/* auto's choice for other hosts: the first transport that finds a
 * high-speed network here, else tcp. */
static const xdev_tp_ops_t *auto_network(const xdev_t *d)
{
    for (size_t i = 0; i < sizeof transports / sizeof transports[0]; i++)
        if (transports[i]->fast_network && transports[i]->fast_network(d))
            return transports[i];
    return &xdev_tcp_ops;
}

/* One transport the library was not built with, added by a test. */
static const xdev_tp_ops_t *added;

void xdev_transport_add(const xdev_tp_ops_t *ops)
{
    added = ops;
}

const xdev_tp_ops_t *transport_find(const char *name)
{
    for (size_t i = 0; i < sizeof transports / sizeof transports[0]; i++)
        if (!strcmp(transports[i]->name, name))
            return transports[i];
    return added && !strcmp(added->name, name) ? added : NULL;
}

const char *job_id(void)
{
    const char *id = getenv("XDEV_JOB_ID");
    return id && *id ? id : "nojob";
}

int xdev_job_name(xdev_t *dev, const char *job_id, int rank, const char *what, char *out,
                  size_t cap)
{
    /* xdevrun removes /dev/shm/xdev-<job id>* after a job: keep that prefix,
     * and keep the id to characters that cannot reach another name. */
    size_t n = strspn(job_id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-");
    if (!n || job_id[n] || n > 64)
        return XDEV_ERR_INIT;
    int len = snprintf(out, cap, "xdev-%s-%d-", job_id, rank);
    if (len <= 0 || (size_t)len >= cap)
        return XDEV_ERR_INIT;
    char msg[256]; /* the MAC covers the name without the tag */
    int msg_len = snprintf(msg, sizeof msg, "%s%s", out, what);
    if (msg_len <= 0 || (size_t)msg_len >= sizeof msg)
        return XDEV_ERR_INIT;
    uint64_t tag = xdev_auth_mac(dev, msg, (size_t)msg_len);
    size_t room = cap - (size_t)len;
    int more = snprintf(out + len, room, "%016llx%s", (unsigned long long)tag, what);
    return more > 0 && (size_t)more < room ? XDEV_OK : XDEV_ERR_INIT;
}

/* Wait (bounded) for every rank's host identity; local[r] says whether
 * rank r shares this host. A rank that publishes none within the peer
 * timeout died or never started: gone[r] marks it, to be failed like a
 * peer that a transport gave up on, not to fail this rank's init. */
static int find_local_ranks(xdev_t *d, bool *local, bool *gone)
{
    char mine[HOST_ID_MAX], theirs[HOST_ID_MAX];
    host_id(d, mine, sizeof mine);
    int rc = xdev_boot_publish(d, "host", mine);
    if (rc == XDEV_OK)
        rc = xdev_boot_sync(d);
    if (rc != XDEV_OK)
        return rc;
    uint64_t deadline = xdev_now_ms() + (uint64_t)d->cfg.peer_timeout_ms;
    for (int r = 0; r < d->size; r++) {
        if (r == d->rank)
            continue;
        while (((rc = xdev_boot_lookup(d, r, "host", theirs, sizeof theirs)) == 0 ||
                rc == XDEV_ERR_NOMEM) &&
               xdev_now_ms() < deadline)
            nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
        if (rc < 0)
            return rc;
        gone[r] = rc == 0;
        local[r] = !gone[r] && strcmp(mine, theirs) == 0;
    }
    return XDEV_OK;
}

static int open_one(xdev_t *d, const xdev_tp_ops_t *ops, const bool *serve, const bool *gone)
{
    xdev_tp_params_t p = {
        .rank = d->rank,
        .size = d->size,
        .eager_limit = d->cfg.eager_limit,
        .peer_timeout_ms = d->cfg.peer_timeout_ms,
        .job_secret = d->cfg.job_secret,
        .job_id = d->pmix ? boot_pmix_job_id(d->pmix) : job_id(),
        .peers = d->cfg.peers,
        .serve = serve,
        .many_hosts = d->pmix != NULL,
        .gone = gone,
    };
    int i = d->ntps;
    int rc = ops->open(d, &p, &d->tps[i].tp);
    if (rc != XDEV_OK)
        return rc;
    d->tps[i].ops = ops;
    /* A short send goes eager: the tier ends at the eager limit too, so
     * that a longer message is not sent to the lock twice (api.c). */
    size_t short_max = ops->short_max ? ops->short_max(d->tps[i].tp) : 0;
    d->tps[i].short_max = short_max < d->cfg.eager_limit ? short_max : d->cfg.eager_limit;
    d->ntps++;
    for (int r = 0; r < d->size; r++)
        if (serve[r])
            d->peers[r].tp = (uint8_t)i;
    d->self_by_tp |= serve[d->rank];
    return XDEV_OK;
}

int select_transports(xdev_t *d)
{
    const char *want = d->cfg.transport;
    bool *shm = calloc((size_t)d->size, sizeof *shm);
    bool *tcp = calloc((size_t)d->size, sizeof *tcp); /* served by the network transport */
    bool *gone = calloc((size_t)d->size, sizeof *gone);
    int rc = shm && tcp && gone ? XDEV_OK : XDEV_ERR_NOMEM;
    /* With an explicit peer table there is no bootstrap to compare hosts
     * through: auto means tcp to everyone. */
    bool autoselect = !strcmp(want, "auto") && d->size > 1 && !d->cfg.peers;
    if (rc == XDEV_OK && autoselect)
        rc = find_local_ranks(d, shm, gone);
    for (int r = 0; rc == XDEV_OK && r < d->size; r++) {
        if (r == d->rank)
            continue;
        if (!strcmp(want, "shm"))
            shm[r] = true;
        tcp[r] = !shm[r];
    }
    bool any_shm = false, any_tcp = false, any_live_remote = false;
    for (int r = 0; rc == XDEV_OK && r < d->size; r++) {
        any_shm |= shm[r];
        any_tcp |= tcp[r];
        any_live_remote |= tcp[r] && !gone[r];
    }
    /* A gone rank alone does not bring up a fast network's device: plain
     * tcp holds its place. */
    const xdev_tp_ops_t *net = &xdev_tcp_ops;
    if (strcmp(want, "auto") && strcmp(want, "shm"))
        net = transport_find(want);
    else if (autoselect && any_live_remote)
        net = auto_network(d);
    if (rc == XDEV_OK && net && net->carries_self)
        tcp[d->rank] = true;
    const xdev_tp_ops_t *shm_ops = transport_find("shm");
    if (rc == XDEV_OK && any_shm && !shm_ops) {
        if (autoselect) { /* built without shm: tcp serves everyone */
            for (int r = 0; r < d->size; r++)
                tcp[r] = r != d->rank;
            any_tcp = true;
            any_shm = false;
        } else {
            rc = XDEV_ERR_INIT;
        }
    }
    if (rc == XDEV_OK && any_shm)
        rc = open_one(d, shm_ops, shm, gone);
    /* The network transport is always opened: it also serves as the
     * transport of record for a job of one, where no peer needs it. */
    if (rc == XDEV_OK && (any_tcp || !any_shm))
        rc = open_one(d, net, tcp, gone);
    for (int r = 0; rc == XDEV_OK && r < d->size; r++) {
        if (!gone[r])
            continue;
        /* Cut before its first message: should it turn up late after all,
         * nothing it sends is taken (the core discards it; the transport,
         * told at open, tells it it is gone), as for any rank found dead. */
        d->peers[r].cut = 1;
        xdev_core_peer_failed(d, r);
    }
    free(shm);
    free(tcp);
    free(gone);
    return rc;
}
