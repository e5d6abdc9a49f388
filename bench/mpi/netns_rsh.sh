#!/bin/sh
# Open MPI's remote shell on a simulated cluster (scripts/vs_mpi/open_mpi.ts, --mca plm_rsh_agent): runs
# the command mpirun gives for a host inside that host's network namespace (scripts/cluster/netns.ts).
host=$1
shift
exec ip netns exec "$host" sh -c "$*"
