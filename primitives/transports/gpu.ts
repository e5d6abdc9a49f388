/**
 * The `gpu` transport, the NCCL + cudaMalloc analogue: `size` logical ranks in one thread sharing
 * one WebGPU device, like nccl-tests `-g N` or `ncclCommInitAll` (GPU objects cannot cross workers
 * in Deno: they arrive as `{}`). Collective calls join the ranks' group (gpu_group.ts); the last
 * rank to join records the whole call for every rank into the device's encoder, so one submit
 * carries many calls. Device send/recv become buffer copies; host messages between the logical ranks go
 * through in-thread inboxes (the harness's bookkeeping runs on host buffers).
 * @module
 */

import type { CommError } from "../errors.ts";
import type { GpuDevice } from "../memory/gpu_device.ts";
import { GpuGroup } from "./gpu_group.ts";
import { InboxTransport } from "./inbox_transport.ts";
import type { DeviceAccess, ThreadTransport, TransportFacts } from "./transport.ts";

/** One logical rank's side of a {@linkcode GpuGroup}. */
export class GpuTransport extends InboxTransport {
  readonly name = "gpu" as const;
  readonly facts: TransportFacts = GPU;
  /** This rank's collective access to the group's device. */
  readonly device: DeviceAccess;
  readonly #group: GpuGroup;
  /** Every rank of the group, by rank (host messages go straight into a peer's inbox). */
  readonly #ranks: readonly GpuTransport[];
  #failed: Error | undefined;

  /** Rank `rank` of `group`, whose ranks are `ranks` ({@linkcode gpuRanks} makes them). */
  constructor(
    group: GpuGroup,
    ranks: readonly GpuTransport[],
    rank: number,
    size: number,
    timeoutMs: number,
  ) {
    super(rank, size, timeoutMs, {
      stalled: (peer, tag) => {
        const stamp = this.calls?.stampOf(tag);
        if (stamp === undefined) return;
        const problem = ranks[peer].calls?.arrived(rank, tag, stamp);
        if (problem) this.abort(problem);
      },
    });
    this.#group = group;
    this.#ranks = ranks;
    let seq = 0;
    this.device = {
      join: (stamp, args, record) => group.join(rank, seq++, stamp, args, record),
      send: (peer, view, tag, stamp) => group.send(rank, peer, view, tag, stamp),
      recv: (peer, view, tag) => group.recv(rank, peer, view, tag),
      probe: (peers, tag) => group.probe(rank, peers, tag),
    };
  }

  /** Host bytes to `peer`: delivered at once into its inbox, which copies them. */
  send(peer: number, data: Uint8Array, tag: number, stamp: number): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failed);
    this.sent[peer]++;
    this.#ranks[peer].inbox.deliver(this.rank, {
      tag,
      stamp,
      total: data.byteLength,
      offset: 0,
      data,
    });
    return Promise.resolve();
  }

  abort(error: CommError): void {
    this.#group.abort(error);
  }

  /** Fails this rank's host messages (the group calls it on abort). */
  fail(error: Error): void {
    this.#failed ??= error;
    this.inbox.fail(error);
    this.goodbyes.interrupt();
  }

  /**
   * Says goodbye to every other rank of the group and waits for theirs (closing_check.ts); rejects
   * with what that finds, or with the failure that aborted the group.
   */
  async close(): Promise<void> {
    if (!this.#failed) {
      this.#group.closed(this.rank);
      const problem = await this.farewell(
        (peer, bye) => this.#ranks[peer].peerClosed(this.rank, bye),
        () => this.#failed !== undefined,
      );
      if (problem) {
        this.abort(problem);
        this.inbox.close();
        throw problem; // the group tells the others as a PeerFailedError
      }
    }
    this.inbox.close();
    if (this.#failed) throw this.#failed;
  }
}

/** The `gpu` transport: logical ranks sharing one device (see `TransportFacts`). */
export const GPU: ThreadTransport & { name: "gpu" } = {
  name: "gpu",
  summary: "logical ranks in one thread sharing one WebGPU device (data stays on the device)",
  launch: "thread",
  memory: ["host", "gpu", "managed"],
  bestMemory: "gpu",
  offers: ["messages", "device"],
  needsDevice: true,
  blocking: false,
  rankBytes: 2 ** 20,
  groupBytes: () => 64 * 2 ** 20,
  bounds: { latency: "device", bandwidth: "device" },
  // Each byte of every rank's buffer read once by one kernel: the direct kernels beat the ring.
  group: ({ gpu, size, timeoutMs }) => {
    if (!gpu) throw new Error("The gpu transport's ranks share a WebGPU device; none was opened");
    return gpuRanks(gpu, size, timeoutMs);
  },
};

/** The transports of `size` logical ranks on `gpu`, by rank. */
export function gpuRanks(gpu: GpuDevice, size: number, timeoutMs: number): GpuTransport[] {
  const group = new GpuGroup(gpu, size, { timeoutMs });
  const ranks: GpuTransport[] = [];
  for (let r = 0; r < size; r++) ranks.push(new GpuTransport(group, ranks, r, size, timeoutMs));
  group.members = ranks;
  return ranks;
}
