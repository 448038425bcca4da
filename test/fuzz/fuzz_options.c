/*
 * fuzz_options.c - xdev_config_t.options, the per-device transport
 * options: xdev_options_load on any list of strings, then the typed
 * readers on what it kept. The input is the strings, one per line.
 *
 * Options come from a binding's caller or a job script, so the loader
 * promises (xdev.h): it accepts the list only if every string is
 * "NAME=value" with NAME an option of the table and a value of the
 * option's type, and then keeps, per option, the last value given; a
 * number it keeps reads back as the digits written scaled by the suffix,
 * inside the option's bounds; a flag is 0 or 1; a choice is one of the
 * table's words, whole.
 */
#include <stdint.h>
#include "device.h"
#include "fuzz_check.h"
#include "options.h"

#define MAX_LINES 16

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    for (size_t i = 0; i < xdev_nvars; i++)
        unsetenv(xdev_vars[i].name);
    return 0;
}

static unsigned shift_of(char c)
{
    return c == 'k' || c == 'K' ? 10 : c == 'm' || c == 'M' ? 20 : c == 'g' || c == 'G' ? 30 : 0;
}

/* What the typed reader returns agrees with the text, on its own terms. */
static void check_read_back(const xdev_t *d, const xdev_var_t *v, const char *s)
{
    size_t n = 12345;
    bool flag;
    int choice = -1;
    switch (v->type) {
    case XDEV_VAR_SIZE:
    case XDEV_VAR_LIMIT:
    case XDEV_VAR_COUNT:
        FUZZ_CHECK(xdev_opt_size(d, v->name, &n) == XDEV_OK);
        if (!strcmp(s, "never")) {
            FUZZ_CHECK(v->type == XDEV_VAR_LIMIT && n == SIZE_MAX);
            break;
        }
        FUZZ_CHECK(s[0] >= '0' && s[0] <= '9');
        unsigned shift = shift_of(s[strlen(s) - 1]);
        FUZZ_CHECK(v->type != XDEV_VAR_COUNT || shift == 0);
        FUZZ_CHECK(n >> shift == strtoull(s, NULL, 10) && (n & (((size_t)1 << shift) - 1)) == 0);
        FUZZ_CHECK(n >= v->min && (!v->max || n <= v->max));
        break;
    case XDEV_VAR_FLAG:
        FUZZ_CHECK(xdev_opt_flag(d, v->name, &flag) == XDEV_OK);
        FUZZ_CHECK(!strcmp(s, flag ? "1" : "0"));
        break;
    case XDEV_VAR_CHOICE: {
        FUZZ_CHECK(xdev_opt_choice(d, v->name, &choice) == XDEV_OK && choice >= 0);
        const char *c = v->choices;
        for (int i = 0; i < choice; i++)
            c = strchr(c, '|') + 1;
        FUZZ_CHECK(!strncmp(c, s, strlen(s)) && (c[strlen(s)] == '|' || !c[strlen(s)]));
        break;
    }
    case XDEV_VAR_TEXT:
        FUZZ_CHECK(!strcmp(xdev_opt(d, v->name), s));
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    FUZZ_CHECK(text);
    memcpy(text, data, size);
    text[size] = '\0';
    const char *lines[MAX_LINES + 1] = { 0 };
    char *rest = text;
    size_t n = 0;
    bool valid = true;
    while (n < MAX_LINES && (lines[n] = strsep(&rest, "\n"))) {
        const char *eq = strchr(lines[n], '=');
        const xdev_var_t *v = eq ? xdev_var_find(lines[n], (size_t)(eq - lines[n])) : NULL;
        valid &= v && v->option && xdev_var_check(v, eq + 1) == XDEV_OK;
        n++;
    }
    lines[n] = NULL;
    static xdev_t d;
    memset(&d, 0, sizeof d);
    int rc = xdev_options_load(&d, lines);
    FUZZ_CHECK(rc == (valid ? XDEV_OK : XDEV_ERR_ARG));
    for (size_t i = 0; rc == XDEV_OK && i < xdev_nvars; i++) {
        const char *last = NULL; /* the last value given for this option */
        size_t len = strlen(xdev_vars[i].name);
        for (size_t l = 0; l < n; l++)
            if (!strncmp(lines[l], xdev_vars[i].name, len) && lines[l][len] == '=')
                last = lines[l] + len + 1;
        FUZZ_CHECK(!last == !d.options[i] && (!last || !strcmp(last, d.options[i])));
        if (last && *last)
            check_read_back(&d, &xdev_vars[i], last);
    }
    xdev_options_free(&d);
    free(text);
    return 0;
}
