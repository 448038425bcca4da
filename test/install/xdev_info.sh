#!/usr/bin/env bash
# xdev_info.sh XDEV_INFO SOURCE_DIR TRANSPORT...
#
# xdev-info names every XDEV_* variable that libxdev's sources and xdevrun
# read (every "XDEV_..." string in src/ outside libxdev_coll), prints the
# README's Environment table (--markdown) exactly as the README has it, shows a
# variable's current value beside its default, flags a value the variable
# refuses and an XDEV_* variable nothing reads, and has a section for each
# transport built, saying what that transport finds (shm's with the
# environment's ring size and single-copy threshold).
set -uo pipefail
info=$1 src=$2
shift 2
fail=0
say() { echo "FAIL: $*"; fail=1; }

out=$(XDEV_EAGER_LIMIT=12345 XDEV_SHM_RING=777k XDEV_NO_SUCH_THING=1 XDEV_PEER_TIMEOUT_MS=soon \
      XDEV_SHM_CMA_MIN=never "$info") || { echo "FAIL: xdev-info exited $?"; exit 1; }

names=$(grep -rhoE '"XDEV_[A-Z0-9_]+[A-Z0-9]"' "$src/src" --include='*.c' --exclude-dir=coll |
        tr -d '"' | sort -u)
[ -n "$names" ] || say "no XDEV_ variable found in the sources"
for n in $names; do
    grep -qE "^  $n +" <<<"$out" || say "$n is read by the sources but xdev-info does not name it"
done
grep -qE '^  XDEV_EAGER_LIMIT +12345 +64k ' <<<"$out" || say "current value of XDEV_EAGER_LIMIT not shown"
grep -qE '^  XDEV_SHM_RING +777k +2m ' <<<"$out" || say "current value of XDEV_SHM_RING not shown"
grep -qE '^  XDEV_TRANSPORT +\(unset\) +auto ' <<<"$out" || say "an unset variable is not shown as unset"
grep -q 'XDEV_NO_SUCH_THING=1 .*misspelt' <<<"$out" || say "an unknown XDEV_ variable is not flagged"
grep -A1 -E '^  XDEV_PEER_TIMEOUT_MS +soon ' <<<"$out" | grep -q '\^ refused' ||
    say "a value the variable refuses is not flagged"
grep -A1 -E '^  XDEV_EAGER_LIMIT ' <<<"$out" | grep -q 'refused' && say "a good value is flagged"
# shm's section gives what the environment sets, not the defaults
if [[ " $* " == *" shm "* ]]; then
    grep -q 'rings of 512 KiB (XDEV_SHM_RING)' <<<"$out" ||
        say "shm does not show XDEV_SHM_RING's ring"
    grep -q 'single copy .* never' <<<"$out" || say "shm does not show XDEV_SHM_CMA_MIN=never"
fi
for t in "$@"; do
    section=$(awk -v t="$t:" '$0 == t { on = 1; next } /^[a-z]+:$/ || /^variables/ { on = 0 } on' <<<"$out")
    [ -n "$(tr -d '[:space:]' <<<"$section")" ] || say "no section, or an empty one, for transport $t"
done
grep -q "^transports built: $*\$" <<<"$out" || say "transports built: line does not list: $*"
[ "$("$info" -v)" = "$(sed -n "s/^xdev \(.*\)/\1/p" <<<"$out")" ] || say "-v and the first line disagree"

# The README's Environment table is the tool's --markdown output, verbatim.
readme=$(awk '/^## Environment$/ { env = 1 } env && /^\| variable \|/ { on = 1 }
              on && /^\|/ { print; next } on { exit }' "$src/README.md")
table=$("$info" --markdown)
[ -n "$readme" ] || say "no variable table under the README's Environment heading"
[ "$readme" = "$table" ] || { say "README's Environment table differs from xdev-info --markdown:";
                              diff <(echo "$readme") <(echo "$table") | head -20; }
[ $fail -eq 0 ] && echo "xdev-info: PASS ($(wc -w <<<"$names") variables)"
exit $fail
