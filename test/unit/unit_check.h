/*
 * unit_check.h - the unit tests' one assertion: count a failure, say where,
 * and go on, so that one run reports every broken check.
 */
#ifndef XDEV_UNIT_CHECK_H
#define XDEV_UNIT_CHECK_H

#include <stdio.h>

static int failures;
#define CHECK(c)                                                                       \
    do {                                                                               \
        if (!(c)) {                                                                    \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);      \
            failures++;                                                                \
        }                                                                              \
    } while (0)

#endif
