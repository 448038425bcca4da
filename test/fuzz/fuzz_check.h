/*
 * fuzz_check.h - a target's assertion. A failed check aborts, which
 * libFuzzer reports as a crash and keeps the input that caused it; it says
 * which check first, since an abort alone points at nothing.
 */
#ifndef XDEV_FUZZ_CHECK_H
#define XDEV_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(c)                                                                  \
    do {                                                                               \
        if (!(c)) {                                                                    \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);      \
            abort();                                                                   \
        }                                                                              \
    } while (0)

#endif
