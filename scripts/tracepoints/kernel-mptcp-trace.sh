#!/usr/bin/env bash
# Records the kernel's MPTCP and TCP tracepoints while a command runs (in
# practice `mplab run --backend kernel ...`), so the kernel's scheduler
# decisions, data-level window and per-subflow congestion windows can be
# set beside the simulator's: scripts/tracepoints/mptcp_trace.py reads the file.
# The method and what it showed are in docs/validation.md ("The kernel's
# scheduler and receive window, traced").
#
#   sudo scripts/tracepoints/kernel-mptcp-trace.sh OUT.trace -- \
#       ./target/release/mplab run scenarios/two-paths.toml --backend kernel \
#       --set duration=8s --set 'topology.rate=["1Mbit","10Mbit"]'
#
# Root only. The events come from every socket on the host (tracepoints
# know no namespaces), so run nothing else meanwhile. The recording uses
# its own tracefs instance and removes it on exit, whatever happens.
set -euo pipefail

if [[ $# -lt 3 || $2 != "--" ]]; then
    echo "usage: $0 OUT.trace -- COMMAND [ARGS...]" >&2
    exit 2
fi
out=$1
shift 2

tracefs=/sys/kernel/tracing
[[ -d $tracefs/instances ]] || mount -t tracefs nodev "$tracefs"
[[ -d $tracefs/events/mptcp ]] || { echo "$0: this kernel has no mptcp tracepoints" >&2; exit 1; }

inst=$tracefs/instances/mplab-trace-$$
mkdir "$inst"
trap 'echo 0 > "$inst/tracing_on" 2>/dev/null || true; rmdir "$inst" 2>/dev/null || true' EXIT

events=(
    mptcp/mptcp_subflow_get_send # per subflow at each scheduling call
    mptcp/mptcp_sendmsg_frag     # data handed to a subflow (its mapping)
    mptcp/ack_update_msk         # DATA_ACK, snd_una and the peer's window
    tcp/tcp_probe                # per incoming segment: cwnd, windows, srtt
    tcp/tcp_cong_state_set       # Open / Disorder / CWR / Recovery / Loss
    tcp/tcp_retransmit_skb
)
echo 0 > "$inst/tracing_on"
echo 131072 > "$inst/buffer_size_kb"
for e in "${events[@]}"; do
    echo 1 > "$inst/events/$e/enable"
done
echo 1 > "$inst/tracing_on"
status=0
"$@" || status=$?
echo 0 > "$inst/tracing_on"
cat "$inst/trace" > "$out"
if grep -q 'LOST' "$out"; then
    echo "$0: the trace buffer overflowed: shorten the run" >&2
fi
echo "$(grep -c ': mptcp_\|: ack_update_msk\|: tcp_' "$out") events in $out" >&2
exit "$status"
