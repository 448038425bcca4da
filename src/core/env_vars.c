/*
 * env_vars.c - every XDEV_* variable libxdev and its launcher read: name,
 * default, meaning. xdev-info prints it with the current values; a test
 * (test/install/env_vars.sh) fails when the sources read a variable this
 * table does not name. The README's Environment section says the same at
 * more length.
 */
#include "introspect.h"

const xdev_env_var_t xdev_env_vars[] = {
    { "XDEV_RANK", "0", "this rank (set by xdevrun)" },
    { "XDEV_SIZE", "1", "ranks in the job (set by xdevrun)" },
    { "XDEV_JOB_ID", "nojob", "job id, names per-job resources (set by xdevrun)" },
    { "XDEV_JOB_SECRET", "-", "per-job secret, 16+ characters (set by xdevrun)" },
    { "XDEV_BOOT_DIR", "-", "where ranks publish their addresses (set by xdevrun)" },
    { "XDEV_TIMEOUT", "none", "xdevrun: default for --timeout, in seconds" },
    { "XDEV_TRANSPORT", "auto", "auto, shm, tcp, ofi or ibv" },
    { "XDEV_HOST_ID", "boot id + namespaces", "which host this rank is on, for auto" },
    { "XDEV_EAGER_LIMIT", "64k", "largest eager message" },
    { "XDEV_UNEXPECTED_LIMIT", "64m", "unexpected data buffered before back-pressure" },
    { "XDEV_PEER_TIMEOUT_MS", "20000", "how long an unreachable peer is retried" },
    { "XDEV_FINALIZE_TIMEOUT_MS", "5000", "how long finalize waits for sends and close" },
    { "XDEV_THREADS", "multi", "single: one thread at a time, no locks" },
    { "XDEV_PROGRESS_THREAD", "0", "1: a thread advances transfers" },
    { "XDEV_WILDCARD_FAILS", "0", "1: a death fails posted wildcard receives" },
    { "XDEV_SHM_RING", "2m", "bytes of each shared-memory ring" },
    { "XDEV_SHM_CMA_MIN", "16m", "smallest rendezvous copied once (never, or 0)" },
    { "XDEV_SHM_CMA_MODE", "read", "read (receiver pulls) or write (sender pushes)" },
    { "XDEV_TCP_ADDR", "127.0.0.1", "address a rank listens on (under PMIx: routable)" },
    { "XDEV_OFI_PROVIDER", "best offered", "libfabric provider, e.g. verbs;ofi_rxm" },
    { "XDEV_OFI_RMA", "read", "ofi rendezvous: read, write or off" },
    { "XDEV_OFI_VERBOSE", "0", "1: libfabric failures and error completions on stderr" },
    { "XDEV_REGCACHE", "auto", "ofi registration cache: auto, uffd or off" },
    { "XDEV_REGCACHE_MAX", "64", "registration cache entries (ofi and ibv)" },
    { "XDEV_IBV_DEVICE", "first active", "RDMA device" },
    { "XDEV_IBV_PORT", "first active", "its port" },
    { "XDEV_IBV_GID_INDEX", "RoCE v2 IPv4", "its GID" },
    { "XDEV_IBV_BUF", "16k", "eager buffer size" },
    { "XDEV_IBV_RX_BUFS", "256", "receive buffers on the SRQ" },
    { "XDEV_IBV_TX_BUFS", "64", "send buffers" },
    { "XDEV_IBV_RNDZ", "auto", "rendezvous by write, read or send" },
    { "XDEV_IBV_READ_MIN", "never", "auto: read from this size on" },
    { "XDEV_IBV_REGCACHE", "auto", "ibv registration cache: auto, uffd or off" },
    { "XDEV_IBV_KEEPALIVE_MS", "2000", "keepalive period for quiet peers (0: none)" },
    { "XDEV_IBV_PIDFD", "1", "0: do not watch same-host peers through a pidfd" },
    { "XDEV_IBV_DEBUG", "0", "1: connection steps and failures on stderr" },
};

const size_t xdev_env_nvars = sizeof xdev_env_vars / sizeof xdev_env_vars[0];
