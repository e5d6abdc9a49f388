#!/usr/bin/env bash
# Six alternating rounds: alltoallv before the change (a worktree of dcd36d6 at $BEFORE), after it
# (this checkout), and alltoall beside them; 2 ranks on shm, 8 B to 4 KiB. Run from the root.
set -euo pipefail
BEFORE=${BEFORE:?a worktree of the commit before}
out=$(dirname "$0")
for i in 1 2 3 4 5 6; do
  (cd "$BEFORE" && deno task alltoallv --procs 2 --max 1K --csv "$OLDPWD/$out/before_$i.csv" >/dev/null)
  deno task alltoallv --procs 2 --max 1K --csv "$out/after_$i.csv" >/dev/null
  deno task alltoall --procs 2 --max 1K --out-of-place-only --csv "$out/alltoall_$i.csv" >/dev/null
done
