/*
 * check.h - CHECK for the test programs that have no harness of their own:
 * when cond is false, say where and what (printf-style), count it in
 * `failures`, and go on, so that one run reports every broken check.
 */
#ifndef XDEV_TEST_CHECK_H
#define XDEV_TEST_CHECK_H

#include <stdio.h>

static int failures;
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);               \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            failures++;                                                        \
        }                                                                      \
    } while (0)

#endif
