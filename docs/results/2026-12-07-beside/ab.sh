#!/usr/bin/env bash
# Before/after, alternating: alltoallv beside alltoall (small, shm, 2 ranks), and allgather and
# allreduce to 1 MiB (their heap views go through the same exchange), from a worktree of the
# commit before (BEFORE) and this tree (AFTER), order swapped every round.
# usage: ab.sh BEFORE_TREE AFTER_TREE OUT ROUNDS
set -euo pipefail
before=$1 after=$2 out=$3 rounds=${4:-4}
mkdir -p "$out"
run() { # tree label round
  for task in alltoallv alltoall; do
    (cd "$1" && deno task "$task" --procs 2 -e 16K -f4 --out-of-place-only \
      --csv "$out/${task}_$2_r$3.csv" > "$out/${task}_$2_r$3.txt" 2>&1)
  done
  for task in allgather allreduce; do
    (cd "$1" && deno task "$task" --procs 2 -b 16K -e 1M -f4 --out-of-place-only \
      --csv "$out/${task}_$2_r$3.csv" > "$out/${task}_$2_r$3.txt" 2>&1)
  done
}
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then run "$before" before "$r"; run "$after" after "$r"
  else run "$after" after "$r"; run "$before" before "$r"; fi
done
rm -f "$out"/*.json
