/**
 * Measuring a group's links when it spans hosts, so `auto` picks from their real costs
 * (each algorithm prices itself by them: collectives/algorithm.ts). Done once as the group forms rather than read from a file a tuning run wrote:
 * a file goes stale when the network or the placement changes, and tens of milliseconds are
 * little next to starting ranks on several hosts (docs/auto.md, "Between hosts").
 * @module
 */

import { reduce } from "../../kernels/reduce.ts";
import type { Communicator } from "../communicator/communicator.ts";
import type { Transport } from "../transports/transport.ts";

/**
 * Round trips of a one-element message (the first `WARM_TRIPS` untimed: the group has just
 * formed, and cold code or a sleeping peer would make the link look slower than it is), and of
 * a large message answered by a small one.
 */
const WARM_TRIPS = 20, SMALL_TRIPS = 40, LARGE_TRIPS = 4;
/** Bytes of the large message: enough to run a link at its rate. */
const LARGE_BYTES = 1 << 20;
/** Tag of the calibration's messages (it runs before the group is handed to the caller). */
const TAG = 0x7ca1;

/**
 * When `transport`'s ranks run on more than one host, measures the link between rank 0 and the
 * first rank on another host — latency, bandwidth — and rank 0's reduction speed, agrees on them
 * across the group (rank 0's figures, broadcast) and sets them as `transport.links`. Collective:
 * every rank of the group calls it right after connecting.
 */
export async function calibrateLinks(comm: Communicator, transport: Transport): Promise<void> {
  const hosts = transport.hosts;
  const peer = hosts?.findIndex((h) => h !== hosts[0]) ?? -1;
  if (peer < 0) return;
  const figures = new Float64Array(3);
  if (comm.rank === 0) figures.set(await measure(comm, peer));
  else if (comm.rank === peer) await answer(comm);
  await comm.bcast(figures, { root: 0, algorithm: "binomial" });
  const [latencyUs, usPerByte, reduceUsPerByte] = figures;
  transport.links = { latencyUs, usPerByte, reduceUsPerByte };
}

/**
 * `comm` once {@linkcode calibrateLinks} has run on it; if that fails, `comm` is aborted (its
 * peers learn of it) and the error thrown.
 */
export async function calibrated(comm: Communicator, transport: Transport): Promise<Communicator> {
  try {
    await calibrateLinks(comm, transport);
  } catch (e) {
    await comm.abort(e);
    throw e;
  }
  return comm;
}

/** Rank 0's side: times the round trips and a reduction. */
async function measure(comm: Communicator, peer: number): Promise<number[]> {
  const one = new Float32Array(1), large = new Float32Array(LARGE_BYTES / 4);
  const tag = { tag: TAG };
  const trip = async (out: Float32Array) => {
    const start = performance.now();
    await comm.send(out, peer, tag);
    await comm.recv(one, peer, tag);
    return (performance.now() - start) * 1e3;
  };
  const small: number[] = [];
  for (let i = 0; i < SMALL_TRIPS; i++) small.push(await trip(one));
  small.splice(0, WARM_TRIPS);
  const big: number[] = [];
  for (let i = 0; i < LARGE_TRIPS; i++) big.push(await trip(large));
  const latencyUs = median(small) / 2;
  const usPerByte = Math.max(0, median(big) - 2 * latencyUs) / LARGE_BYTES;
  const a = new Float32Array(LARGE_BYTES / 4), b = new Float32Array(a.length);
  const reductions: number[] = [];
  for (let i = 0; i < 5; i++) {
    const start = performance.now();
    reduce("sum", a, a, b);
    reductions.push((performance.now() - start) * 1e3);
  }
  return [latencyUs, usPerByte, Math.min(...reductions) / a.byteLength];
}

/** The peer's side: answers each of rank 0's messages with one element. */
async function answer(comm: Communicator): Promise<void> {
  const one = new Float32Array(1), large = new Float32Array(LARGE_BYTES / 4);
  const tag = { tag: TAG };
  for (let i = 0; i < SMALL_TRIPS + LARGE_TRIPS; i++) {
    await comm.recv(i < SMALL_TRIPS ? one : large, 0, tag);
    await comm.send(one, 0, tag);
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)];
}
