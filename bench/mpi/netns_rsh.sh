#!/bin/sh
# Open MPI's remote shell on a simulated cluster (deno/bench/vs_mpi.ts, --mca plm_rsh_agent): runs
# the command mpirun gives for a host inside that host's network namespace (deno/bench/cluster.ts).
host=$1
shift
exec ip netns exec "$host" sh -c "$*"
