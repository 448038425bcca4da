/*
 * hot.h - XDEV_HOT marks the functions a small message passes through
 * (posting, waiting, progress, matching, and a transport's own send and
 * receive), so that the compiler places them together, in .text.hot.
 *
 * Why: where each system call empties the TLB (page-table isolation
 * without PCID, as on the VMs this project is measured on), every page of
 * code that a message touches after its recv returns costs a page walk.
 * Spread over the library, tcp's path took 15 pages; kept together it
 * takes 5 or 6, and an 8-byte round trip over tcp is 1-2% shorter
 * (test/bench/RESULTS.md, "tcp 8-byte latency").
 */
#ifndef XDEV_KIT_HOT_H
#define XDEV_KIT_HOT_H

#define XDEV_HOT __attribute__((hot))

#endif
