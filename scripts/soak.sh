#!/usr/bin/env bash
# Soak the root-only tests: each test alone, N times in a row (default 20),
# printing one line per test with its pass count and the logs of failures.
# Not part of CI (it takes hours); run it as root after touching a root test
# or the backends:
#   sudo scripts/soak.sh                 # every root test, 20 runs each
#   sudo scripts/soak.sh 5 kernel_trace  # tests whose binary or name matches
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
filter=${2:-}
[ "$(id -u)" = 0 ] || { echo "soak: needs root" >&2; exit 2; }
export CI=1   # a root test that would skip fails instead
logs=$(mktemp -d /tmp/mplab-soak.XXXXXX)
# The test binaries whose tests need root and namespaces.
bins=$(cd crates/lab/tests && ls kernel_*.rs userspace_*.rs | sed 's/\.rs$//' | tr '\n' ' ')
cargo test --release -p mplab --no-run $(for b in $bins; do printf -- '--test %s ' "$b"; done) 2>&1 | grep -o '([^()]*/deps/[^)]*)' | tr -d '()' > "$logs/bins"
# No test binary found (a build that failed, or cargo's output changed):
# a soak of nothing must not pass.
[ -s "$logs/bins" ] || { echo "soak: no test binaries built (see cargo's output above)" >&2; exit 1; }
total_fail=0
while read -r exe; do
  bin=$(basename "$exe" | sed 's/-[0-9a-f]*$//')
  for t in $("$exe" --list 2>/dev/null | sed -n 's/: test$//p'); do
    case "$bin $t" in *"$filter"*) ;; *) continue;; esac
    pass=0; fails=()
    for i in $(seq 1 "$runs"); do
      log="$logs/$bin-$t-$i.log"
      # A run that hangs past 10 minutes is a failure, not a stuck soak.
      if timeout 600 "$exe" --exact "$t" --test-threads=1 >"$log" 2>&1; then pass=$((pass+1)); rm -f "$log"; else fails+=("$log"); fi
    done
    printf '%-20s %-45s %2d/%d passed%s\n' "$bin" "$t" "$pass" "$runs" "${fails:+  (logs: ${fails[*]})}"
    total_fail=$((total_fail + runs - pass))
  done
done < "$logs/bins"
leftover=$(ip netns list 2>/dev/null | grep -c '^mplab' || true)
echo "failed runs: $total_fail; mplab namespaces left: $leftover; logs in $logs"
[ "$total_fail" = 0 ] && [ "$leftover" = 0 ]
