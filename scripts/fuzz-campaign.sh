#!/usr/bin/env bash
# A long fuzzing campaign over every fuzz target, one after the other, each
# for its share of the time, with fresh seeds; prints one line per target
# (executions, seconds, executions per second, crashes) and the total.
# Not part of CI. docs/security.md records the campaign's figures.
#   bash scripts/fuzz-campaign.sh 3600        # one hour in all
# Shares: the codec targets run fast and get a quarter each of what is
# left after the two stateful targets, which get a quarter each.
set -euo pipefail
cd "$(dirname "$0")/.."
total=${1:-3600}
rustup toolchain list 2>/dev/null | grep -q nightly || { echo "fuzz-campaign: needs the nightly toolchain"; exit 2; }
command -v cargo-fuzz >/dev/null 2>&1 || cargo install --locked cargo-fuzz
log=$(mktemp -d /tmp/mplab-fuzz-campaign.XXXXXX)
share=$(( total / 4 ))
codec=$(( total / 6 ))
sum=0; bad=0
run() { # crate target seconds max_len
  local crate=$1 t=$2 secs=$3 len=$4
  mkdir -p "crates/$crate/fuzz/corpus/$t"
  ( cd "crates/$crate" && cargo +nightly fuzz build "$t" >/dev/null 2>&1 )
  local start=$SECONDS rc=0
  ( cd "crates/$crate" && cargo +nightly fuzz run "$t" "fuzz/corpus/$t" -- -max_total_time="$secs" -max_len="$len" -runs=-1 ) >"$log/$t.log" 2>&1 || rc=$?
  local execs
  execs=$(grep -o 'Done [0-9]* runs\|#[0-9]*' "$log/$t.log" | tail -1 | tr -dc 0-9)
  printf '%-12s %12s executions in %5d s  (%s/s)  exit %d\n' "$t" "${execs:-0}" $(( SECONDS - start )) $(( ${execs:-0} / (SECONDS - start + 1) )) "$rc"
  sum=$(( sum + ${execs:-0} )); [ "$rc" = 0 ] || bad=$((bad + 1))
}
run wire segment "$codec" 400
run wire sctp_chunks "$codec" 1500
run wire convert "$codec" 1100
run proto mptcp_pair "$share" 8192
run proto tcp_pair "$share" 8192
echo "total: $sum executions; targets that failed: $bad; logs in $log"
[ "$bad" = 0 ]
