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
 *
 * It opens no device and needs no launcher.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "introspect.h"
#include "transport.h"

extern char **environ;

static bool known(const char *assignment)
{
    for (size_t i = 0; i < xdev_env_nvars; i++) {
        size_t n = strlen(xdev_env_vars[i].name);
        if (!strncmp(assignment, xdev_env_vars[i].name, n) && assignment[n] == '=')
            return true;
    }
    return false;
}

static void variables(void)
{
    printf("\nvariables (current value, default, meaning):\n");
    for (size_t i = 0; i < xdev_env_nvars; i++) {
        const xdev_env_var_t *v = &xdev_env_vars[i];
        const char *now = getenv(v->name);
        printf("  %-26s %-14s %-20s %s\n", v->name, now ? now : "(unset)", v->dflt, v->meaning);
    }
    /* libxdev_coll's (XDEV_COLL_*, see the README's Collectives) and
     * misspelt ones are shown as set, so a typo does not go unnoticed. */
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, "XDEV_", 5) && !known(*e))
            printf("  %-41s %s\n", *e,
                   strncmp(*e, "XDEV_COLL_", 10) ? "not read by libxdev: misspelt?"
                                                 : "read by libxdev_coll");
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "-v")) {
        printf("%s\n", xdev_version());
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "usage: xdev-info [-v]\n");
        return 2;
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
