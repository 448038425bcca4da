#!/bin/bash
# launcher-failure: one rank fails, the rest are taken down.
. "$(dirname "$0")/lib.sh"

# Rank 1 exits 3 at once; the others would sleep for 100 s.
run -n 4 --grace 1 sh -c 'echo $$ > "$WORK/pid.$XDEV_RANK"
    [ "$XDEV_RANK" = 1 ] && exit 3; exec sleep 100'
check "a rank exiting 3 makes xdevrun exit 3" rc_is 3
check "the sleeping ranks are taken down within grace+1 s (${MS} ms)" took_under 2000
check "...but only after the 1 s grace period" took_over 900
check "stderr names the failed rank" err_has '^xdevrun: rank 1 \(pid [0-9]+\) exited with status 3$'
check "one line only: the ranks killed in the teardown are not reported" err_lines 1
check "no rank is left running" no_rank_alive

# Ranks that ignore SIGTERM get SIGKILL one grace period later.
reset_work
run -n 3 --grace 0.5 sh -c 'echo $$ > "$WORK/pid.$XDEV_RANK"
    [ "$XDEV_RANK" = 0 ] && exit 3; trap "" TERM; exec sleep 100'
check "ranks ignoring SIGTERM: xdevrun still exits 3" rc_is 3
check "...and SIGKILLs them after 2 x grace (${MS} ms)" took_over 950
check "...not much later" took_under 2000
check "...leaving no rank running" no_rank_alive

# Ranks that exit by themselves within the grace period are not waited for.
reset_work
run -n 3 --grace 5 sh -c '[ "$XDEV_RANK" = 2 ] && exit 3; sleep 0.3'
check "others finishing by themselves: exit 3" rc_is 3
check "...without waiting out the 5 s grace (${MS} ms)" took_under 2000

# The first failure decides the status.
reset_work
run -n 3 --grace 2 sh -c 'case $XDEV_RANK in 0) exit 3;; 1) sleep 0.3; exit 5;; esac; exec sleep 100'
check "first failure (3) wins over a later one (5)" rc_is 3
check "a later failure within the grace period is reported too" err_has 'rank 1 \(pid [0-9]+\) exited with status 5'

# A rank killed by a signal.
reset_work
run -n 3 --grace 1 sh -c '[ "$XDEV_RANK" = 2 ] && kill -KILL $$; exec sleep 100'
check "a rank killed by SIGKILL makes xdevrun exit 137" rc_is 137
check "stderr says so" err_has '^xdevrun: rank 2 \(pid [0-9]+\) killed by signal 9$'
check "the others are taken down within grace+1 s (${MS} ms)" took_under 2000

run -n 2 --grace 0 sh -c '[ "$XDEV_RANK" = 0 ] && kill -SEGV $$; exec sleep 100'
check "a rank killed by SIGSEGV makes xdevrun exit 139" rc_is 139

# What a rank started goes too. Rank 0 is a wrapper shell waiting for its
# program (which writes its own pid); SIGTERM ends the shell, and the
# program, re-parented to xdevrun, must not outlive the job. Rank 1 leaves
# a process in the background and fails once rank 0's program runs. A
# process xdevrun's own caller started (it becomes xdevrun's child through
# exec) is not the job's and stays.
reset_work
bash -c 'sleep 100 & echo $! > "$WORK/caller_child"; exec "$@"' - \
    "$XDEVRUN" -n 2 --grace 0.3 sh -c 'if [ "$XDEV_RANK" = 0 ]; then
        sh -c "echo \$\$ > \"\$WORK/pid.child.0\"; exec sleep 100"; exit $?
    fi
    sleep 100 & echo $! > "$WORK/pid.child.1"
    while [ ! -s "$WORK/pid.child.0" ]; do sleep 0.01; done; exit 3' 2>"$WORK/err"
RC=$?
check "a wrapper rank and a rank leaving a child: exit 3" rc_is 3
check "...both programs wrote their pids" test -s "$WORK/pid.child.0" -a -s "$WORK/pid.child.1"
check "...and neither outlives the job" no_rank_alive
caller_child=$(cat "$WORK/caller_child")
check "...but the caller's own child does" kill -0 "$caller_child"
kill "$caller_child" 2>/dev/null

run -n 2 /nonexistent/program
check "a program that cannot be exec'd: exit 127" rc_is 127
check "...with a message" err_has 'cannot run /nonexistent/program'

check "no boot directory left in TMPDIR" no_boot_dir_left
finish
