/*
 * test_options.c - xdev_config_t.options and the typed variable table.
 *
 *   test_options                 (no launcher) the table's types, the
 *                                options' errors, and that each device
 *                                keeps its own values, read once
 *   xdevrun -n 2 test_options NAME=VALUE
 *                                the job's environment gives NAME a value
 *                                its transport refuses: xdev_init from the
 *                                environment alone fails, and with
 *                                options = { NAME=VALUE } the same
 *                                transport opens and carries a message,
 *                                XDEV_BOOT_DIR changed after init
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "options.h"
#include "unit_check.h"

static void check_types(void)
{
    static const struct { const char *name, *value; int ok; } cases[] = {
        { "XDEV_SHM_RING", "4m", 1 },        { "XDEV_SHM_RING", "4096", 1 },
        { "XDEV_SHM_RING", "4095", 0 },      { "XDEV_SHM_RING", "2g", 0 },
        { "XDEV_SHM_RING", "banana", 0 },    { "XDEV_SHM_RING", " 4m", 0 },
        { "XDEV_SHM_RING", "-1", 0 },        { "XDEV_SHM_RING", "", 0 },
        { "XDEV_SHM_CMA_MIN", "never", 1 },  { "XDEV_SHM_CMA_MIN", "0", 1 },
        { "XDEV_SHM_RING", "never", 0 },     { "XDEV_IBV_RX_BUFS", "256", 1 },
        { "XDEV_IBV_RX_BUFS", "1k", 0 },     { "XDEV_IBV_RX_BUFS", "3", 0 },
        { "XDEV_IBV_RX_BUFS", " 256", 0 },   { "XDEV_IBV_RX_BUFS", "256 ", 0 },
        { "XDEV_IBV_RX_BUFS", "-256", 0 },   { "XDEV_IBV_RX_BUFS", "", 0 },
        { "XDEV_IBV_RX_BUFS", "18446744073709551872", 0 }, /* 2^64 + 256 */
        { "XDEV_IBV_PORT", "0", 0 },         { "XDEV_IBV_PORT", "256", 0 },
        { "XDEV_IBV_PIDFD", "0", 1 },        { "XDEV_IBV_PIDFD", "2", 0 },
        { "XDEV_IBV_PIDFD", "yes", 0 },      { "XDEV_SHM_CMA_MODE", "write", 1 },
        { "XDEV_SHM_CMA_MODE", "wri", 0 },   { "XDEV_SHM_CMA_MODE", "read|write", 0 },
        { "XDEV_SHM_CMA_MODE", "", 0 },      { "XDEV_OFI_PROVIDER", "verbs;ofi_rxm", 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const xdev_var_t *v = xdev_var_find(cases[i].name, strlen(cases[i].name));
        CHECK(v);
        if (v && (xdev_var_check(v, cases[i].value) == XDEV_OK) != cases[i].ok)
            fprintf(stderr, "  %s=\"%s\" judged wrongly\n", cases[i].name, cases[i].value),
                failures++;
    }
    CHECK(!xdev_var_find("XDEV_SHM", 8)); /* a prefix is not a name */
    for (size_t i = 0; i < xdev_nvars; i++) /* every default a value of its own type */
        if (xdev_vars[i].type == XDEV_VAR_CHOICE)
            CHECK(xdev_var_check(&xdev_vars[i], xdev_vars[i].dflt) == XDEV_OK);
}

static int start(const char *const *options, xdev_t **dev)
{
    xdev_config_t cfg;
    xdev_config_init(&cfg);
    cfg.options = options;
    return xdev_init(&cfg, dev);
}

