/*
 * test_clock_stride.c - how often a spinning wait reads the clock, for what
 * a reading costs: every 16th poll where it is read in user space (tens of
 * ns), doubling per doubling of the cost past 64 ns, never rarer than every
 * 1024th; and this machine's clock measured as something a reading costs.
 */
#include <stdio.h>
#include "device.h"
#include "unit_check.h"

int main(void)
{
    CHECK(progress_clock_stride(0) == 16);
    CHECK(progress_clock_stride(22) == 16);  /* TSC through the vDSO */
    CHECK(progress_clock_stride(64) == 16);
    CHECK(progress_clock_stride(65) == 32);
    CHECK(progress_clock_stride(128) == 32);
    CHECK(progress_clock_stride(129) == 64);
    CHECK(progress_clock_stride(1900) == 512); /* an emulated HPET */
    CHECK(progress_clock_stride(3000) == 1024);
    CHECK(progress_clock_stride(UINT64_MAX) == 1024);

    uint64_t ns = progress_clock_reading_ns();
    unsigned stride = progress_clock_stride(ns);
    CHECK(ns < 1000000000ull); /* two readings in a row, not a second apart */
    CHECK(stride >= 16 && stride <= 1024 && (stride & (stride - 1)) == 0);
    printf("a clock reading here: %llu ns; polls between readings: %u\n",
           (unsigned long long)ns, stride);
    if (failures)
        fprintf(stderr, "%d checks failed\n", failures);
    return failures != 0;
}
