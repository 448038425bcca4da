/*
 * fuzz_config.c - the configuration parser (xdev_config_init reading the
 * XDEV_* environment through config_from_env and the typed readers of
 * vars.c; then config_validate) on any values. The input is the
 * values, one per line, of the variables in vars[] in that order; the
 * variables after the last line are unset.
 *
 * The environment is whatever the launcher, a job script or a user set,
 * so the parser promises (xdev.h, config.c): an error leaves the caller
 * the defaults and nothing half-parsed; a byte count it accepts is the
 * number written, scaled by its k/m/g suffix without overflow, and never
 * negative; an integer it accepts is the number written; an empty value
 * is no value (the default holds); and a config that
 * config_validate passes keeps every rule xdev_init relies on.
 */
#include "device.h"
#include "options.h"
#include "fuzz_check.h"

static const char *const vars[] = {
    "XDEV_RANK", "XDEV_SIZE", "XDEV_EAGER_LIMIT", "XDEV_UNEXPECTED_LIMIT",
    "XDEV_PEER_TIMEOUT_MS", "XDEV_FINALIZE_TIMEOUT_MS", "XDEV_THREADS", "XDEV_TRANSPORT",
    "XDEV_JOB_SECRET", "XDEV_PROGRESS_THREAD", "XDEV_WILDCARD_FAILS",
};
enum { NVARS = sizeof vars / sizeof vars[0] };

static xdev_config_t defaults;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    for (int i = 0; i < NVARS; i++)
        unsetenv(vars[i]);
    FUZZ_CHECK(xdev_config_init(&defaults) == XDEV_OK);
    return 0;
}

static unsigned suffix_shift(const char *s)
{
    size_t n = strlen(s);
    switch (n ? s[n - 1] : 0) {
    case 'k': case 'K': return 10;
    case 'm': case 'M': return 20;
    case 'g': case 'G': return 30;
    default: return 0;
    }
}

static void check_size(const char *s, size_t v, size_t dflt)
{
    if (!s || !*s) {
        FUZZ_CHECK(v == dflt);
        return;
    }
    unsigned shift = suffix_shift(s);
    FUZZ_CHECK(!strchr(s, '-'));
    FUZZ_CHECK((v & (((size_t)1 << shift) - 1)) == 0 && v >> shift == strtoull(s, NULL, 10));
}

static void check_int(const char *s, int v, int dflt)
{
    if (!s || !*s)
        FUZZ_CHECK(v == dflt);
    else
        FUZZ_CHECK(v >= 0 && v == strtol(s, NULL, 10));
}

static void check_valid(const xdev_config_t *c)
{
    FUZZ_CHECK(c->size >= 1 && c->rank >= 0 && c->rank < c->size);
    FUZZ_CHECK(c->eager_limit <= (1u << 30));
    FUZZ_CHECK(c->peer_timeout_ms > 0 && c->finalize_timeout_ms >= 0);
    FUZZ_CHECK(!c->job_secret || strlen(c->job_secret) >= 16);
    FUZZ_CHECK(c->size == 1 || c->job_secret);
    FUZZ_CHECK(!strcmp(c->transport, "auto") || transport_find(c->transport));
    FUZZ_CHECK(!(c->flags & XDEV_FLAG_SINGLE_THREAD) || !(c->flags & XDEV_FLAG_PROGRESS_THREAD));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    FUZZ_CHECK(text);
    memcpy(text, data, size);
    text[size] = '\0';
    char *rest = text, *value[NVARS] = { 0 };
    for (int i = 0; i < NVARS; i++) {
        value[i] = strsep(&rest, "\n");
        if (value[i])
            setenv(vars[i], value[i], 1);
        else
            unsetenv(vars[i]);
    }
    xdev_config_t c;
    int rc = xdev_config_init(&c);
    FUZZ_CHECK(rc == XDEV_OK || rc == XDEV_ERR_INIT);
    if (rc != XDEV_OK) {
        FUZZ_CHECK(memcmp(&c, &defaults, sizeof c) == 0);
    } else {
        check_int(value[0], c.rank, defaults.rank);
        check_int(value[1], c.size, defaults.size);
        check_size(value[2], c.eager_limit, defaults.eager_limit);
        check_size(value[3], c.unexpected_limit, defaults.unexpected_limit);
        check_int(value[4], c.peer_timeout_ms, defaults.peer_timeout_ms);
        check_int(value[5], c.finalize_timeout_ms, defaults.finalize_timeout_ms);
        if (config_validate(&c) == XDEV_OK)
            check_valid(&c);
    }
    free(text);
    return 0;
}
