#!/bin/bash
# launcher-signals: SIGTERM/SIGINT (and the other signals that would end
# it) to xdevrun reach the ranks, and killing xdevrun outright takes the
# ranks with it.
. "$(dirname "$0")/lib.sh"

# Job control gives background jobs their own process group and, unlike a
# plain script, does not make them ignore SIGINT.
set -m

# The boot dir's name goes first: once a rank's pid file is there (what
# start waits for), its boot file is whole. (Written after it, into one
# file for all ranks, the last check once read it while a rank had just
# truncated it, removed nothing and found the dir left behind.)
sleeper='echo "$XDEV_BOOT_DIR" > "$WORK/boot.$XDEV_RANK"; echo $$ > "$WORK/pid.$XDEV_RANK"; exec sleep 100'
deaf_sleeper='trap "" TERM; '$sleeper

# start ARGS...: start xdevrun in the background and wait for its 3 ranks.
start() {
    reset_work
    "$XDEVRUN" "$@" 2>"$WORK/err" &
    LAUNCHER=$!
    wait_for_files 3 "$WORK/pid." || echo "     ranks did not start"
}
# stop_with SIGNAL: send it to xdevrun; sets RC and MS as run() does.
stop_with() {
    local t0
    t0=$(now_ms)
    kill -s "$1" "$LAUNCHER"
    wait "$LAUNCHER"
    RC=$?
    MS=$(($(now_ms) - t0))
}

start -n 3 --grace 5 sh -c "$sleeper"
stop_with TERM
check "SIGTERM to xdevrun: exit 143" rc_is 143
check "...at once, since the ranks die of the forwarded SIGTERM (${MS} ms)" took_under 1000
check "...leaving no rank running" no_rank_alive
check "...and no boot directory" no_boot_dir_left

start -n 3 --grace 5 sh -c "$sleeper"
stop_with INT
check "SIGINT to xdevrun: exit 130" rc_is 130
check "...at once (${MS} ms)" took_under 1000
check "...leaving no rank running" no_rank_alive

# every other signal that would end xdevrun is passed on alike, so that
# the job's boot directory does not outlive it
for sig in QUIT:131 USR1:138 USR2:140; do
    start -n 3 --grace 5 sh -c "$sleeper"
    stop_with "${sig%:*}"
    check "SIG${sig%:*} to xdevrun: exit ${sig#*:}" rc_is "${sig#*:}"
    check "...leaving no rank running" no_rank_alive
    check "...and no boot directory" no_boot_dir_left
done

start -n 3 --grace 0.5 sh -c "$deaf_sleeper"
stop_with TERM
check "ranks ignoring the forwarded SIGTERM: exit 143" rc_is 143
check "...SIGKILLed after the grace period (${MS} ms)" took_over 450
check "...not much later" took_under 1500
check "...leaving no rank running" no_rank_alive

start -n 3 --grace 30 sh -c "$deaf_sleeper"
t0=$(now_ms)
kill -TERM "$LAUNCHER"
sleep 0.2
stop_with TERM
MS=$(($(now_ms) - t0))
check "a second SIGTERM SIGKILLs the ranks without waiting 30 s: exit 143" rc_is 143
check "...promptly (${MS} ms)" took_under 1500
check "...leaving no rank running" no_rank_alive

start -n 3 sh -c "$sleeper"
boot=$(cat "$WORK/boot.0")
kill -KILL "$LAUNCHER"
wait "$LAUNCHER" 2>/dev/null
ranks_die() {
    local i
    for ((i = 0; i < 100; i++)); do
        no_rank_alive >/dev/null && return 0
        sleep 0.05
    done
    no_rank_alive
}
check "xdevrun killed by SIGKILL: its ranks die with it" ranks_die
# Nobody is left to clean up after a SIGKILL; do it for the next check.
rm -rf "$boot"

check "no boot directory left in TMPDIR" no_boot_dir_left
finish
