/*
 * introspect.h - read-only gauges for tests and tools. Not part of the
 * public API; reached by linking libxdev_internal.
 */
#ifndef XDEV_INTROSPECT_H
#define XDEV_INTROSPECT_H

#include <stddef.h>
#include "xdev.h"

/* Bytes of unexpected-message memory the device holds now, and the most it
 * ever held. Both stay at or under xdev_config_t.unexpected_limit unless a
 * request or probe waited for something behind the unexpected messages. */
size_t xdev_unexpected_bytes(xdev_t *dev);
size_t xdev_unexpected_peak(xdev_t *dev);

/* Name of the transport that carries traffic to `peer` ("self", "tcp"). */
const char *xdev_peer_transport(xdev_t *dev, int peer);

/* The transports this build has, in the order `auto` considers them. */
struct xdev_tp_ops;
const struct xdev_tp_ops *const *xdev_transports_built(size_t *n);

/* Make one more transport known by name to xdev_config_t.transport, for
 * this process: a test's (src/loop). Call before xdev_init. */
void xdev_transport_add(const struct xdev_tp_ops *ops);

#endif
