#!/usr/bin/env bash
# Runs every bundled scenario (scenarios/*.toml, not the sweep specs) on the
# simulator and records a hash of each result file, so that a refactoring can
# be checked to give byte-identical results:
#   scripts/same-results.sh record /tmp/before      # with the old binary
#   scripts/same-results.sh record /tmp/after       # with the new one
#   scripts/same-results.sh compare /tmp/before /tmp/after
# MPLAB=path/to/mplab picks the binary (default: target/release/mplab).
# The k=8 fat-tree is run for 5 ms of virtual time so the check takes minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
mplab=${MPLAB:-target/release/mplab}
case "${1:-}" in
record)
  out=$2; mkdir -p "$out"; : > "$out/hashes.txt"
  for s in scenarios/*.toml; do
    case "$s" in *.sweep.toml) continue;; esac
    name=$(basename "$s" .toml)
    extra=()
    case "$name" in *fattree*) extra=(--set duration=0.005s);; esac
    "$mplab" run "$s" --seed 1 --out "$out/$name" "${extra[@]}" >/dev/null 2>"$out/$name.stderr" || echo "$name: exit $?" >> "$out/hashes.txt"
    # meta.json holds the wall-clock time: hash it without that.
    (cd "$out/$name" && find . -type f ! -name 'meta.json' | sort | xargs sha256sum) | sed "s|^|$name |" >> "$out/hashes.txt"
    python3 - "$out/$name/meta.json" "$name" >> "$out/hashes.txt" <<'PY'
import json, sys, hashlib
v = json.load(open(sys.argv[1]))
for k in ("wall_time_s", "events_per_s"):
    v.pop(k, None)
print(hashlib.sha256(json.dumps(v, sort_keys=True).encode()).hexdigest(), sys.argv[2], "meta.json without wall time")
PY
  done
  wc -l < "$out/hashes.txt";;
compare)
  if diff "$2/hashes.txt" "$3/hashes.txt"; then echo "byte-identical: $(wc -l < "$2/hashes.txt") files"; else echo "results differ"; exit 1; fi;;
*) echo "usage: $0 record DIR | compare DIR_A DIR_B" >&2; exit 2;;
esac
