/**
 * alltoallv: every rank's blocks to every rank by a traffic matrix — balanced by default (equal
 * counts, as osu_alltoallv times it), a matrix file's or a skew generator's otherwise — with the
 * balanced run of the same total timed beside a skewed one. Sizes are the mean elements a rank
 * sends, so a row stands at the balanced alltoall's bytes.
 * @module
 */

import type { CommBuffer } from "../../core.ts";
import { alloc, collectiveFacts, head, multipleOfRanks, prepared } from "./_buffers.ts";
import { clear, writeInput, wrongInputs } from "../exact_inputs.ts";
import { trafficAt } from "./_traffic.ts";
import type { CaseOptions, PrimitiveSpec, SizedCase } from "./spec.ts";
import type { Communicator } from "../../core.ts";

/** alltoallv's case. */
export const ALLTOALLV: PrimitiveSpec = {
  ...collectiveFacts("alltoallv"),
  inPlace: false,
  traffic: true,
  busFactor: (n) => (n - 1) / n,
  work: (n) => ({ copy: n - 1, reduce: 0 }),
  busFormula: "(n-1)/n",
  footprint: (count, ranks, o) => 2 * busiestBlocks(count, ranks, o),
  largestBuffer: busiestBlocks,
  fit: multipleOfRanks,
  prepare(comm, maxCount, o) {
    const most = busiestBlocks(maxCount, comm.size, o);
    const sendBuf = alloc(comm, most, o), recvBuf = alloc(comm, most, o);
    return prepared(comm, o, [sendBuf, recvBuf], (count) => {
      const skewed = sized(comm, o, sendBuf, recvBuf, count, false);
      return o.traffic
        ? { ...skewed, balanced: sized(comm, o, sendBuf, recvBuf, count, true) }
        : skewed;
    });
  },
};

/**
 * Elements the busiest rank's send or receive holds at `count`, and a rounding's slack: what
 * every rank's buffers are sized to.
 */
function busiestBlocks(count: number, ranks: number, o: Pick<CaseOptions, "traffic">): number {
  return Math.max(count, trafficAt(o.traffic, ranks, count).busiest + ranks);
}

/** The case at `count` by the options' traffic, or `balanced` whatever it is. */
function sized(
  comm: Communicator,
  o: CaseOptions,
  sendBuf: CommBuffer,
  recvBuf: CommBuffer,
  count: number,
  balanced: boolean,
): SizedCase & { buffers: CommBuffer[] } {
  const { rank, size } = comm;
  const t = trafficAt(balanced ? undefined : o.traffic, size, count);
  const column = (j: number) => t.counts.map((row) => row[j]);
  const sendCounts = t.counts[rank], recvCounts = column(rank);
  const send = head(sendBuf, sendCounts.reduce((s, c) => s + c, 0));
  const recv = head(recvBuf, recvCounts.reduce((s, c) => s + c, 0));
  const options = {
    algorithm: o.algorithm,
    sendCounts,
    sendDispls: t.sendDispls[rank],
    recvCounts,
    recvDispls: t.recvDispls[rank],
  };
  return {
    buffers: [send, recv],
    fill: async () => {
      await clear(recv);
      await writeInput(send, o, rank, size);
    },
    run: () => comm.alltoallv(send, recv, options),
    // Block i came from rank i: its send's block for this rank.
    wrong: async () => {
      let wrong = 0;
      for (let i = 0; i < size; i++) {
        const at = t.recvDispls[rank][i], n = recvCounts[i];
        wrong += await wrongInputs(recv.subarray(at, at + n), o, i, size, t.sendDispls[i][rank]);
      }
      return wrong;
    },
  };
}
