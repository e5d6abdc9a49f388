#!/usr/bin/env bash
# Before/after, alternating: bw, latency and allreduce on shm, 2 ranks, below 1 MiB (where
# messages go through the ring slots), from a worktree of the commit before (BEFORE) and this
# tree (AFTER), order swapped every round.
# usage: ab.sh BEFORE_TREE AFTER_TREE OUT ROUNDS
set -euo pipefail
before=$1 after=$2 out=$3 rounds=${4:-4}
mkdir -p "$out"
run() { # tree label round
  (cd "$1" && deno task bw -b 1K -e 512K -f4 --csv "$out/bw_$2_r$3.csv" > "$out/bw_$2_r$3.txt" 2>&1)
  (cd "$1" && deno task latency -b 1K -e 512K -f4 --csv "$out/latency_$2_r$3.csv" \
    > "$out/latency_$2_r$3.txt" 2>&1)
  (cd "$1" && deno task allreduce -b 4K -e 512K -f4 --out-of-place-only \
    --csv "$out/allreduce_$2_r$3.csv" > "$out/allreduce_$2_r$3.txt" 2>&1)
}
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then run "$before" before "$r"; run "$after" after "$r"
  else run "$after" after "$r"; run "$before" before "$r"; fi
done
rm -f "$out"/*.json
