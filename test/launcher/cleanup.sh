#!/bin/bash
# launcher-cleanup: the boot dir and /dev/shm/xdev-<jobid>* go away however
# the job ends.
. "$(dirname "$0")/lib.sh"

have_shm=0
if [ -d /dev/shm ] && [ -w /dev/shm ]; then have_shm=1; else echo "(no writable /dev/shm: skipping its checks)"; fi

# Each rank leaves files in the boot dir (also in a subdirectory) and a
# fake shared-memory segment, records where, then does `$1`.
litter='echo "$XDEV_BOOT_DIR" > "$WORK/boot"; echo "$XDEV_JOB_ID" > "$WORK/jobid"
    echo addr > "$XDEV_BOOT_DIR/rank.$XDEV_RANK"
    mkdir -p "$XDEV_BOOT_DIR/sub.$XDEV_RANK" && touch "$XDEV_BOOT_DIR/sub.$XDEV_RANK/f"
    ln -s /etc "$XDEV_BOOT_DIR/link.$XDEV_RANK"
    if [ -w /dev/shm ]; then touch "/dev/shm/xdev-$XDEV_JOB_ID-seg$XDEV_RANK"; fi
    touch "$WORK/done.$XDEV_RANK"
    eval "$1"'

# An unrelated segment that must survive.
other=/dev/shm/xdev-unrelated-$$
[ $have_shm = 1 ] && touch "$other"

job_left_nothing() {
    local boot jobid
    boot=$(cat "$WORK/boot") jobid=$(cat "$WORK/jobid")
    [ -n "$boot" ] && [ -n "$jobid" ] || { echo "     ranks did not run"; return 1; }
    [ ! -e "$boot" ] || { echo "     $boot still exists"; return 1; }
    if [ $have_shm = 1 ] && compgen -G "/dev/shm/xdev-$jobid*" >/dev/null; then
        echo "     left in /dev/shm:" /dev/shm/xdev-"$jobid"*
        return 1
    fi
}

# wait until every rank has littered, so that the failure comes afterwards.
ready='while [ "$(ls "$WORK" | grep -c "^done\.")" -lt "$XDEV_SIZE" ]; do sleep 0.02; done'

run -n 3 sh -c "$litter" sh "$ready"
check "a successful job exits 0" rc_is 0
check "a successful job (exit $RC) leaves no boot dir and no /dev/shm/xdev-<jobid>*" job_left_nothing
check "the symlinked directory survived" test -e /etc/passwd

reset_work
run -n 3 --grace 0.2 sh -c "$litter" sh "$ready"'; [ "$XDEV_RANK" = 1 ] && kill -KILL $$; exec sleep 100'
check "a job with a killed rank (exit $RC) leaves nothing" job_left_nothing
check "...and exits 137" rc_is 137

reset_work
run -n 2 --timeout 0.5 --grace 0.2 sh -c "$litter" sh "$ready; exec sleep 100"
check "a timed-out job (exit $RC) leaves nothing" job_left_nothing

reset_work
run -n 2 --keep-going sh -c "$litter" sh "$ready; exit \$XDEV_RANK"
check "a failed --keep-going job (exit $RC) leaves nothing" job_left_nothing

if [ $have_shm = 1 ]; then
    check "another job's /dev/shm/xdev-* file is left alone" test -e "$other"
    rm -f "$other"
fi
check "no boot directory left in TMPDIR" no_boot_dir_left
finish
