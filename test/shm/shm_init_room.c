/*
 * shm_init_room.c - what xdev_init says when /dev/shm has no room for this
 * rank's rings (run by shm_small_devshm.sh in a small tmpfs).
 *
 * Prints "init RC" and exits 0 when xdev_init returned XDEV_OK (the device
 * is then finalized) or XDEV_ERR_NOMEM, 1 for anything else. Dying by a
 * signal (SIGBUS on the first write to pages /dev/shm cannot give) is what
 * the script looks for.
 */
#include <stdio.h>

#include "xdev.h"

int main(void)
{
    xdev_t *dev;
    int rc = xdev_init(NULL, &dev);
    printf("init %d\n", rc);
    fflush(stdout);
    if (rc == XDEV_OK)
        return xdev_finalize(dev) == XDEV_OK ? 0 : 1;
    return rc == XDEV_ERR_NOMEM ? 0 : 1;
}
