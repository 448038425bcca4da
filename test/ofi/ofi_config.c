/*
 * ofi_config.c - bad ofi settings fail xdev_init with XDEV_ERR_INIT, and a
 * device opened afterwards in the same process works.
 *
 * Run as both ranks of `xdevrun -n 2` with XDEV_TRANSPORT=ofi and a valid
 * XDEV_OFI_PROVIDER: first XDEV_OFI_RMA=sideways, then a provider no
 * libfabric has, must each make xdev_init fail; then, with the settings
 * restored, rank 0 sends a message to rank 1 and both finalize cleanly.
 */
#include <stdlib.h>
#include <string.h>

#include "fault_util.h"
#include "xdev.h"

#define CTX 9
#define TAG 1

int main(void)
{
    fault_setup("ofi-config", 60);
    xdev_t *dev = NULL;

    fault_step("XDEV_OFI_RMA=sideways");
    setenv("XDEV_OFI_RMA", "sideways", 1);
    CHECK_RC(xdev_init(NULL, &dev), XDEV_ERR_INIT);
    unsetenv("XDEV_OFI_RMA");

    fault_step("XDEV_OFI_PROVIDER=no-such-provider");
    const char *prov = getenv("XDEV_OFI_PROVIDER");
    REQUIRE(prov && *prov, "XDEV_OFI_PROVIDER must name this machine's provider");
    char *saved = strdup(prov);
    setenv("XDEV_OFI_PROVIDER", "no-such-provider", 1);
    CHECK_RC(xdev_init(NULL, &dev), XDEV_ERR_INIT);
    setenv("XDEV_OFI_PROVIDER", saved, 1);
    free(saved);

    fault_step("a good device after the bad ones");
    REQUIRE_RC(xdev_init(NULL, &dev), XDEV_OK);
    fault_set_rank(xdev_rank(dev));
    char buf[6] = "hello";
    if (xdev_rank(dev) == 0) {
        CHECK_RC(xdev_send(dev, buf, sizeof buf, 1, TAG, CTX), XDEV_OK);
    } else if (xdev_rank(dev) == 1) {
        char got[6] = "";
        xdev_status_t st;
        CHECK_RC(xdev_recv(dev, got, sizeof got, 0, TAG, CTX, &st), XDEV_OK);
        CHECK(st.error == XDEV_OK && st.count == sizeof got && !memcmp(got, buf, sizeof got),
              "received error %d, %zu bytes '%.6s'", st.error, st.count, got);
    }
    CHECK_RC(xdev_finalize(dev), XDEV_OK);
    return fault_finish();
}
