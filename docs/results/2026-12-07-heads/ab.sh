#!/usr/bin/env bash
# Before/after, alternating: the exchanges beside a layout (alltoallv, gatherv, scatterv) beside
# alltoall, small, and allreduce's small arrivals (shm, 2 ranks), from a worktree of the commit
# before (BEFORE) and this tree (AFTER), order swapped every round.
# usage: ab.sh BEFORE_TREE AFTER_TREE OUT ROUNDS
set -euo pipefail
before=$1 after=$2 out=$3 rounds=${4:-5}
mkdir -p "$out"
run() { # tree label round
  for task in alltoallv alltoall gatherv scatterv; do
    (cd "$1" && deno task "$task" --procs 2 -e 16K -f4 --out-of-place-only \
      --csv "$out/${task}_$2_r$3.csv" > "$out/${task}_$2_r$3.txt" 2>&1)
  done
  (cd "$1" && deno task allreduce --procs 2 -e 1K -f4 --out-of-place-only \
    --csv "$out/allreduce_$2_r$3.csv" > "$out/allreduce_$2_r$3.txt" 2>&1)
}
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then run "$before" before "$r"; run "$after" after "$r"
  else run "$after" after "$r"; run "$before" before "$r"; fi
done
rm -f "$out"/*.json