static void check_refused(void)
{
    static const char *const bad[][2] = {
        { "XDEV_NO_SUCH_OPTION=1", NULL }, { "XDEV_EAGER_LIMIT=1k", NULL },
        { "XDEV_RANK=0", NULL },           { "XDEV_SHM_RING", NULL },
        { "=4m", NULL },                   { "XDEV_SHM_RING=banana", NULL },
        { "XDEV_IBV_PIDFD=2", NULL },      { "XDEV_SHM_RING=4m", "XDEV_OFI_RMA=sideways" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *opts[3] = { bad[i][0], bad[i][1], NULL };
        xdev_t *sentinel = (xdev_t *)(uintptr_t)0x5a5a, *dev = sentinel;
        int rc = start(opts, &dev);
        if (rc != XDEV_ERR_ARG || dev != sentinel)
            fprintf(stderr, "  options {%s, %s}: %s, device %s\n", bad[i][0],
                    bad[i][1] ? bad[i][1] : "", xdev_strerror(rc),
                    dev != sentinel ? "written" : "untouched"), failures++;
        if (rc == XDEV_OK)
            xdev_finalize(dev);
    }
}

static void check_devices_apart(void)
{
    setenv("XDEV_SHM_RING", "8m", 1);
    setenv("XDEV_TCP_ADDR", "127.0.0.9", 1);
    setenv("XDEV_IBV_BUF", "banana", 1);
    const char *const a_opts[] = { "XDEV_SHM_RING=4m", "XDEV_SHM_RING=1m", "XDEV_OFI_RMA=off",
                                   "XDEV_IBV_PIDFD=0", NULL };
    xdev_t *a = NULL, *b = NULL;
    CHECK(start(a_opts, &a) == XDEV_OK); /* a bad environment value waits until read */
    CHECK(start(NULL, &b) == XDEV_OK);
    if (!a || !b)
        return;
    setenv("XDEV_SHM_RING", "16m", 1); /* after init: no device sees it */
    size_t ring = 0, buf = 7;
    CHECK(xdev_opt_size(a, "XDEV_SHM_RING", &ring) == XDEV_OK && ring == ((size_t)1 << 20));
    CHECK(xdev_opt_size(b, "XDEV_SHM_RING", &ring) == XDEV_OK && ring == ((size_t)8 << 20));
    CHECK(!strcmp(xdev_opt(a, "XDEV_TCP_ADDR"), "127.0.0.9"));
    CHECK(xdev_opt_size(a, "XDEV_IBV_BUF", &buf) == XDEV_ERR_INIT);
    int rma = -1, mode = -1;
    bool pidfd_a = true, pidfd_b = false;
    CHECK(xdev_opt_choice(a, "XDEV_OFI_RMA", &rma) == XDEV_OK && rma == 2);
    CHECK(xdev_opt_choice(b, "XDEV_OFI_RMA", &rma) == XDEV_OK && rma == 2); /* unset: untouched */
    CHECK(xdev_opt_choice(b, "XDEV_SHM_CMA_MODE", &mode) == XDEV_OK && mode == -1);
    CHECK(xdev_opt_flag(a, "XDEV_IBV_PIDFD", &pidfd_a) == XDEV_OK && !pidfd_a);
    CHECK(xdev_opt_flag(b, "XDEV_IBV_PIDFD", &pidfd_b) == XDEV_OK && !pidfd_b);
    CHECK(!xdev_opt(b, "XDEV_OFI_PROVIDER"));
    /* the environment now, for a caller without a device */
    CHECK(xdev_opt_size(NULL, "XDEV_SHM_RING", &ring) == XDEV_OK && ring == ((size_t)16 << 20));
    CHECK(xdev_opt_size(a, "XDEV_SHM_CMA_MODE", &ring) == XDEV_ERR_INIT); /* not a size */
    xdev_finalize(a);
    xdev_finalize(b);
    unsetenv("XDEV_SHM_RING");
    unsetenv("XDEV_TCP_ADDR");
    unsetenv("XDEV_IBV_BUF");
}

static int job(const char *assignment)
{
    xdev_t *dev;
    int rc = xdev_init(NULL, &dev);
    if (rc != XDEV_ERR_INIT) {
        fprintf(stderr, "init from the environment alone: %s, not XDEV_ERR_INIT\n",
                xdev_strerror(rc));
        return 1;
    }
    const char *const opts[] = { assignment, NULL };
    if ((rc = start(opts, &dev)) != XDEV_OK) {
        fprintf(stderr, "init with %s: %s\n", assignment, xdev_strerror(rc));
        return 1;
    }
    /* The job's environment, too, is read once: a running device keeps the
     * boot directory it started with (tcp looks its peers up there at the
     * first message to each, after init). */
    setenv("XDEV_BOOT_DIR", "/nonexistent/xdev-boot-dir-changed-after-init", 1);
    int me = xdev_rank(dev), token = me == 0 ? 42 : 0;
    if (me == 0)
        rc = xdev_send(dev, &token, sizeof token, 1, 5, 0);
    else if (me == 1)
        rc = xdev_recv(dev, &token, sizeof token, 0, 5, 0, NULL);
    CHECK(rc == XDEV_OK && token == (me <= 1 ? 42 : 0));
    CHECK(xdev_finalize(dev) == XDEV_OK);
    return failures != 0;
}

int main(int argc, char **argv)
{
    if (argc == 2)
        return job(argv[1]);
    check_types();
    check_refused();
    check_devices_apart();
    if (failures)
        fprintf(stderr, "%d checks failed\n", failures);
    return failures != 0;
}
