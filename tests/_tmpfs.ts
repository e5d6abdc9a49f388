// A small tmpfs for tests of a full disk: mounted where the machine lets this process mount (root
// on Linux), else the tests that need one are ignored with the reason.

/** Why no tmpfs can be mounted here, or "" when one can. */
export const NO_TMPFS = await probe();

async function probe(): Promise<string> {
  if (Deno.build.os !== "linux") return "a tmpfs is mounted on Linux only";
  const dir = await Deno.makeTempDir();
  try {
    const mounted = await mount(dir, 4096);
    if (!mounted) return "this process cannot mount a tmpfs (not root)";
    await unmount(dir);
    return "";
  } finally {
    await Deno.remove(dir).catch(() => {});
  }
}

async function mount(dir: string, bytes: number, readOnly = false): Promise<boolean> {
  const args = ["-t", "tmpfs", "-o", `size=${bytes}${readOnly ? ",ro" : ""}`, "tmpfs", dir];
  return (await new Deno.Command("mount", { args, stderr: "null" }).output()).success;
}

async function unmount(dir: string): Promise<void> {
  await new Deno.Command("umount", { args: [dir] }).output();
}

/**
 * Runs `body` with a folder on a fresh tmpfs of `bytes` (mounted read-only when told), unmounted
 * afterwards.
 */
export async function withTmpfs(
  bytes: number,
  body: (dir: string) => void | Promise<void>,
  options?: { readOnly?: boolean },
) {
  const dir = await Deno.makeTempDir();
  try {
    if (!await mount(dir, bytes, options?.readOnly)) {
      throw new Error(`cannot mount a tmpfs on ${dir}`);
    }
    try {
      await body(dir);
    } finally {
      await unmount(dir);
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
