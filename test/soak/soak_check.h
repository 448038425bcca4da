/*
 * soak_check.h - whether a completed receive got what it had to: the
 * message due next on its stream, whole, or truncated at the buffer's end
 * with its full length in status.msg_len, every byte as sent, and nothing
 * written past the message or the buffer.
 */
#ifndef SOAK_CHECK_H
#define SOAK_CHECK_H

#include <stddef.h>

#include "xdev.h"

/* The receive into buf (cap bytes, from soak_rbuf) was to get message k of
 * the stream (src, kind, t) and completed with *st. Reports every
 * difference, counts what arrived. */
void soak_check_recv(const char *who, int src, int kind, int t, int k, const xdev_status_t *st,
                     const unsigned char *buf, size_t cap);

/* A receive that xdev_cancel cancelled: XDEV_ERR_CANCELED, no bytes, and
 * not one byte of buf (cap bytes, from soak_rbuf) written. */
void soak_check_cancelled(const char *who, const xdev_status_t *st, const unsigned char *buf,
                          size_t cap);

#endif
