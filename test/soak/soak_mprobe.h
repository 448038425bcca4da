/*
 * soak_mprobe.h - the receivers of the K_MPROBE streams (one context
 * shared by every sender thread): two threads race to claim messages from
 * XDEV_ANY_SOURCE with xdev_mprobe or xdev_improbe and receive them with
 * xdev_mrecv or xdev_imrecv (one in eight into a short buffer). A claim
 * must be a message of its stream not claimed before, later than any this
 * thread claimed of it; at the end (soak_mprobe_check) what arrived of
 * each stream must be its first messages, each exactly once, all of them
 * from a live sender, and up to the cut from a killed one.
 */
#ifndef SOAK_MPROBE_H
#define SOAK_MPROBE_H

#define SOAK_MPROBE_THREADS 2

/* Before the threads start. */
void soak_mprobe_init(void);
void *soak_mprober(void *arg);
/* After they have all ended. */
void soak_mprobe_check(void);

#endif
