/*
 * soak_send.h - a sender thread: sends every rank (itself included) its
 * streams of every kind, in an order drawn from the seed; each message
 * standard or synchronous, nonblocking (up to four in flight, one in
 * sixteen cancelled at once and sent again if that worked) or blocking.
 * A send may fail only towards a killed rank, which then gets nothing more.
 */
#ifndef SOAK_SEND_H
#define SOAK_SEND_H

/* arg: the thread's index (intptr_t). */
void *soak_sender(void *arg);

#endif
