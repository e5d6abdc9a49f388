/**
 * A rank's WebGPU device (docs/design.md, "WebGPU in Deno"): opened with the adapter's own limits (so a
 * 1 GiB buffer fits), one command encoder that collects work until something needs it done (every
 * awaited completion costs ~11 ms in Deno, so work is batched and synchronised rarely), reads
 * staged through a reusable pool of mapped buffers, several in flight, and writes in pieces of at
 * most 4 MiB (measured fastest). Validation and out-of-memory errors, which WebGPU reports as
 * events, surface as a `CommError` at the next synchronisation.
 * @module
 */

import { platform } from "../platform.ts";
import { GpuKernels, KERNEL_SOURCES } from "../../kernels/gpu_kernels.ts";
import { CommError } from "../errors.ts";

/** Options of {@linkcode GpuDevice.open}. */
export interface GpuDeviceOptions {
  /**
   * Largest storage binding a kernel uses, bytes (at most the adapter's): tests make it small to
   * exercise windows without 128 MiB buffers.
   */
  maxBindingBytes?: number;
  /** Bytes of each staging buffer reads go through. @default {16777216} */
  readPieceBytes?: number;
  /** Staging buffers: reads in flight at once. @default {8} */
  stagingBuffers?: number;
}

/** What a run records about its device (the JSON sidecar's `gpu`). */
export interface GpuInfo {
  /** The adapter, e.g. `NVIDIA H100 80GB HBM3` or `llvmpipe (LLVM 15.0.6, 256 bits)`. */
  description: string;
  /** PCI vendor id, as the adapter reports it. */
  vendor: string;
  /** Architecture, when the adapter says. */
  architecture: string;
  /** Whether it is a fallback (software) adapter. */
  fallback: boolean;
  /** `vulkan` or `gl`, and how it was told (Deno does not say). */
  backend: string;
  /** The limits the device was opened with (and the binding window the kernels use). */
  limits: Record<string, number>;
}

/**
 * Why this process cannot open a WebGPU device, or undefined when it can (an adapter answers
 * within 3 s).
 */
export async function gpuUnavailable(): Promise<string | undefined> {
  const gpu = (navigator as { gpu?: GPU }).gpu;
  if (!gpu) return "this Deno offers no WebGPU (navigator.gpu)";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<null>((resolve) => timer = setTimeout(() => resolve(null), 3000));
  try {
    const adapter = await Promise.race([gpu.requestAdapter(), timeout]);
    return adapter
      ? undefined
      : "no WebGPU adapter answers (on Linux: a Vulkan driver, or Mesa's GL)";
  } catch (e) {
    return `WebGPU failed: ${(e as Error).message}`;
  } finally {
    clearTimeout(timer);
  }
}

/** Bytes of the pieces writes are cut into (the fastest measured; docs/memory.md). */
const PIECE_BYTES = 4 * 1024 * 1024;
/**
 * Bytes of a staging buffer: every wave of reads costs one ~11 ms completion, so waves carry
 * 8 × 16 MiB (16 MiB pieces read fastest; docs/memory.md).
 */
const READ_PIECE_BYTES = 16 * 1024 * 1024;
/** Staging buffers (reads in flight at once). */
const STAGING = 8;
/** Commands recorded before the encoder is submitted anyway. */
const MAX_RECORDED = 512;
const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

let nextId = 1;

/** One rank's device: buffers, kernels, a batching encoder and staged transfers. */
export class GpuDevice {
  /** The WebGPU device. */
  readonly device: GPUDevice;
  /** The kernels, bound to this device's limits. */
  readonly kernels: GpuKernels;
  /** What it is (for reports). */
  readonly info: GpuInfo;
  #encoder: GPUCommandEncoder | undefined;
  #recorded = 0;
  /** Buffers recorded work may still use: destroyed once it is submitted. */
  #retired: GPUBuffer[];
  readonly #readPiece: number;
  readonly #stagingCount: number;
  /** Free staging buffers; all of them exist once the first read made them. */
  #staging: GPUBuffer[] = [];
  #stagingMade = 0;
  #stagingWaiters: (() => void)[] = [];
  #error: CommError | undefined;
  /** Each allocation's id (the kernels' caches key buffers by it). */
  readonly #ids = new WeakMap<GPUBuffer, number>();
  /** One word that carries a 16-bit element written half-way into a word of a buffer. */
  #word: { buffer: GPUBuffer; id: number } | undefined;

