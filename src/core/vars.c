/*
 * vars.c - every XDEV_* variable libxdev and its launcher read: type, who
 * reads it, default, meaning. xdev-info prints it with the current values
 * and generates the README's Environment table from it; the install-xdev-
 * info test fails when the sources read a variable this table does not
 * name or the README's table says otherwise. Variables read by a
 * transport are options: settable per device (xdev_config_t.options).
 * The table's two lookups are here too: xdevrun compiles this file in.
 */
#include <stdint.h>
#include <string.h>
#include "options.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define GIB ((size_t)1 << 30)

/* name, reader, option, type, choices, min, max, default, meaning */
const xdev_var_t xdev_vars[] = {
    { "XDEV_RANK", "core", false, XDEV_VAR_COUNT, NULL, 0, INT32_MAX, "0",
      "this rank (set by xdevrun)" },
    { "XDEV_SIZE", "core", false, XDEV_VAR_COUNT, NULL, 1, INT32_MAX, "1",
      "ranks in the job (set by xdevrun)" },
    { "XDEV_JOB_ID", "core", false, XDEV_VAR_TEXT, NULL, 0, 0, "nojob",
      "job id, names per-job resources (set by xdevrun)" },
    { "XDEV_JOB_SECRET", "core", false, XDEV_VAR_TEXT, NULL, 0, 0, "-",
      "per-job secret, at least 16 characters (set by xdevrun)" },
    { "XDEV_BOOT_DIR", "core", false, XDEV_VAR_TEXT, NULL, 0, 0, "-",
      "directory where ranks publish their addresses (set by xdevrun)" },
    { "XDEV_TIMEOUT", "xdevrun", false, XDEV_VAR_TEXT, NULL, 0, 0, "none",
      "default for xdevrun's --timeout, in seconds" },
    { "XDEV_TRANSPORT", "core", false, XDEV_VAR_CHOICE, "auto|shm|tcp|ofi|ibv", 0, 0, "auto",
      "auto: shm on this host; to others ibv where an RDMA adapter (not rxe, siw) is "
      "active, else a high-speed ofi provider, else tcp" },
    { "XDEV_HOST_ID", "core", false, XDEV_VAR_TEXT, NULL, 0, 0, "boot id + namespaces",
      "which host this rank is on, for auto" },
    { "XDEV_EAGER_LIMIT", "core", false, XDEV_VAR_SIZE, NULL, 0, GIB, "64k",
      "largest eager message (the PSL)" },
    { "XDEV_UNEXPECTED_LIMIT", "core", false, XDEV_VAR_SIZE, NULL, 0, 0, "64m",
      "unexpected data buffered before senders are held back" },
    { "XDEV_PEER_TIMEOUT_MS", "core", false, XDEV_VAR_COUNT, NULL, 1, INT32_MAX, "20000",
      "how long an unreachable peer is retried before its requests fail" },
    { "XDEV_FINALIZE_TIMEOUT_MS", "core", false, XDEV_VAR_COUNT, NULL, 0, INT32_MAX, "5000",
      "how long finalize waits for sends and an orderly close" },
    { "XDEV_THREADS", "core", false, XDEV_VAR_CHOICE, "multi|single", 0, 0, "multi",
      "single: the caller promises one thread at a time, no locks" },
    { "XDEV_PROGRESS_THREAD", "core", false, XDEV_VAR_FLAG, NULL, 0, 0, "0",
      "1: a thread advances transfers while the caller computes, asleep on the "
      "transports' fds" },
    { "XDEV_WILDCARD_FAILS", "core", false, XDEV_VAR_FLAG, NULL, 0, 0, "0",
      "1: a death fails the XDEV_ANY_SOURCE receives posted and blocking probes "
      "under way then (XDEV_ERR_PEER_PENDING)" },
    { "XDEV_SHM_RING", "shm", true, XDEV_VAR_SIZE, NULL, 4 * KIB, GIB,
      "2m", "bytes of each ring (less with more than 5 local ranks: 8 MiB into a rank in all)" },
    { "XDEV_SHM_CMA_MIN", "shm", true, XDEV_VAR_LIMIT, NULL, 0, 0, "16m",
      "smallest message always copied once across processes (never, or 0: always; under "
      "the eager limit such messages are still read in as they arrive); from 8k up also "
      "where the receiver times that faster than the ring (read mode, ranks that fit the "
      "CPUs), from 128k up also while long messages stream slowly (with more local ranks "
      "than CPUs: under twice a single copy's rate, in CPU time) or go both ways" },
    { "XDEV_SHM_CMA_MODE", "shm", true, XDEV_VAR_CHOICE, "read|write", 0, 0, "read",
      "read: the receiver pulls (process_vm_readv); write: the sender pushes" },
    { "XDEV_TCP_ADDR", "tcp", true, XDEV_VAR_TEXT, NULL, 0, 0, "127.0.0.1",
      "address a rank listens on without a peer table (under mpirun or srun: the "
      "first routable IPv4 address)" },
    { "XDEV_OFI_PROVIDER", "ofi", true, XDEV_VAR_TEXT, NULL, 0, 0, "best offered",
      "libfabric provider, e.g. verbs;ofi_rxm (FI_PROVIDER works too)" },
    { "XDEV_OFI_RMA", "ofi", true, XDEV_VAR_CHOICE, "read|write|off", 0, 0, "read",
      "rendezvous by fi_read, by fi_write, or off (streamed)" },
    { "XDEV_OFI_VERBOSE", "ofi", true, XDEV_VAR_FLAG, NULL, 0, 0, "0",
      "1: why ofi could not open, and error completions, on stderr" },
    { "XDEV_REGCACHE", "ofi", true, XDEV_VAR_CHOICE, "off|uffd|auto", 0, 0, "auto",
      "registration cache: uffd (or fail), auto (uffd where the kernel allows), off" },
    { "XDEV_REGCACHE_MAX", "ofi, ibv", true, XDEV_VAR_COUNT, NULL, 1, 1u << 20, "64",
      "registration cache entries" },
    { "XDEV_IBV_DEVICE", "ibv", true, XDEV_VAR_TEXT, NULL, 0, 0, "first active",
      "RDMA device" },
    { "XDEV_IBV_PORT", "ibv", true, XDEV_VAR_COUNT, NULL, 1, 255, "first active",
      "its port" },
    { "XDEV_IBV_GID_INDEX", "ibv", true, XDEV_VAR_COUNT, NULL, 0, 65535, "RoCE v2 IPv4",
      "its GID" },
    { "XDEV_IBV_BUF", "ibv", true, XDEV_VAR_SIZE, NULL, KIB, MIB, "16k",
      "eager buffer size" },
    { "XDEV_IBV_RX_BUFS", "ibv", true, XDEV_VAR_COUNT, NULL, 4, 65536, "256",
      "receive buffers the peers' credit windows share; the SRQ holds what those can fill" },
    { "XDEV_IBV_TX_BUFS", "ibv", true, XDEV_VAR_COUNT, NULL, 1, 65536, "64",
      "send buffers" },
    { "XDEV_IBV_RNDZ", "ibv", true, XDEV_VAR_CHOICE, "auto|write|read|send", 0, 0, "auto",
      "rendezvous by write, read or send; auto: write below XDEV_IBV_READ_MIN, read from there" },
    { "XDEV_IBV_READ_MIN", "ibv", true, XDEV_VAR_LIMIT, NULL, 0, 0, "never",
      "auto's first size read rather than written" },
    { "XDEV_IBV_REGCACHE", "ibv", true, XDEV_VAR_CHOICE, "off|uffd|auto", 0, 0, "auto",
      "ibv's registration cache: as XDEV_REGCACHE" },
    { "XDEV_IBV_KEEPALIVE_MS", "ibv", true, XDEV_VAR_COUNT, NULL, 0, 3600000, "2000",
      "keepalive period for quiet peers (0: none)" },
    { "XDEV_IBV_PIDFD", "ibv", true, XDEV_VAR_FLAG, NULL, 0, 0, "1",
      "0: do not watch same-host peers through a pidfd" },
    { "XDEV_IBV_DEBUG", "ibv", true, XDEV_VAR_FLAG, NULL, 0, 0, "0",
      "1: connection steps and failures on stderr" },
};

const size_t xdev_nvars = sizeof xdev_vars / sizeof xdev_vars[0];

const xdev_var_t *xdev_var_find(const char *name, size_t len)
{
    for (size_t i = 0; i < xdev_nvars; i++)
        if (strlen(xdev_vars[i].name) == len && !strncmp(xdev_vars[i].name, name, len))
            return &xdev_vars[i];
    return NULL;
}

int xdev_var_choice(const xdev_var_t *var, const char *s)
{
    size_t n = strlen(s);
    int i = 0;
    for (const char *c = var->choices; *c; i++) {
        size_t len = strcspn(c, "|");
        if (n && len == n && !strncmp(c, s, n))
            return i;
        c += len + (c[len] == '|');
    }
    return -1;
}
