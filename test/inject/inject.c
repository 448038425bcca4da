/*
 * inject.c - wrappers for the system calls a test may make fail (see
 * inject.h). Each wrapper asks whether a rule fires on this call; if not,
 * it calls the real function (__real_*, which the linker's --wrap binds to
 * the libc symbol). Nothing here allocates: malloc itself is wrapped.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "inject.h"

enum call {
    C_SENDMSG, C_SEND, C_RECV, C_ACCEPT4, C_CONNECT, C_PROCESS_VM_READV, C_PROCESS_VM_WRITEV,
    C_SHM_OPEN, C_MMAP, C_FTRUNCATE, C_MALLOC, C_CALLOC, C_REALLOC, C_STRDUP, C_IBV_POST_SEND,
    NCALLS
};
static const char *const call_names[NCALLS] = {
    "sendmsg", "send", "recv", "accept4", "connect", "process_vm_readv", "process_vm_writev",
    "shm_open", "mmap", "ftruncate", "malloc", "calloc", "realloc", "strdup", "ibv_post_send",
};
/* Calls that move bytes, where "short" means something. */
static const bool can_be_short[NCALLS] = {
    [C_SENDMSG] = true, [C_SEND] = true, [C_RECV] = true,
    [C_PROCESS_VM_READV] = true, [C_PROCESS_VM_WRITEV] = true,
};

#define SHORT (-1)
#define MAX_RULES 16

typedef struct rule {
    enum call call;
    int what; /* an errno value, or SHORT */
    long every, skip, limit;
    atomic_long fired;
} rule_t;

static rule_t rules[MAX_RULES];
static int nrules;
static atomic_bool started;
static atomic_long calls[NCALLS];

static const struct { const char *name; int value; } errnos[] = {
    { "EINTR", EINTR }, { "EAGAIN", EAGAIN }, { "ENOMEM", ENOMEM }, { "EPERM", EPERM },
    { "EACCES", EACCES }, { "EMFILE", EMFILE }, { "ENFILE", ENFILE }, { "ENOSPC", ENOSPC },
    { "ECONNRESET", ECONNRESET }, { "ECONNREFUSED", ECONNREFUSED }, { "EFAULT", EFAULT },
    { "ESRCH", ESRCH }, { "EIO", EIO },
};

static _Noreturn void bad_spec(const char *rule, const char *why)
{
    fprintf(stderr, "inject: bad rule \"%s\": %s\n", rule, why);
    exit(2);
}

static long field_long(const char *s, const char *rule)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < 0)
        bad_spec(rule, "EVERY, SKIP and LIMIT are counts");
    return v;
}

static void parse_rule(char *text)
{
    char *field[5] = { 0 };
    int n = 0;
    char *save = NULL;
    char copy[128];
    snprintf(copy, sizeof copy, "%s", text);
    for (char *f = strtok_r(text, ":", &save); f && n < 5; f = strtok_r(NULL, ":", &save))
        field[n++] = f;
    if (n < 3)
        bad_spec(copy, "want CALL:WHAT:EVERY[:SKIP[:LIMIT]]");
    if (nrules == MAX_RULES)
        bad_spec(copy, "too many rules");
    rule_t *r = &rules[nrules];
    r->call = NCALLS;
    for (int c = 0; c < NCALLS; c++)
        if (!strcmp(field[0], call_names[c]))
            r->call = (enum call)c;
    if (r->call == NCALLS)
        bad_spec(copy, "no such call is wrapped");
    r->what = 0;
    if (!strcmp(field[1], "short")) {
        if (!can_be_short[r->call])
            bad_spec(copy, "only reads and writes come up short");
        r->what = SHORT;
    }
    for (size_t i = 0; i < sizeof errnos / sizeof errnos[0]; i++)
        if (!strcmp(field[1], errnos[i].name))
            r->what = errnos[i].value;
    if (!r->what)
        bad_spec(copy, "WHAT is short or an errno name");
    r->every = field_long(field[2], copy);
    r->skip = n > 3 ? field_long(field[3], copy) : 0;
    r->limit = n > 4 ? field_long(field[4], copy) : 0;
    if (!r->every)
        bad_spec(copy, "EVERY is at least 1");
    atomic_store(&r->fired, 0);
    nrules++;
}