  private constructor(
    device: GPUDevice,
    kernels: GpuKernels,
    retired: GPUBuffer[],
    info: GpuInfo,
    options: GpuDeviceOptions,
  ) {
    this.device = device;
    this.kernels = kernels;
    this.#retired = retired;
    this.info = info;
    this.#readPiece = options.readPieceBytes ?? READ_PIECE_BYTES;
    this.#stagingCount = options.stagingBuffers ?? STAGING;
    device.addEventListener("uncapturederror", (e) => {
      this.#error ??= new CommError(`WebGPU: ${(e as GPUUncapturedErrorEvent).error.message}`);
    });
    device.lost.then((lost) => {
      this.#error ??= new CommError(`WebGPU device lost: ${lost.message || lost.reason}`);
    });
  }

  /** Opens the adapter's device with its limits; throws `TypeError` when there is no adapter. */
  static async open(options?: GpuDeviceOptions): Promise<GpuDevice> {
    options ??= {};
    const adapter = await navigator.gpu?.requestAdapter();
    if (!adapter) {
      throw new TypeError(
        "No WebGPU adapter: gpu and managed memory and the gpu transport need one (on Linux a " +
          "Vulkan loader with a driver, or Mesa's GL; see docs/transports/gpu.md)",
      );
    }
    const a = adapter.limits;
    const device = await adapter.requestDevice({
      requiredLimits: {
        maxBufferSize: a.maxBufferSize,
        maxStorageBufferBindingSize: a.maxStorageBufferBindingSize,
        maxStorageBuffersPerShaderStage: a.maxStorageBuffersPerShaderStage,
        minStorageBufferOffsetAlignment: a.minStorageBufferOffsetAlignment,
        maxComputeWorkgroupsPerDimension: a.maxComputeWorkgroupsPerDimension,
      },
    });
    const l = device.limits;
    const bindingBytes = Math.min(
      l.maxStorageBufferBindingSize,
      options.maxBindingBytes ?? Infinity,
    );
    const retired: GPUBuffer[] = [];
    const kernels = new GpuKernels(device, KERNEL_SOURCES, {
      bindingBytes,
      alignment: l.minStorageBufferOffsetAlignment,
      storageBindings: l.maxStorageBuffersPerShaderStage,
      maxWorkgroups: l.maxComputeWorkgroupsPerDimension,
    }, (buffer) => retired.push(buffer));
    const i = adapter.info;
    return new GpuDevice(device, kernels, retired, {
      description: i.description || i.device || "unnamed adapter",
      vendor: i.vendor,
      architecture: i.architecture,
      fallback: (i as { isFallbackAdapter?: boolean }).isFallbackAdapter ?? false,
      backend: platform.gpuBackend(),
      limits: {
        maxBufferSize: l.maxBufferSize,
        maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
        bindingBytesUsed: bindingBytes,
        maxStorageBuffersPerShaderStage: l.maxStorageBuffersPerShaderStage,
        minStorageBufferOffsetAlignment: l.minStorageBufferOffsetAlignment,
        maxComputeWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
      },
    }, options);
  }

  /** A zero-filled device buffer of `bytes` (rounded up to 4), and an id for caches. */
  createBuffer(bytes: number): { buffer: GPUBuffer; id: number } {
    const size = Math.max(4, Math.ceil(bytes / 4) * 4);
    const allocation = { buffer: this.device.createBuffer({ size, usage: STORAGE }), id: nextId++ };
    this.#ids.set(allocation.buffer, allocation.id);
    return allocation;
  }

