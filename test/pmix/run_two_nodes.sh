#!/usr/bin/env bash
# run_two_nodes.sh MPIRUN PMIX_CHECK CONFORMANCE
#
# Two "nodes" on one machine, network namespaces joined by a veth pair,
# launched by Open MPI's mpirun --host A:2,B:2 with its remote agent
# replaced by `ip netns exec` (plm_rsh_agent), so each node gets its own
# daemon and PMIx server, as over ssh. Ranks on one node must use shm and
# across nodes tcp (under auto, with no xdev variable set: the node comes
# from PMIx and tcp listens on the node's routable address); eager and
# rendezvous data are checked. Needs root (namespaces).
set -euo pipefail
mpirun=$1 check=$2 conformance=$3
[ "$(id -u)" -eq 0 ] || { echo "two nodes: needs root to create network namespaces"; exit 1; }

tag=xdp$$
nsa=${tag}a nsb=${tag}b addra=10.232.0.1 addrb=10.232.0.2
agent=$(mktemp)
cleanup() {
    ip netns del "$nsa" 2>/dev/null || true
    ip netns del "$nsb" 2>/dev/null || true
    rm -f "$agent"
}
trap cleanup EXIT
ip netns add "$nsa"
ip netns add "$nsb"
ip link add "${tag}0" type veth peer name "${tag}1"
ip link set "${tag}0" netns "$nsa"
ip link set "${tag}1" netns "$nsb"
ip -n "$nsa" addr add $addra/24 dev "${tag}0"
ip -n "$nsb" addr add $addrb/24 dev "${tag}1"
for ns in "$nsa" "$nsb"; do ip -n "$ns" link set lo up; done
ip -n "$nsa" link set "${tag}0" up
ip -n "$nsb" link set "${tag}1" up

# mpirun's "ssh": the host it names is a namespace.
cat >"$agent" <<AGENT
#!/usr/bin/env bash
case \$1 in $addra) ns=$nsa ;; $addrb) ns=$nsb ;; *) echo "agent: no node \$1" >&2; exit 1 ;; esac
shift
exec ip netns exec "\$ns" /bin/sh -c "\$*"
AGENT
chmod +x "$agent"

launch=(timeout 120 ip netns exec "$nsa" "$mpirun" --allow-run-as-root --oversubscribe
        --mca plm_rsh_agent "$agent" --mca oob_tcp_if_include 10.232.0.0/24
        --host $addra:2,$addrb:2 -np 4)
"${launch[@]}" -x XDEV_EXPECT_NODE_RANKS=2 "$check"
for c in sizes vector; do
    "${launch[@]}" "$conformance" "$c"
done
