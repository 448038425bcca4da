/*
 * soak_fault.h - the faulty mode's faults and the rules they are judged
 * by. From the seed (every rank draws the same plan): one rank killed
 * (two from six ranks up) 0.1-1.2 s in, now and then stopped first and
 * killed while stopped; one or two other ranks stopped for 0.2-1 s and
 * continued. Each rank's own faults come from a child it forks before
 * xdev_init, which writes the time of a kill to $XDEV_TEST_OUT/killed.<r>.
 */
#ifndef SOAK_FAULT_H
#define SOAK_FAULT_H

/* Draw the plan into soak.victims; rank 0 prints it and writes the
 * victims to $XDEV_TEST_OUT/victims. */
void soak_fault_plan(void);
/* Before xdev_init: fork this rank's executioner, if it has faults. */
void soak_fault_start(void);
/* After the traffic: every failure caused by a victim came within the
 * peer timeout + 2 s of its death. */
void soak_fault_check_times(void);
/* Wait for this rank's executioner to finish. */
void soak_fault_end(void);

/* Barrier of the ranks that are not victims, over ordinary messages. */
int soak_survivors_barrier(void);

#endif
