/*
 * soak_probe.h - the receiver of the K_PROBE streams (one context shared
 * by every sender thread): it looks with xdev_probe or xdev_iprobe from
 * XDEV_ANY_SOURCE, checks that what it found is the message due next on
 * that sender thread's stream, with its length, then receives exactly
 * that source and tag with xdev_recv (one in eight into a short buffer).
 * A cut stream's marker must be found as XDEV_ERR_PEER and fail the
 * receive that takes it.
 */
#ifndef SOAK_PROBE_H
#define SOAK_PROBE_H

void *soak_prober(void *arg);

#endif
