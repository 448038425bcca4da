/*
 * inject.h - make chosen system calls of the library fail or come up short.
 *
 * A test executable linked with inject.c and the linker's --wrap for each
 * call below (test/inject/meson.build) routes the library's calls through
 * wrappers here. Nothing fires until inject_start() reads the rules, so a
 * test allocates what it needs first. A rule is
 *
 *     CALL:WHAT:EVERY[:SKIP[:LIMIT]]
 *
 * and rules are separated by commas. CALL is one of the wrapped calls;
 * WHAT is "short" (a read or write moves less than asked, at least one
 * byte) or an errno name (EINTR, EAGAIN, ENOMEM, EPERM, ...), which makes
 * the call fail with it without doing anything. The rule fires on calls
 * SKIP+EVERY, SKIP+2*EVERY, ... of CALL made after inject_start(), at most
 * LIMIT times (0 or absent: no limit). Counting is per process and
 * deterministic, so a failing run repeats.
 */
#ifndef INJECT_H
#define INJECT_H

/* Read the rules from the environment variable INJECT_FAULTS (or spec, if
 * not NULL) and start counting. Exits the process on a malformed rule. */
void inject_start(const char *spec);
/* Stop firing; counts are kept. */
void inject_stop(void);
/* How many times the rules for call have fired so far. */
long inject_fired(const char *call);
/* All rules' firings together. */
long inject_fired_total(void);

#endif
