/*
 * soak_recv.h - the receiver of the K_NAMED and K_WILD streams, one
 * thread for all of them. Receives are posted ahead (two per source and
 * sender thread naming the source, three XDEV_ANY_SOURCE per sender
 * thread) and reaped with xdev_waitsome, oldest first, so each must get
 * the message due next on its stream. Buffers are sized to that message
 * (named) or to the largest (wildcard); one in eight is short, to be
 * truncated, one in twelve is cancelled at once or a round later, always
 * the newest of its queue (so the messages still go to the receives
 * after it in order): cancelled, it must have taken nothing and written
 * nothing; too late, it must hold its message.
 */
#ifndef SOAK_RECV_H
#define SOAK_RECV_H

void *soak_receiver(void *arg);

#endif
