#!/usr/bin/env bash
# run_jobs.sh N COMMAND... - run the same job N times; the first that fails
# fails the test. For a fault whose window one job hits only sometimes.
set -u
n=$1
shift
for i in $(seq 1 "$n"); do
    "$@" || { echo "run_jobs.sh: job $i of $n failed" >&2; exit 1; }
done
