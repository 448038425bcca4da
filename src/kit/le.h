/*
 * le.h - little-endian 32- and 64-bit integers in bytes: the wire format's
 * (core/wire.h) and the collectives' failure notices. Header-only, so that
 * libxdev_coll, which sees nothing of the core but xdev.h, writes them the
 * same way.
 */
#ifndef XDEV_KIT_LE_H
#define XDEV_KIT_LE_H

#include <stdint.h>

static inline void xdev_put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline uint32_t xdev_get_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void xdev_put_le64(uint8_t *p, uint64_t v)
{
    xdev_put_le32(p, (uint32_t)v);
    xdev_put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint64_t xdev_get_le64(const uint8_t *p)
{
    return (uint64_t)xdev_get_le32(p) | (uint64_t)xdev_get_le32(p + 4) << 32;
}

#endif