void inject_start(const char *spec)
{
    static char text[1024];
    if (!spec)
        spec = getenv("INJECT_FAULTS");
    if (!spec)
        spec = "";
    if (strlen(spec) >= sizeof text)
        bad_spec(spec, "too long");
    strcpy(text, spec);
    nrules = 0;
    char *save = NULL;
    for (char *r = strtok_r(text, ",", &save); r; r = strtok_r(NULL, ",", &save))
        parse_rule(r);
    for (int c = 0; c < NCALLS; c++)
        atomic_store(&calls[c], 0);
    atomic_store(&started, true);
}

void inject_stop(void)
{
    atomic_store(&started, false);
}

long inject_fired(const char *call)
{
    long sum = 0;
    for (int i = 0; i < nrules; i++)
        if (!strcmp(call_names[rules[i].call], call))
            sum += atomic_load(&rules[i].fired);
    return sum;
}

long inject_fired_total(void)
{
    long sum = 0;
    for (int i = 0; i < nrules; i++)
        sum += atomic_load(&rules[i].fired);
    return sum;
}

/* What happens to this call of c: 0 (nothing), SHORT, or an errno. */
static int fate(enum call c)
{
    if (!atomic_load_explicit(&started, memory_order_relaxed))
        return 0;
    long n = atomic_fetch_add(&calls[c], 1) + 1;
    for (int i = 0; i < nrules; i++) {
        rule_t *r = &rules[i];
        if (r->call != c || n <= r->skip || (n - r->skip) % r->every)
            continue;
        if (r->limit && atomic_fetch_add(&r->fired, 1) >= r->limit) {
            atomic_fetch_sub(&r->fired, 1);
            continue;
        }
        if (!r->limit)
            atomic_fetch_add(&r->fired, 1);
        return r->what;
    }
    return 0;
}

static size_t shorten(size_t len)
{
    return len > 1 ? len / 2 : len;
}

#define FAIL_WITH(e, ret) \
    do {                  \
        errno = (e);      \
        return (ret);     \
    } while (0)

ssize_t __real_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags)
{
    int f = fate(C_SENDMSG);
    if (f > 0)
        FAIL_WITH(f, -1);
    if (f == SHORT) {
        /* keep the first half of the bytes: whole iovecs, then part of one */
        size_t total = 0;
        for (size_t i = 0; i < m->msg_iovlen; i++)
            total += m->msg_iov[i].iov_len;
        size_t keep = shorten(total);
        struct iovec iov[1024];
        struct msghdr s = *m;
        size_t n = 0;
        for (size_t i = 0; i < m->msg_iovlen && keep && n < 1024; i++, n++) {
            iov[n] = m->msg_iov[i];
            if (iov[n].iov_len > keep)
                iov[n].iov_len = keep;
            keep -= iov[n].iov_len;
        }
        s.msg_iov = iov;
        s.msg_iovlen = n;
        return __real_sendmsg(fd, &s, flags);
    }
    return __real_sendmsg(fd, m, flags);
}

ssize_t __real_send(int fd, const void *buf, size_t len, int flags);
ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags)
{
    int f = fate(C_SEND);
    if (f > 0)
        FAIL_WITH(f, -1);
    return __real_send(fd, buf, f == SHORT ? shorten(len) : len, flags);
}

ssize_t __real_recv(int fd, void *buf, size_t len, int flags);
ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags)
{
    int f = fate(C_RECV);
    if (f > 0)
        FAIL_WITH(f, -1);
    return __real_recv(fd, buf, f == SHORT ? shorten(len) : len, flags);
}

int __real_accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags);
int __wrap_accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
    int f = fate(C_ACCEPT4);
    if (f > 0)
        FAIL_WITH(f, -1);
    return __real_accept4(fd, addr, alen, flags);
}

int __real_connect(int fd, const struct sockaddr *addr, socklen_t alen);
int __wrap_connect(int fd, const struct sockaddr *addr, socklen_t alen)
{
    int f = fate(C_CONNECT);
    if (f > 0)
        FAIL_WITH(f, -1);
    return __real_connect(fd, addr, alen);
}

