/**
 * Which WebAssembly.Memory a buffer belongs to: the SIMD kernels run only on views whose bytes
 * live in one. Whoever makes such a memory (a rank's heap, a large private buffer) registers each
 * of its buffers here.
 * @module
 */

const OWNER = new WeakMap<ArrayBufferLike, WebAssembly.Memory>();

/** Records that `buffer` holds `memory`'s bytes. */
export function registerMemoryBuffer(buffer: ArrayBufferLike, memory: WebAssembly.Memory): void {
  OWNER.set(buffer, memory);
}

/** The memory a buffer belongs to, if one was registered. */
export function memoryOf(buffer: ArrayBufferLike): WebAssembly.Memory | undefined {
  return OWNER.get(buffer);
}
