/**
 * The machine's CPU by name, as a run's metadata and its kept limits record it.
 * @module
 */

/** The CPU's model (`/proc/cpuinfo`), or the architecture where it does not say. */
export function cpuModel(): string {
  try {
    const info = Deno.readTextFileSync("/proc/cpuinfo");
    return info.match(/^model name\s*:\s*(.+)$/m)?.[1] ?? Deno.build.arch;
  } catch {
    return Deno.build.arch;
  }
}