/* Both single-copy calls take one local and one remote piece here. */
static ssize_t vm_copy(enum call c, pid_t pid, const struct iovec *local, unsigned long nl,
                       const struct iovec *remote, unsigned long nr, unsigned long flags,
                       ssize_t (*real)(pid_t, const struct iovec *, unsigned long,
                                       const struct iovec *, unsigned long, unsigned long))
{
    int f = fate(c);
    if (f > 0)
        FAIL_WITH(f, -1);
    if (f == SHORT && nl == 1 && nr == 1) {
        struct iovec l = local[0], r = remote[0];
        l.iov_len = shorten(l.iov_len);
        r.iov_len = shorten(r.iov_len);
        return real(pid, &l, 1, &r, 1, flags);
    }
    return real(pid, local, nl, remote, nr, flags);
}

ssize_t __real_process_vm_readv(pid_t, const struct iovec *, unsigned long,
                                const struct iovec *, unsigned long, unsigned long);
ssize_t __wrap_process_vm_readv(pid_t pid, const struct iovec *local, unsigned long nl,
                                const struct iovec *remote, unsigned long nr, unsigned long flags)
{
    return vm_copy(C_PROCESS_VM_READV, pid, local, nl, remote, nr, flags, __real_process_vm_readv);
}

ssize_t __real_process_vm_writev(pid_t, const struct iovec *, unsigned long,
                                 const struct iovec *, unsigned long, unsigned long);
ssize_t __wrap_process_vm_writev(pid_t pid, const struct iovec *local, unsigned long nl,
                                 const struct iovec *remote, unsigned long nr, unsigned long flags)
{
    return vm_copy(C_PROCESS_VM_WRITEV, pid, local, nl, remote, nr, flags,
                   __real_process_vm_writev);
}

int __real_shm_open(const char *name, int oflag, mode_t mode);
int __wrap_shm_open(const char *name, int oflag, mode_t mode)
{
    int f = fate(C_SHM_OPEN);
    if (f > 0)
        FAIL_WITH(f, -1);
    return __real_shm_open(name, oflag, mode);
}

/* The build asks for 64-bit file offsets, which makes the library's mmap
 * and ftruncate the libc symbols mmap64 and ftruncate64: those are the
 * ones wrapped. */
void *__real_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    int f = fate(C_MMAP);
    if (f > 0)
        FAIL_WITH(f, MAP_FAILED);
    return __real_mmap64(addr, len, prot, flags, fd, off);
}

int __real_ftruncate64(int fd, off_t len);
int __wrap_ftruncate64(int fd, off_t len)
{
    int f = fate(C_FTRUNCATE);
    if (f > 0)
        FAIL_WITH(f, -1);
    return __real_ftruncate64(fd, len);
}

void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
    int f = fate(C_MALLOC);
    if (f > 0)
        FAIL_WITH(f, NULL);
    return __real_malloc(n);
}

void *__real_calloc(size_t k, size_t n);
void *__wrap_calloc(size_t k, size_t n)
{
    int f = fate(C_CALLOC);
    if (f > 0)
        FAIL_WITH(f, NULL);
    return __real_calloc(k, n);
}

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
    int f = fate(C_REALLOC);
    if (f > 0)
        FAIL_WITH(f, NULL);
    return __real_realloc(p, n);
}

char *__real_strdup(const char *s);
char *__wrap_strdup(const char *s)
{
    int f = fate(C_STRDUP);
    if (f > 0)
        FAIL_WITH(f, NULL);
    return __real_strdup(s);
}

#ifdef INJECT_IBV
#include <infiniband/verbs.h>

/* ibv_post_send is an inline call through the device context's ops, out
 * of --wrap's reach: the wrapped ibv_open_device puts ours in its place.
 * (One provider per process here, so one saved function will do.) */
static int (*real_post_send)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **);

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
    int f = fate(C_IBV_POST_SEND);
    if (f > 0) {
        *bad = wr; /* as a provider reports it: nothing was posted */
        return f;
    }
    return real_post_send(qp, wr, bad);
}

struct ibv_context *__real_ibv_open_device(struct ibv_device *dev);
struct ibv_context *__wrap_ibv_open_device(struct ibv_device *dev)
{
    struct ibv_context *ctx = __real_ibv_open_device(dev);
    if (ctx && ctx->ops.post_send != post_send) {
        real_post_send = ctx->ops.post_send;
        ctx->ops.post_send = post_send;
    }
    return ctx;
}
#endif
