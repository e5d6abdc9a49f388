#!/usr/bin/env bash
# Before/after, alternating: bw and allgather on shm, 2 ranks, from a worktree of the commit
# before (BEFORE) and this tree (AFTER), order swapped every round.
# usage: ab.sh BEFORE_TREE AFTER_TREE OUT ROUNDS
set -euo pipefail
before=$1 after=$2 out=$3 rounds=${4:-4}
mkdir -p "$out"
run() { # tree label round
  (cd "$1" && deno task bw --max 4M -f4 -b 64K --csv "$out/bw_$2_r$3.csv" > "$out/bw_$2_r$3.txt" 2>&1)
  (cd "$1" && deno task allgather -b 64K -e 64M -f4 --out-of-place-only \
    --csv "$out/allgather_$2_r$3.csv" > "$out/allgather_$2_r$3.txt" 2>&1)
}
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then run "$before" before "$r"; run "$after" after "$r"
  else run "$after" after "$r"; run "$before" before "$r"; fi
done
rm -f "$out"/*.json
