#!/usr/bin/env bash
# Seed 002's figs 6 and 7, shortened, on the simulator and the kernel
# backend side by side (mplab sweep runs the simulator only): 10 s, one run
# per point, buffers 64 KB to 1 MB, MPTCP / TCP / CMT-SCTP / SCTP. MPTCP
# runs as a full mesh with reno subflows on both backends (Linux has no
# LIA, and its fullmesh with a 2-subflow cap opens the second subflow on
# path 0). Needs root and libusrsctp2; about 16 minutes.
#   sudo scripts/seed002-kernel.sh [OUT]      (default results/seed002-kernel)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-results/seed002-kernel}
mkdir -p "$out"
cargo build --release -q -p mplab
M=$PWD/target/release/mplab
export MPLAB_EXE=$M
sed '/^subflows = 2/d' scenarios/seed002-buffer.toml > "$out/scenario.toml"
csv="$out/results.csv"
echo "fig,backend,buf,transport,goodput_mbps,verified" > "$csv"
for fig in 6 7; do
  rate='["70Mbit", "70Mbit"]'; [ $fig = 7 ] && rate='["100Mbit", "10Mbit"]'
  for b in 64KB 128KB 256KB 512KB 1MB; do
    for t in mptcp tcp cmt-sctp sctp; do
      for be in sim kernel; do
        run="$out/fig$fig-$be-$b-$t"
        timeout 120 "$M" run "$out/scenario.toml" --backend $be --set duration=10s --set "topology.rate=$rate" \
          --set transport.tcp.rcv_buf=$b --set transport.tcp.snd_buf=$b --set transport.sctp.rcv_buf=$b --set transport.sctp.snd_buf=$b \
          --set flows.0.transport=$t --set transport.mptcp.cc=reno --out "$run" --json > "$run.log" 2>&1 || true
        python3 - "$run/summary.json" "$fig,$be,$b,$t" >> "$csv" <<'PY'
import json, sys
try:
    f = json.load(open(sys.argv[1]))["flows"][0]
    print(f"{sys.argv[2]},{f['goodput_bps'] / 1e6:.2f},{f['verified']}")
except Exception as e:
    print(f"{sys.argv[2]},,error: {e}")
PY
      done
    done
  done
done
python3 - "$csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
get = {(r["fig"], r["buf"], r["transport"], r["backend"]): r["goodput_mbps"] for r in rows}
for fig in "67":
    print(f"\nfig. {fig}: Mbit/s, simulator / kernel backend")
    print("| buffer | MPTCP | TCP | CMT-SCTP | SCTP |\n|---|---|---|---|---|")
    for b in ["64KB", "128KB", "256KB", "512KB", "1MB"]:
        cells = [f"{get.get((fig, b, t, 'sim'), '-')} / {get.get((fig, b, t, 'kernel'), '-')}" for t in ["mptcp", "tcp", "cmt-sctp", "sctp"]]
        print(f"| {b} | " + " | ".join(cells) + " |")
PY
