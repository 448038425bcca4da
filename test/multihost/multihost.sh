#!/usr/bin/env bash
# Two simulated hosts on one machine: network namespaces joined by a veth
# pair, two ranks in each. Ranks on one host must talk over shm, across
# hosts over tcp, and every byte must arrive (see multihost_check.c).
#
#   multihost.sh XDEVRUN CHECK_PROGRAM
# Needs root (it creates namespaces) and iproute2.
set -euo pipefail
xdevrun=$1 prog=$2
[ "$(id -u)" -eq 0 ] || { echo "multihost: needs root to create network namespaces"; exit 1; }

tag=xdv$$
nsa=${tag}a nsb=${tag}b
cleanup() { ip netns del "$nsa" 2>/dev/null || true; ip netns del "$nsb" 2>/dev/null || true; }
trap cleanup EXIT

ip netns add "$nsa"
ip netns add "$nsb"
ip link add "${tag}0" type veth peer name "${tag}1"
ip link set "${tag}0" netns "$nsa"
ip link set "${tag}1" netns "$nsb"
ip -n "$nsa" addr add 10.231.0.1/24 dev "${tag}0"
ip -n "$nsb" addr add 10.231.0.2/24 dev "${tag}1"
for ns in "$nsa" "$nsb"; do ip -n "$ns" link set lo up; done
ip -n "$nsa" link set "${tag}0" up
ip -n "$nsb" link set "${tag}1" up

# Each rank starts in its host's namespace, listens on that host's address
# and says which host it is on (the namespaces share one kernel, so the
# automatic host identity cannot tell them apart: that is what the
# override is for).
wrapper=$(mktemp)
trap 'cleanup; rm -f "$wrapper"' EXIT
cat >"$wrapper" <<WRAP
#!/usr/bin/env bash
if [ "\$XDEV_RANK" -lt 2 ]; then ns=$nsa addr=10.231.0.1 host=hostA
else ns=$nsb addr=10.231.0.2 host=hostB; fi
exec ip netns exec \$ns env XDEV_HOST_ID=\$host XDEV_TCP_ADDR=\$addr "\$@"
WRAP
chmod +x "$wrapper"

"$xdevrun" -n 4 --transport auto --timeout 60 "$wrapper" "$prog"
