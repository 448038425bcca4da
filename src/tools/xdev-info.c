/*
 * xdev-info - what this build of xdev has and what it finds here, as
 * ucx_info and fi_info do for theirs:
 *
 *   xdev-info            version, transports (each with what it finds on
 *                        this machine: /dev/shm and the single copy,
 *                        network interfaces, RDMA devices and ports,
 *                        libfabric providers), then every XDEV_* variable
 *                        with its current and default value
 *   xdev-info -v         only the version
 *   xdev-info --markdown the variables as the README's Environment table
 *
 * It opens no device and needs no launcher.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "introspect.h"
#include "options.h"
#include "transport.h"

extern char **environ;

static bool known(const char *assignment)
{
    const char *eq = strchr(assignment, '=');
    return eq && xdev_var_find(assignment, (size_t)(eq - assignment));
}

/* What values a variable takes, in words. */
static const char *type_words(const xdev_var_t *v, char *buf, size_t cap)
{
    switch (v->type) {
    case XDEV_VAR_SIZE: return "bytes (k/m/g)";
    case XDEV_VAR_LIMIT: return "bytes (k/m/g) or never";
    case XDEV_VAR_COUNT: return "number";
    case XDEV_VAR_FLAG: return "0 or 1";
    case XDEV_VAR_CHOICE:
        snprintf(buf, cap, "%s", v->choices);
        for (char *c = buf; *c; c++)
            if (*c == '|')
                *c = ',';
        return buf;
    case XDEV_VAR_TEXT: break;
    }
    return "text";
}

static void variables(void)
{
    char buf[64];
    printf("\nvariables (current value, default, read by: meaning; * option: settable per device):\n");
    for (size_t i = 0; i < xdev_nvars; i++) {
        const xdev_var_t *v = &xdev_vars[i];
        const char *now = getenv(v->name);
        printf("  %-26s %-14s %-20s %s%s: %s [%s]\n", v->name, now ? now : "(unset)", v->dflt,
               v->reader, v->option ? "*" : "", v->meaning, type_words(v, buf, sizeof buf));
        if (now && *now && xdev_var_check(v, now) != XDEV_OK)
            printf("  %-26s ^ refused: a device that reads it fails xdev_init (XDEV_ERR_INIT)\n",
                   "");
    }
    /* libxdev_coll's (XDEV_COLL_*, see the README's Collectives) and
     * misspelt ones are shown as set, so a typo does not go unnoticed. */
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "XDEV_", 5) && !known(*e))
            printf("  %-41s %s\n", *e,
                   strncmp(*e, "XDEV_COLL_", 10) ? "not read by libxdev: misspelt?"
                                                 : "read by libxdev_coll");
}

/* The README's Environment table, generated so that it cannot drift. */
static void markdown(void)
{
    char buf[64];
    printf("| variable | values | default | read by | meaning |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < xdev_nvars; i++) {
        const xdev_var_t *v = &xdev_vars[i];
        printf("| `%s` | %s | %s | %s%s | %s |\n", v->name, type_words(v, buf, sizeof buf),
               v->dflt, v->reader, v->option ? " (option)" : "", v->meaning);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "-v")) {
        printf("%s\n", xdev_version());
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "--markdown")) {
        markdown();
        return 0;
    }
    if (argc > 1) {
        bool help = !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help");
        fprintf(help ? stdout : stderr, "usage: xdev-info [-v | --markdown]\n");
        return help ? 0 : 2;
    }
    size_t n;
    const xdev_tp_ops_t *const *tps = xdev_transports_built(&n);
    printf("xdev %s\ntransports built:", xdev_version());
    for (size_t i = 0; i < n; i++)
        printf(" %s", tps[i]->name);
    printf("\n");
    for (size_t i = 0; i < n; i++) {
        printf("\n%s:\n", tps[i]->name);
        if (tps[i]->info)
            tps[i]->info(stdout);
        fflush(stdout);
    }
    variables();
    return 0;
}
