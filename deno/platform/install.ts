/**
 * Deno's offers to the core (primitives/platform.ts): the scheduler calls and the heavy fence
 * through FFI, the CPU binding and crowded-core readings, timers that do not keep a rank alive,
 * the WebGPU backend Deno's wgpu drives, and thread ids from /proc. Importing this module installs
 * them; every Deno launcher does, and hands it to its ranks as their runtime
 * (`GroupOptions.runtime`).
 * @module
 */

import { installPlatform } from "../../primitives/platform.ts";
import { heavyFence } from "./membarrier.ts";
import { boundToCpu, crowded, schedulerCalls } from "./scheduler_calls.ts";
import { threadEnded, threadId } from "./threads.ts";

/**
 * The backend Deno's wgpu picked: `DENO_WEBGPU_BACKEND` when set, else Vulkan whenever a Vulkan
 * loader is installed (Deno prefers it), else GL.
 */
function gpuBackend(): string {
  const told = Deno.env.get("DENO_WEBGPU_BACKEND");
  if (told) return `${told} (DENO_WEBGPU_BACKEND)`;
  const loaders = ["/usr/lib/x86_64-linux-gnu/libvulkan.so.1", "/usr/lib/libvulkan.so.1"];
  const loader = loaders.some((p) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  });
  return loader ? "vulkan (a Vulkan loader is installed)" : "gl (no Vulkan loader)";
}

installPlatform({
  scheduler: schedulerCalls(),
  heavyFence: heavyFence(),
  boundToCpu,
  crowded,
  unrefTimer: (timer) => Deno.unrefTimer(Number(timer)),
  gpuBackend,
  threadId,
  threadEnded,
});
