// GPU tests run wherever an adapter answers (CI has Mesa's llvmpipe) and skip only where none
// exists at all; `gpuTest` says which, in the test's name.
//
// `deno test --parallel` runs modules side by side in one process, and Mesa's GL backend shares
// one EGL display per process: isolates that create and drop WebGPU instances at the same time
// corrupt the heap. Eight modules that each only requested an adapter in their own isolate aborted
// 2 runs in 20 with "double free or corruption", 5 in 20 with a device each; the same eight with
// the probe in a subprocess and the device in a rank worker, under this lock, 0 in 20. So no test
// module opens WebGPU in its own isolate: the probe runs in a subprocess, devices live in rank
// workers that a launcher terminates and waits for, and GPU tests of all modules take turns.

/** Asks a fresh process whether it can open a WebGPU device (`gpuUnavailable`, gpu_device.ts). */
async function probeElsewhere(): Promise<string | undefined> {
  const probe = new URL("../primitives/memory/gpu_device.ts", import.meta.url).href;
  const code = `import { gpuUnavailable } from "${probe}";\n` +
    "console.log(JSON.stringify((await gpuUnavailable()) ?? null));";
  const { success, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["eval", code],
    stdin: "null",
  }).output();
  const text = new TextDecoder();
  if (!success) return `the WebGPU probe failed: ${text.decode(stderr).trim()}`;
  return JSON.parse(text.decode(stdout)) ?? undefined;
}

/** Why this machine has no WebGPU device, or undefined when it has one. */
export const NO_GPU: string | undefined = await probeElsewhere();

/** Where GPU tests of every module take their turn (a lock file shared by the suite's isolates). */
const LOCK = `${Deno.env.get("TMPDIR") ?? "/tmp"}/dccl-gpu-tests.lock`;

/** Runs `fn` while no other test module of this suite runs a GPU test. */
async function oneAtATime(fn: () => Promise<void>): Promise<void> {
  // Each isolate opens the file itself: `flock` locks differ per open file, so they exclude each
  // other within one process too. Closing the file releases the lock.
  const file = await Deno.open(LOCK, { create: true, write: true });
  try {
    await file.lock(true);
    await fn();
  } finally {
    file.close();
  }
}

/**
 * A test that needs a WebGPU device: ignored (not passed) where none exists; where one does, run
 * while no other module runs one (devices must be opened in rank workers, not in the test).
 */
export function gpuTest(name: string, fn: () => Promise<void>): void {
  Deno.test({
    name: NO_GPU ? `${name} (skipped: ${NO_GPU})` : name,
    ignore: !!NO_GPU,
    fn: () => oneAtATime(fn),
  });
}
