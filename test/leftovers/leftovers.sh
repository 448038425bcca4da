#!/bin/bash
# leftovers.sh before|after STATE_FILE
#
# A job leaves nothing behind, whichever way it ended: no /dev/shm/xdev-*
# (shm segments, doorbells) and no boot directory ($TMPDIR/xdev-<job id>-*)
# once its launcher is gone. "before" runs as the suite's first test and
# lists what is there already (a developer's machine may hold another
# suite's jobs); "after" runs last and fails on anything else that no
# running xdevrun owns (a job id starts with its launcher's pid).
set -u
mode=$1 state=$2
tmp=${TMPDIR:-/tmp}

list() {
    for p in /dev/shm/xdev-* "$tmp"/xdev-*; do
        [ -e "$p" ] || continue
        case $p in
        /dev/shm/*) echo "$p" ;;
        *) [[ ${p##*/} =~ ^xdev-[0-9]+-[0-9a-f]{8}-[A-Za-z0-9]{6}$ ]] && echo "$p" ;;
        esac
    done | sort
}

if [ "$mode" = before ]; then
    list >"$state"
    echo "$(wc -l <"$state") xdev entries before the suite"
    exit 0
fi
[ -f "$state" ] || : >"$state"
left=0
while read -r p; do
    grep -qxF -- "$p" "$state" && continue
    pid=$(sed -nE 's/^xdev-([0-9]+)-[0-9a-f]{8}-.*/\1/p' <<<"${p##*/}")
    if [ -n "$pid" ] && [ -d "/proc/$pid" ]; then
        continue # its job still runs
    fi
    [ -e "$p" ] || continue # its launcher was removing it as we looked
    echo "left behind: $p ($(stat -c '%F, mode %a' "$p"))"
    left=$((left + 1))
done < <(list)
echo "$left entries left behind by the suite's jobs"
[ "$left" -eq 0 ]
