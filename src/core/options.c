/*
 * options.c - checking a variable's value against its type, and the
 * device's own copy of its transports' options.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "device.h"
#include "options.h"
#include "../kit/size.h"

/* A COUNT: digits only, no suffix, no sign. */
static int parse_count(const char *s, size_t *out)
{
    size_t n = strlen(s);
    if (!n || s[n - 1] < '0' || s[n - 1] > '9' || xdev_parse_size(s, out))
        return XDEV_ERR_ARG;
    return XDEV_OK;
}

static int parse_number(const xdev_var_t *var, const char *s, size_t *out)
{
    int rc;
    if (var->type == XDEV_VAR_LIMIT && !strcmp(s, "never")) {
        *out = SIZE_MAX;
        return XDEV_OK;
    }
    if (var->type == XDEV_VAR_COUNT)
        rc = parse_count(s, out);
    else
        rc = xdev_parse_size(s, out) == 0 ? XDEV_OK : XDEV_ERR_ARG;
    if (rc == XDEV_OK && (*out < var->min || (var->max && *out > var->max)))
        rc = XDEV_ERR_ARG;
    return rc;
}

int xdev_var_check(const xdev_var_t *var, const char *s)
{
    size_t n;
    switch (var->type) {
    case XDEV_VAR_SIZE:
    case XDEV_VAR_LIMIT:
    case XDEV_VAR_COUNT:
        return parse_number(var, s, &n);
    case XDEV_VAR_FLAG:
        return !strcmp(s, "0") || !strcmp(s, "1") ? XDEV_OK : XDEV_ERR_ARG;
    case XDEV_VAR_CHOICE:
        return xdev_var_choice(var, s) >= 0 ? XDEV_OK : XDEV_ERR_ARG;
    case XDEV_VAR_TEXT:
        return XDEV_OK;
    }
    return XDEV_ERR_ARG;
}

int xdev_options_load(xdev_t *d, const char *const *cfg_options)
{
    d->options = calloc(xdev_nvars, sizeof *d->options);
    if (!d->options)
        return XDEV_ERR_NOMEM;
    for (const char *const *o = cfg_options; o && *o; o++) {
        const char *eq = strchr(*o, '=');
        const xdev_var_t *var = eq ? xdev_var_find(*o, (size_t)(eq - *o)) : NULL;
        if (!var || !var->option || xdev_var_check(var, eq + 1) != XDEV_OK)
            return XDEV_ERR_ARG;
        size_t i = (size_t)(var - xdev_vars);
        free(d->options[i]); /* named twice: the last one holds, as in a shell */
        if (!(d->options[i] = strdup(eq + 1)))
            return XDEV_ERR_NOMEM;
    }
    for (size_t i = 0; i < xdev_nvars; i++) {
        const char *env = getenv(xdev_vars[i].name);
        if (xdev_vars[i].option && !d->options[i] && env && !(d->options[i] = strdup(env)))
            return XDEV_ERR_NOMEM;
    }
    return XDEV_OK;
}

void xdev_options_free(xdev_t *d)
{
    for (size_t i = 0; d->options && i < xdev_nvars; i++)
        free(d->options[i]);
    free(d->options);
    d->options = NULL;
}

/* The option's table entry and its value; the value NULL when unset. */
static const xdev_var_t *lookup(const xdev_t *d, const char *name, const char **value)
{
    const xdev_var_t *var = xdev_var_find(name, strlen(name));
    *value = NULL;
    if (var)
        *value = d ? d->options[var - xdev_vars] : getenv(name);
    if (*value && !**value)
        *value = NULL;
    return var;
}

const char *xdev_opt(const xdev_t *d, const char *name)
{
    const char *v;
    lookup(d, name, &v);
    return v;
}

int xdev_opt_size(const xdev_t *d, const char *name, size_t *out)
{
    const char *v;
    const xdev_var_t *var = lookup(d, name, &v);
    if (!var || (var->type != XDEV_VAR_SIZE && var->type != XDEV_VAR_LIMIT &&
                 var->type != XDEV_VAR_COUNT))
        return XDEV_ERR_INIT;
    size_t n;
    if (v && parse_number(var, v, &n) != XDEV_OK)
        return XDEV_ERR_INIT;
    if (v)
        *out = n;
    return XDEV_OK;
}

int xdev_opt_flag(const xdev_t *d, const char *name, bool *out)
{
    const char *v;
    const xdev_var_t *var = lookup(d, name, &v);
    if (!var || var->type != XDEV_VAR_FLAG || (v && xdev_var_check(var, v) != XDEV_OK))
        return XDEV_ERR_INIT;
    if (v)
        *out = v[0] == '1';
    return XDEV_OK;
}

int xdev_opt_choice(const xdev_t *d, const char *name, int *out)
{
    const char *v;
    const xdev_var_t *var = lookup(d, name, &v);
    if (!var || var->type != XDEV_VAR_CHOICE)
        return XDEV_ERR_INIT;
    int i = v ? xdev_var_choice(var, v) : 0;
    if (i < 0)
        return XDEV_ERR_INIT;
    if (v)
        *out = i;
    return XDEV_OK;
}
