/*
 * options.h - every XDEV_* variable, typed, and how a transport reads its
 * own.
 *
 * One table (vars.c) names each variable with its type, who reads it, its
 * default and its meaning; xdev-info prints it and the README's
 * Environment table is generated from it. The variables a transport reads
 * are its options: xdev_init takes each one from xdev_config_t.options or,
 * failing that, from the environment, once, and keeps the value in the
 * device, so two devices in one process can be configured apart and a
 * binding can configure one without touching the environment.
 */
#ifndef XDEV_OPTIONS_H
#define XDEV_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include "xdev.h"

typedef enum {
    XDEV_VAR_TEXT,   /* any string */
    XDEV_VAR_SIZE,   /* bytes, with an optional k/m/g suffix, in [min, max] */
    XDEV_VAR_LIMIT,  /* a SIZE, or "never" (read as SIZE_MAX) */
    XDEV_VAR_COUNT,  /* a decimal integer in [min, max] */
    XDEV_VAR_FLAG,   /* 0 or 1 */
    XDEV_VAR_CHOICE, /* one of the words in `choices` */
} xdev_var_type_t;

typedef struct xdev_var {
    const char *name;
    const char *reader;  /* "xdevrun", "core", or the transport(s) it tunes */
    bool option;         /* settable through xdev_config_t.options */
    xdev_var_type_t type;
    const char *choices; /* CHOICE: "read|write" */
    size_t min, max;     /* SIZE, LIMIT, COUNT; max 0: no bound */
    const char *dflt, *meaning;
} xdev_var_t;

extern const xdev_var_t xdev_vars[];
extern const size_t xdev_nvars;

/* The table's lookups (vars.c, so that xdevrun can compile them in). */
const xdev_var_t *xdev_var_find(const char *name, size_t len);
int xdev_var_choice(const xdev_var_t *var, const char *s); /* index in choices, or -1 */

/* XDEV_OK if s is a value var accepts, else XDEV_ERR_ARG. */
int xdev_var_check(const xdev_var_t *var, const char *s);

/* xdev_init: take every option from cfg_options ("NAME=value" strings,
 * NULL-terminated, may be NULL) or the environment into the device.
 * XDEV_ERR_ARG for a name that is not an option or a value its type
 * rejects; the environment's values are checked when read. */
int xdev_options_load(xdev_t *dev, const char *const *cfg_options);
void xdev_options_free(xdev_t *dev);

/*
 * A transport reads its options through these, at open. dev NULL reads
 * the environment as it is now (xdev-info, which has no device). The
 * typed readers leave *out alone when the option is unset, so the caller
 * sets its default first, and return XDEV_ERR_INIT for a value that does
 * not parse as the table says (only the environment can give one).
 */
const char *xdev_opt(const xdev_t *dev, const char *name); /* NULL: unset or empty */
int xdev_opt_size(const xdev_t *dev, const char *name, size_t *out); /* SIZE, LIMIT, COUNT */
int xdev_opt_flag(const xdev_t *dev, const char *name, bool *out);
int xdev_opt_choice(const xdev_t *dev, const char *name, int *out); /* index in choices */

#endif
