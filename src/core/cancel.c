/*
 * cancel.c - xdev_cancel: MPI_Cancel, a dropped future, a clean shutdown
 * with receives still posted.
 *
 * Only what has not begun can be cancelled: a receive no message has
 * matched, and a send of which nothing has left and that no receive has
 * matched. Anything further along goes on as usual, so a request is
 * either cancelled whole or completes whole, never half of each.
 */
#include "device.h"

int xdev_cancel(xdev_request_t *req)
{
    xdev_t *d = req ? req_device(xreq_of(req)) : NULL;
    if (!d)
        return XDEV_ERR_ARG;
    xreq_t *r = xreq_of(req);
    dev_lock(d);
    int rc = XDEV_ERR_ARG;
    if (req_is_active(r) && req_lookup(d, r->id) == r)
        rc = r->phase == PH_DONE ? XDEV_ERR_TOO_LATE : proto_cancel(d, r);
    dev_unlock(d);
    return rc;
}
