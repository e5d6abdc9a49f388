#!/usr/bin/env bash
# ws after (this tree) vs ws before (/tmp/old: a worktree of 1afd62c, one connection per direction) vs tcp, alternating, 8 rounds, allreduce and sendrecv, 2 ranks, 1..1K floats
out=$1; mkdir -p $out
for i in $(seq 1 8); do
  for p in allreduce sendrecv; do
    deno task -q $p --procs 2 --transport ws --max 1K --csv $out/ws_new_${p}_$i.csv >/dev/null 2>&1 || echo "new ws $p failed"
    (cd /tmp/old && deno task -q $p --procs 2 --transport ws --max 1K --csv $out/ws_old_${p}_$i.csv >/dev/null 2>&1) || echo "old ws $p failed"
    deno task -q $p --procs 2 --transport tcp --max 1K --csv $out/tcp_${p}_$i.csv >/dev/null 2>&1 || echo "tcp $p failed"
  done
done
