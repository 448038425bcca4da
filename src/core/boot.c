/*
 * boot.c - how ranks find each other's addresses.
 *
 * Either the config carries an explicit peer table (IBVX style: the host
 * library runs its own launcher), or a PMIx server started the process
 * (boot_pmix.c: mpirun, srun), or the launcher gives every rank a
 * private directory (XDEV_BOOT_DIR) where each rank publishes one small
 * file per transport, "<key>.<rank>", written atomically by rename so a
 * reader never sees half an address.
 *
 * A process may start several devices from one launcher, at once or one
 * after another, and ranks need not start them in step: the nth device of
 * every rank form one job. From the second on, a device's keys carry its
 * number and its MAC key is drawn from the secret and the number
 * (auth_init), so it never reads another device's address, maps its
 * segments or passes its handshakes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "device.h"

/* Read once, at init: a running device looks peers up in the directory
 * it started with, whatever the environment says later (tcp, ofi and ibv
 * look up a peer's address at their first message to it). */
int xdev_boot_load(xdev_t *d)
{
    static atomic_uint started;
    const char *dir = getenv("XDEV_BOOT_DIR");
    if (dir && *dir && !(d->boot_dir = strdup(dir)))
        return XDEV_ERR_NOMEM;
    if (!d->cfg.peers && d->size > 1)
        d->boot_nth = atomic_fetch_add_explicit(&started, 1, memory_order_relaxed);
    return XDEV_OK;
}

/* The launcher's name for this device's key, in out: "<key>", or "<key>-<n>". */
static const char *device_key(const xdev_t *d, const char *key, char *out, size_t cap)
{
    if (d->boot_nth)
        snprintf(out, cap, "%s-%u", key, d->boot_nth);
    else
        snprintf(out, cap, "%s", key);
    return out;
}

int xdev_boot_sync(xdev_t *d)
{
    return d->pmix ? boot_pmix_fence(d->pmix) : XDEV_OK;
}

/* Under PMIx, let go of the server (boot_pmix.c says why) unless a
 * transport still publishes as it connects (ibv). */
int xdev_boot_done(xdev_t *d)
{
    if (!d->pmix)
        return XDEV_OK;
    for (int i = 0; i < d->ntps; i++)
        if (d->tps[i].ops->publishes_late)
            return XDEV_OK;
    return boot_pmix_let_go(d->pmix, d->size);
}

/* A process short of descriptors (or kernel memory) for a moment must not
 * take a live peer for a dead one: publish and lookup say XDEV_ERR_NOMEM,
 * and their callers try again until the peer timeout. */
static bool short_of_descriptors(int err)
{
    return err == EMFILE || err == ENFILE || err == ENOMEM;
}

int xdev_boot_publish(xdev_t *d, const char *key, const char *value)
{
    if (d->cfg.peers || d->size == 1)
        return XDEV_OK; /* addresses are known in advance, or nobody asks */
    char name[64];
    key = device_key(d, key, name, sizeof name);
    if (d->pmix)
        return boot_pmix_publish(d->pmix, key, value);
    const char *dir = d->boot_dir;
    if (!dir)
        return XDEV_ERR_INIT;
    char path[4096], tmp[4096];
    snprintf(path, sizeof path, "%s/%s.%d", dir, key, d->rank);
    snprintf(tmp, sizeof tmp, "%s/.%s.%d.tmp", dir, key, d->rank);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return short_of_descriptors(errno) ? XDEV_ERR_NOMEM : XDEV_ERR_INIT;
    size_t len = strlen(value);
    bool ok = write(fd, value, len) == (ssize_t)len;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return XDEV_ERR_INIT;
    }
    return XDEV_OK;
}

int xdev_boot_lookup(xdev_t *d, int rank, const char *key, char *out, size_t cap)
{
    if (d->cfg.peers) {
        if (strlen(d->cfg.peers[rank]) >= cap)
            return XDEV_ERR_INIT;
        strcpy(out, d->cfg.peers[rank]);
        return 1;
    }
    char name[64];
    key = device_key(d, key, name, sizeof name);
    if (d->pmix)
        return boot_pmix_lookup(d->pmix, rank, key, out, cap);
    const char *dir = d->boot_dir;
    if (!dir)
        return XDEV_ERR_INIT;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%d", dir, key, rank);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT                ? 0
               : short_of_descriptors(errno) ? XDEV_ERR_NOMEM
                                             : XDEV_ERR_INIT;
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n <= 0)
        return XDEV_ERR_INIT;
    out[n] = '\0';
    return 1;
}
