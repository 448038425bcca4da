#!/bin/bash
# launcher-secret: while a job runs, its secret is on no command line and
# in no file, and nothing of it in the boot directory or /dev/shm can be
# read by another user; afterwards nothing of it is left. Looked at from
# outside, over tcp and over shm (auto), with 3 ranks that have all
# connected (test/launcher/hold.c).
. "$(dirname "$0")/lib.sh"
HOLD=${2:?usage: $0 xdevrun hold}

environ_var() { tr '\0' '\n' <"/proc/$1/environ" | sed -n "s/^$2=//p"; }

# No process's command line holds the secret (grep reads it from a file,
# so that its own command line does not).
no_cmdline_has_secret() {
    local f found=0
    for f in /proc/[0-9]*/cmdline; do
        if tr '\0' ' ' <"$f" 2>/dev/null | grep -qF -f "$WORK/secret"; then
            echo "     in $f: $(tr '\0' ' ' <"$f")"
            found=1
        fi
    done
    [ $found = 0 ]
}

# Files of the job (the boot dir's, /dev/shm's): none open to group or
# others, none holding the secret.
job_files() { find "$boot" /dev/shm -maxdepth 1 -mindepth 1 \( -path "$boot/*" -o -name "xdev-$jobid-*" \) "$@"; }
owner_only() {
    local open
    open=$(job_files -perm /077)
    [ -z "$open" ] || { echo "     readable by others: $open"; return 1; }
}
no_file_has_secret() {
    local holders
    holders=$(job_files -type f -exec grep -lF -f "$WORK/secret" {} +)
    [ -z "$holders" ] || { echo "     holding the secret: $holders"; return 1; }
}
all_ready() { [ "$(ls "$WORK/m" | grep -c '^ready\.')" -eq 3 ]; }

for transport in tcp auto; do
    reset_work
    rm -rf "$WORK/m" && mkdir "$WORK/m"
    "$XDEVRUN" -n 3 --transport "$transport" "$HOLD" "$WORK/m" 2>"$WORK/err" &
    job=$!
    for _ in $(seq 300); do all_ready && break; sleep 0.1; done
    check "$transport: 3 ranks connected and holding" all_ready
    pid=$(cat "$WORK/m/ready.0" 2>/dev/null)
    environ_var "$pid" XDEV_JOB_SECRET >"$WORK/secret"
    boot=$(environ_var "$pid" XDEV_BOOT_DIR)
    jobid=$(environ_var "$pid" XDEV_JOB_ID)
    check "$transport: the ranks have a secret" grep -Eqx '[0-9a-f]{32}' "$WORK/secret"
    check "$transport: no command line holds the secret" no_cmdline_has_secret
    check "$transport: the boot dir is the owner's alone (0700)" test "$(stat -c %a "$boot")" = 700
    check "$transport: the job's files (boot dir, /dev/shm) are the owner's alone" owner_only
    check "$transport: no file of the job holds the secret" no_file_has_secret
    [ "$transport" = tcp ] && check "tcp: the boot dir holds the ranks' addresses" \
        test "$(ls "$boot" | grep -c '^tcp\.')" -eq 3
    touch "$WORK/m/release"
    wait $job
    RC=$?
    check "$transport: every rank finished cleanly" rc_is 0
    check "$transport: the boot dir is gone" test ! -e "$boot"
    check "$transport: nothing of the job is left in /dev/shm" \
        test -z "$(find /dev/shm -maxdepth 1 -name "xdev-$jobid-*")"
done
finish
