/*
 * hold_pmix.c - preloaded into a program that knows nothing of PMIx, it
 * makes that program hold PMIx itself from start to exit, as a program
 * that starts several devices under PMIx must (README, Launching): each
 * device's PMIx_Finalize then leaves the process's hold in place.
 */
#include <pmix.h>

static pmix_proc_t me;
static int held;

__attribute__((constructor)) static void hold(void)
{
    held = PMIx_Init(&me, NULL, 0) == PMIX_SUCCESS;
}

__attribute__((destructor)) static void let_go(void)
{
    if (held)
        PMIx_Finalize(NULL, 0);
}
