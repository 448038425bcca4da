/*
 * ofi_lazy.c - libfabric is loaded only by a device that uses ofi, and
 * neither its load nor the device touches the program's signal handlers.
 *
 * Linked, Debian's libfabric brought PSM libraries whose constructors
 * replaced SIGSEGV, SIGINT and four more handlers before main and slept
 * about 200 ms. Run as both ranks of `xdevrun -n 2 ofi_lazy`: at main
 * libfabric is not mapped; a tcp device comes and goes without mapping it
 * or changing a handler (a sanitizer's own may be there from the start);
 * then, with handlers of our own installed, an ofi device (tcp;ofi_rxm)
 * maps it and leaves our handlers in place.
 * Each device carries one message from rank 0 to rank 1.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 9
#define TAG 1

static const int watched[] = { SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGINT, SIGTERM };
#define NWATCHED (int)(sizeof watched / sizeof watched[0])

static void ours(int sig) { (void)sig; }

static bool libfabric_mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    REQUIRE(f != NULL, "cannot open /proc/self/maps");
    char line[512];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, "/libfabric.so") != NULL;
    fclose(f);
    return found;
}

/* want: one handler for all, or NULL for those in at_main. */
static void check_handlers(const char *when, void (*want)(int), const struct sigaction *at_main)
{
    for (int i = 0; i < NWATCHED; i++) {
        struct sigaction now;
        sigaction(watched[i], NULL, &now);
        if (want)
            CHECK(now.sa_handler == want, "%s: the handler of signal %d is not ours", when, watched[i]);
        else
            CHECK(now.sa_handler == at_main[i].sa_handler,
                  "%s: the handler of signal %d changed since main", when, watched[i]);
    }
}

static void one_message(const char *transport)
{
    xdev_t *dev = NULL;
    setenv("XDEV_TRANSPORT", transport, 1);
    REQUIRE_RC(xdev_init(NULL, &dev), XDEV_OK);
    fault_set_rank(xdev_rank(dev));
    char buf[6] = "hello", got[6] = "";
    xdev_status_t st;
    if (xdev_rank(dev) == 0) {
        CHECK_RC(xdev_send(dev, buf, sizeof buf, 1, TAG, CTX), XDEV_OK);
    } else if (xdev_rank(dev) == 1) {
        CHECK_RC(xdev_recv(dev, got, sizeof got, 0, TAG, CTX, &st), XDEV_OK);
        CHECK(st.error == XDEV_OK && st.count == sizeof got && !memcmp(got, buf, sizeof got),
              "over %s: received error %d, %zu bytes '%.6s'", transport, st.error, st.count, got);
    }
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
}

int main(void)
{
    fault_setup("ofi-lazy", 60);

    fault_step("at main");
    struct sigaction at_main[NWATCHED];
    for (int i = 0; i < NWATCHED; i++)
        sigaction(watched[i], NULL, &at_main[i]);
    CHECK(!libfabric_mapped(), "libfabric is mapped before any device was opened");

    fault_step("a tcp device");
    one_message("tcp");
    CHECK(!libfabric_mapped(), "a tcp device mapped libfabric");
    check_handlers("after a tcp device", NULL, at_main);

    fault_step("an ofi device");
    for (int i = 0; i < NWATCHED; i++)
        signal(watched[i], ours);
    setenv("XDEV_OFI_PROVIDER", "tcp;ofi_rxm", 1);
    one_message("ofi");
    CHECK(libfabric_mapped(), "an ofi device worked without libfabric mapped");
    check_handlers("after an ofi device", ours, NULL);
    return fault_finish();
}
