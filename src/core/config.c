/*
 * config.c - xdev_config_t: defaults, the XDEV_* environment, validation,
 * and the device's private copy.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "device.h"
#include "options.h"

#define DEFAULT_EAGER_LIMIT (64u * 1024)
#define DEFAULT_UNEXPECTED_LIMIT (64u * 1024 * 1024)
#define DEFAULT_PEER_TIMEOUT_MS 20000
#define DEFAULT_FINALIZE_TIMEOUT_MS 5000
#define MAX_EAGER_LIMIT (1u << 30)
#define MIN_SECRET_LEN 16

static void config_defaults(xdev_config_t *c)
{
    memset(c, 0, sizeof *c);
    c->rank = 0;
    c->size = 1; /* a process started without a launcher is a job of one */
    c->transport = "auto";
    c->eager_limit = DEFAULT_EAGER_LIMIT;
    c->unexpected_limit = DEFAULT_UNEXPECTED_LIMIT;
    c->peer_timeout_ms = DEFAULT_PEER_TIMEOUT_MS;
    c->finalize_timeout_ms = DEFAULT_FINALIZE_TIMEOUT_MS;
}

/* An int variable (COUNT in vars.c, so its bounds fit an int). */
static int env_int(const char *name, int *out)
{
    size_t n = (size_t)*out;
    int rc = xdev_opt_size(NULL, name, &n);
    if (rc == XDEV_OK)
        *out = (int)n;
    return rc;
}

static int env_flag(const char *name, unsigned bit, unsigned *flags)
{
    bool on = false;
    int rc = xdev_opt_flag(NULL, name, &on);
    if (on)
        *flags |= bit;
    return rc;
}

/* The core's variables, each read by its type in vars.c; an empty one
 * counts as unset, as for the transports' options. */
int config_from_env(xdev_config_t *c)
{
    int threads = 0, transport = 0, rc = XDEV_OK;
    const char *v;
    if ((v = xdev_opt(NULL, "XDEV_TRANSPORT")))
        c->transport = v;
    if ((v = xdev_opt(NULL, "XDEV_JOB_SECRET")))
        c->job_secret = v;
    /* transport: only checked here (a name the table lacks is malformed) */
    if (xdev_opt_choice(NULL, "XDEV_TRANSPORT", &transport) ||
        env_int("XDEV_RANK", &c->rank) || env_int("XDEV_SIZE", &c->size) ||
        xdev_opt_size(NULL, "XDEV_EAGER_LIMIT", &c->eager_limit) ||
        xdev_opt_size(NULL, "XDEV_UNEXPECTED_LIMIT", &c->unexpected_limit) ||
        env_int("XDEV_PEER_TIMEOUT_MS", &c->peer_timeout_ms) ||
        env_int("XDEV_FINALIZE_TIMEOUT_MS", &c->finalize_timeout_ms) ||
        xdev_opt_choice(NULL, "XDEV_THREADS", &threads) ||
        env_flag("XDEV_PROGRESS_THREAD", XDEV_FLAG_PROGRESS_THREAD, &c->flags) ||
        env_flag("XDEV_WILDCARD_FAILS", XDEV_FLAG_WILDCARD_FAILS, &c->flags))
        rc = XDEV_ERR_INIT;
    if (threads == 1) /* "multi|single" */
        c->flags |= XDEV_FLAG_SINGLE_THREAD;
    return rc;
}

/* The smallest struct any caller can have: the first release's, which
 * ended at flags. Later releases keep accepting it and default the fields
 * they add; a size that ends inside one of those (half of the options
 * pointer) is no layout at all. */
#define CONFIG_SIZE_MIN (offsetof(xdev_config_t, flags) + sizeof(unsigned))

_Static_assert(offsetof(xdev_config_t, options) + sizeof(void *) == sizeof(xdev_config_t),
               "config_size_ok knows options as the last field");

static bool config_size_ok(size_t size)
{
    size_t options = offsetof(xdev_config_t, options);
    return size >= CONFIG_SIZE_MIN && (size <= options || size >= options + sizeof(void *));
}

