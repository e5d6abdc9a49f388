#!/usr/bin/env bash
# Runs tests N times in a row with LOAD busy loops beside them (issue 40: the suite under load),
# and says how many runs passed. Run from the project root:
#   LOAD=2 bash tests/under_load.sh 20 tests/faults_test.ts "survivors"
#   LOAD=2 bash tests/under_load.sh 1 suite           # the whole suite once, as deno task test runs it
set -uo pipefail
runs=${1:?runs} target=${2:?test file or folder} filter=${3:-}
loops=()
for _ in $(seq 1 "${LOAD:-2}"); do
  (while :; do :; done) &
  loops+=($!)
done
trap 'kill "${loops[@]}" 2>/dev/null' EXIT
passed=0
for run in $(seq 1 "$runs"); do
  if [ "$target" = suite ]; then
    command=(deno task test)
  else
    command=(deno test -A --v8-flags=--experimental-wasm-fp16 --parallel "$target" ${filter:+--filter "$filter"})
  fi
  if "${command[@]}" >"/tmp/under_load.$run.log" 2>&1; then
    passed=$((passed + 1))
  else
    echo "run $run failed: /tmp/under_load.$run.log"
  fi
done
echo "$passed of $runs runs passed with ${LOAD:-2} busy loops beside them"
[ "$passed" = "$runs" ]
