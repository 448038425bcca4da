/*
 * cases.h - the conformance cases; each lives in the file of its name and
 * runs between h_init and h_finalize on every rank.
 */
#ifndef XDEV_CONFORMANCE_CASES_H
#define XDEV_CONFORMANCE_CASES_H

void case_matching(void);
void matching_ordering(void); /* ordering.c */
void matching_probe(void);    /* probe.c */
void case_sizes(void);
void case_truncate(void);
void case_issend(void);
void case_peek(void);
void case_threads(void);
void threads_reap(void);      /* reap.c */
void case_outstanding(void);
void case_stress(void);
void case_self(void);
void case_mprobe(void);
void case_cancel(void);
void case_wakeup(void);
void case_some(void);
void case_event(void);
void case_vector(void);
void case_stats(void);
void case_handoff(void);
void case_fork(void);
void case_devices(void);
void case_signals(void);
void signals_before_init(void); /* signals.c: starts the storm */

#endif