int xdev_config_init_size(xdev_config_t *cfg, size_t size)
{
    if (!cfg || !config_size_ok(size))
        return XDEV_ERR_ARG;
    xdev_config_t c;
    config_defaults(&c);
    int rc = config_from_env(&c);
    if (rc != XDEV_OK)
        config_defaults(&c);
    c.struct_size = size;
    size_t known = size < sizeof c ? size : sizeof c;
    memcpy(cfg, &c, known);
    memset((char *)cfg + known, 0, size - known);
    return rc;
}

int config_from_caller(xdev_config_t *out, const xdev_config_t *cfg)
{
    size_t size = cfg->struct_size;
    if (!config_size_ok(size))
        return XDEV_ERR_ARG;
    config_defaults(out);
    memcpy(out, cfg, size < sizeof *out ? size : sizeof *out);
    for (size_t i = sizeof *out; i < size; i++)
        if (((const unsigned char *)cfg)[i])
            return XDEV_ERR_ARG; /* a newer caller asks for what we lack */
    out->struct_size = sizeof *out;
    return XDEV_OK;
}

static bool transport_known(const char *name)
{
    return !strcmp(name, "auto") || transport_find(name);
}

int config_validate(const xdev_config_t *c)
{
    const unsigned known = XDEV_FLAG_SINGLE_THREAD | XDEV_FLAG_PROGRESS_THREAD |
                           XDEV_FLAG_WILDCARD_FAILS;
    if (c->size < 1 || c->rank < 0 || c->rank >= c->size || c->eager_limit > MAX_EAGER_LIMIT ||
        c->peer_timeout_ms <= 0 || c->finalize_timeout_ms < 0 || (c->flags & ~known) ||
        ((c->flags & XDEV_FLAG_SINGLE_THREAD) && (c->flags & XDEV_FLAG_PROGRESS_THREAD)))
        return XDEV_ERR_ARG;
    if (c->job_secret && strlen(c->job_secret) < MIN_SECRET_LEN)
        return XDEV_ERR_ARG;
    if (!c->transport || !transport_known(c->transport))
        return XDEV_ERR_INIT;
    if (c->size > 1 && !c->job_secret)
        return XDEV_ERR_INIT; /* peers could not prove they belong to the job */
    if (c->peers) {
        for (int i = 0; i < c->size; i++)
            if (!c->peers[i])
                return XDEV_ERR_ARG;
    }
    return XDEV_OK;
}

/* Copy cfg into d, strings included, so the caller's may go away. */
int config_copy(xdev_t *d, const xdev_config_t *cfg)
{
    size_t n = strlen(cfg->transport) + 1 + (cfg->job_secret ? strlen(cfg->job_secret) : 0) + 1;
    int npeers = cfg->peers ? cfg->size : 0;
    for (int i = 0; i < npeers; i++)
        n += strlen(cfg->peers[i]) + 1;
    char *mem = malloc(n + (size_t)npeers * sizeof(char *) + sizeof(char *));
    if (!mem)
        return XDEV_ERR_NOMEM;
    char **table = (char **)(void *)mem;
    char *p = mem + ((size_t)npeers + 1) * sizeof(char *);
    d->cfg = *cfg;
    d->cfg_strings = mem;
#define COPY_STR(dst, src) \
    do { size_t l_ = strlen(src) + 1; memcpy(p, src, l_); dst = p; p += l_; } while (0)
    COPY_STR(d->cfg.transport, cfg->transport);
    COPY_STR(d->cfg.job_secret, cfg->job_secret ? cfg->job_secret : "");
    for (int i = 0; i < npeers; i++)
        COPY_STR(table[i], cfg->peers[i]);
#undef COPY_STR
    d->cfg.peers = npeers ? (const char *const *)table : NULL;
    d->cfg.options = NULL; /* the caller's; what they say is in d->options */
    return XDEV_OK;
}