  /** The encoder that collects work; counts as one recorded command. */
  encoder(): GPUCommandEncoder {
    if (++this.#recorded > MAX_RECORDED) this.flush();
    return this.#encoder ??= this.device.createCommandEncoder();
  }

  /** Submits what the encoder collected. */
  flush(): void {
    if (this.#encoder) {
      this.device.queue.submit([this.#encoder.finish()]);
      this.#encoder = undefined;
      this.#recorded = 0;
    }
    // Destroying a buffer waits for submitted work that uses it.
    for (const buffer of this.#retired.splice(0)) buffer.destroy();
  }

  /** Destroys `buffer` once the work recorded so far is submitted. */
  retire(buffer: GPUBuffer): void {
    this.#retired.push(buffer);
  }

  /** Submits, waits for the device to finish everything, and throws any error it reported. */
  async synchronize(): Promise<void> {
    this.flush();
    await this.device.queue.onSubmittedWorkDone();
    if (this.#error) throw this.#error;
  }

  /**
   * Writes `data` at `byteOffset` of `buffer`, in pieces. Work recorded earlier is submitted
   * first, so it sees the buffer as it was.
   */
  write(buffer: GPUBuffer, byteOffset: number, data: ArrayBufferView): void {
    this.flush();
    let bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    // Queue writes take whole words: a 16-bit element half-way into one goes by itself.
    if (byteOffset % 4 !== 0 && bytes.byteLength > 0) {
      this.#writeHalfWord(buffer, byteOffset, bytes.subarray(0, 2));
      bytes = bytes.subarray(2);
      byteOffset += 2;
    }
    if (bytes.byteLength % 4 !== 0) {
      const last = bytes.byteLength - 2;
      this.#writeHalfWord(buffer, byteOffset + last, bytes.subarray(last));
      bytes = bytes.subarray(0, last);
    }
    for (let at = 0; at < bytes.byteLength; at += PIECE_BYTES) {
      const piece = bytes.subarray(at, at + PIECE_BYTES);
      // Views of SharedArrayBuffer and shared WebAssembly memory are accepted (docs/design.md).
      this.device.queue.writeBuffer(buffer, byteOffset + at, piece as Uint8Array<ArrayBuffer>);
    }
  }

  /**
   * Writes the 2 bytes `element` at `byteOffset` (half-way into a word): through a word of its
   * own and the kernels' copy, which keeps the other half of the target word.
   */
  #writeHalfWord(buffer: GPUBuffer, byteOffset: number, element: Uint8Array): void {
    const word = this.#word ??= this.createBuffer(4);
    const padded = new Uint8Array(4);
    padded.set(element);
    this.device.queue.writeBuffer(word.buffer, 0, padded);
    const view = (buffer: GPUBuffer, id: number, byteOffset: number) =>
      ({ buffer, id, byteOffset, length: 1, dtype: "bf16" }) as const;
    this.kernels.copy(
      this.encoder(),
      view(word.buffer, word.id, 0),
      view(buffer, this.#ids.get(buffer) ?? 0, byteOffset),
    );
    // Submitted at once: the next element reuses the word.
    this.flush();
  }

  /**
   * Reads `into.byteLength` bytes from `byteOffset` of `buffer`, after all recorded work: copies
   * into as many free staging buffers as there are (up to 8, one piece each), then maps them all
   * at once, so a wave costs one ~11 ms completion, not one per piece.
   */
  async read(buffer: GPUBuffer, byteOffset: number, into: ArrayBufferView): Promise<void> {
    if (byteOffset % 4 !== 0) {
      // Copies start on a word: read from the one before and drop its first half.
      const whole = new Uint8Array(into.byteLength + 2);
      await this.read(buffer, byteOffset - 2, whole);
      return new Uint8Array(into.buffer, into.byteOffset, into.byteLength).set(whole.subarray(2));
    }
    const bytes = new Uint8Array(into.buffer, into.byteOffset, into.byteLength);
    const piece = this.#readPiece;
    for (let at = 0; at < bytes.byteLength;) {
      const stages = await this.#takeStaging(Math.ceil((bytes.byteLength - at) / piece));
      const encoder = this.encoder();
      const pieces = stages.map((stage, k) => {
        const start = at + k * piece;
        const size = Math.min(piece, bytes.byteLength - start);
        const words = Math.ceil(size / 4) * 4; // copies and maps cover whole words
        encoder.copyBufferToBuffer(buffer, byteOffset + start, stage, 0, words);
        return { start, size, words, stage };
      });
      at += stages.length * piece;
      this.flush();
      try {
        await Promise.all(pieces.map((p) => p.stage.mapAsync(GPUMapMode.READ, 0, p.words)));
        for (const p of pieces) {
          bytes.set(new Uint8Array(p.stage.getMappedRange(0, p.words), 0, p.size), p.start);
          p.stage.unmap();
        }
      } finally {
        this.#returnStaging(stages);
      }
    }
    if (this.#error) throw this.#error;
  }

  /**
   * Deno's completion floor on this device: the median time, ms, of awaiting an empty queue
   * (~11 ms on every GPU: its wait loop sleeps 10 ms). Per-iteration timing cannot go below it.
   */
  async completionFloorMs(samples?: number): Promise<number> {
    samples ??= 5;
    await this.synchronize();
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      const start = performance.now();
      await this.device.queue.onSubmittedWorkDone();
      times.push(performance.now() - start);
    }
    return times.sort((a, b) => a - b)[Math.floor(samples / 2)];
  }

  /** Releases the device. */
  destroy(): void {
    this.kernels.destroy();
    this.device.destroy();
  }

  /** Up to `wanted` free staging buffers (at least one, waiting for it if all are in use). */
  async #takeStaging(wanted: number): Promise<GPUBuffer[]> {
    if (this.#staging.length === 0 && this.#stagingMade < this.#stagingCount) {
      for (; this.#stagingMade < this.#stagingCount; this.#stagingMade++) {
        this.#staging.push(this.device.createBuffer({
          size: this.#readPiece,
          usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
        }));
      }
    }
    while (this.#staging.length === 0) {
      await new Promise<void>((resolve) => this.#stagingWaiters.push(resolve));
    }
    return this.#staging.splice(0, Math.max(1, Math.min(wanted, this.#staging.length)));
  }

  #returnStaging(stages: GPUBuffer[]): void {
    this.#staging.push(...stages);
    for (const wake of this.#stagingWaiters.splice(0)) wake();
  }
}
