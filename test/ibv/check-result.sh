#!/bin/bash
# check-result.sh RESULTS_DIR NAME - one meson test per in-VM test: passes
# iff the last ibv-vm-xdev run wrote "ok NAME"; prints that test's log
# otherwise. No line at all (the VM did not start, the script died before
# the test) is a failure too.
set -u
R=$1 name=$2
if grep -qxF "ok $name" "$R/results" 2>/dev/null; then
    echo "ok $name (from $R/results)"
    exit 0
fi
if grep -qxF "FAIL $name" "$R/results" 2>/dev/null; then
    echo "FAIL $name; $R/logs/$name.log:"
else
    echo "no result for $name in $R/results: see the ibv-vm-xdev test (did the VM run?)"
fi
tail -n 60 "$R/logs/$name.log" 2>/dev/null
exit 1
