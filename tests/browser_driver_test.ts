// The browser driver opens no door and leaves nothing behind (docs/security.md): Chromium is
// driven over a pipe, so none of its processes listens on a TCP port; and after the driver ends —
// closed, or SIGKILLed — no process of the run is alive and its profile folder is gone. A page's
// calls of a binding are all waited for, as `deno task browser` waits for a run's rows.
import { assert_, assertEquals } from "./_assert.ts";
import { Chromium, chromiumAvailable } from "../scripts/browser/chromium.ts";
import { DEFAULT_TIMEOUT_MS } from "../primitives/types.ts";

const AVAILABLE = await chromiumAvailable() && Deno.build.os === "linux";
const MISSING = AVAILABLE ? "" : " (ignored: Debian's package chromium is not installed)";

/** Live (not zombie) processes whose command line names `profile`, by PID. */
function processesOf(profile: string): number[] {
  const found: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
      if (!cmdline.includes(profile)) continue;
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      if (stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z") found.push(Number(entry.name));
    } catch { /* gone meanwhile */ }
  }
  return found;
}

/** The TCP sockets in LISTEN state that `pids` hold, as `address:port` (hex, as /proc says). */
function listeningSockets(pids: number[]): string[] {
  const inodes = new Set<string>();
  for (const pid of pids) {
    try {
      for (const fd of Deno.readDirSync(`/proc/${pid}/fd`)) {
        const target = Deno.readLinkSync(`/proc/${pid}/fd/${fd.name}`);
        const inode = target.match(/^socket:\[(\d+)\]$/)?.[1];
        if (inode) inodes.add(inode);
      }
    } catch { /* gone meanwhile */ }
  }
  return ["/proc/net/tcp", "/proc/net/tcp6"].flatMap((table) =>
    Deno.readTextFileSync(table).split("\n").slice(1).map((line) => line.trim().split(/\s+/))
      .filter((f) => f[3] === "0A" && inodes.has(f[9])).map((f) => f[1])
  );
}

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

/** Polls `check` every 100 ms for up to `ms`; resolves with its last answer. */
async function settles<T>(check: () => T | Promise<T>, done: (value: T) => boolean, ms = 10_000) {
  const start = Date.now();
  let value = await check();
  while (!done(value) && Date.now() - start < ms) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    value = await check();
  }
  return value;
}

Deno.test({
  name: `browser driver: no process of the driven browser listens on a TCP port${MISSING}`,
  ignore: !AVAILABLE,
}, async () => {
  const chromium = await Chromium.launch();
  try {
    const page = await chromium.page("data:text/html,<p id=x>driven</p>");
    assertEquals(await page.evaluate("document.getElementById('x').textContent"), "driven");
    const pids = processesOf(chromium.profile);
    assert_(pids.length > 1, `the browser's processes carry its profile (found ${pids})`);
    assertEquals(listeningSockets(pids), [], "listening sockets of the browser's processes");
    assertEquals(await exists(`${chromium.profile}/DevToolsActivePort`), false);
  } finally {
    await chromium.close();
  }
});

Deno.test({
  name: `browser driver: a closed browser leaves no process and no profile, every time${MISSING}`,
  ignore: !AVAILABLE,
}, async () => {
  for (let run = 0; run < 8; run++) {
    const chromium = await Chromium.launch();
    await chromium.page("data:text/html,<p>once</p>");
    await chromium.close();
    assertEquals(processesOf(chromium.profile), [], `run ${run}: processes left`);
    assertEquals(await exists(chromium.profile), false, `run ${run}: profile left`);
  }
});

Deno.test({
  name: `browser driver: a SIGKILLed driver leaves no process and no profile${MISSING}`,
  ignore: !AVAILABLE,
}, async () => {
  const driver = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./_hold_chromium.ts", import.meta.url).pathname],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = driver.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const { value: line } = await reader.read();
  const profile = line!.trim();
  assert_(processesOf(profile).length > 1, "the browser runs before the driver is killed");
  driver.kill("SIGKILL");
  await driver.status;
  await reader.cancel().catch(() => {});
  const left = await settles(() => processesOf(profile), (pids) => pids.length === 0);
  assertEquals(left, [], "processes of the run alive 10 s after the driver was killed");
  assertEquals(await settles(() => exists(profile), (e) => !e), false, "profile left");
});

Deno.test({
  name:
    `browser driver: a SIGKILLed \`deno task browser\` leaves neither the profile nor the page's bundle${MISSING}`,
  ignore: !AVAILABLE,
}, async () => {
  const tmp = await Deno.makeTempDir();
  try {
    const task = new Deno.Command(Deno.execPath(), {
      args: [
        ...["run", "-A", new URL("../scripts/browser.ts", import.meta.url).pathname],
        ...["allreduce", "--procs", "2", "--max", "64M"],
      ],
      env: { TMPDIR: tmp },
      stdout: "null",
      stderr: "null",
    }).spawn();
    const ours = () => [...Deno.readDirSync(tmp)].map((e) => e.name);
    const started = await settles(
      ours,
      (names) => names.some((n) => n.startsWith("dccl-chromium-")),
      120_000,
    );
    assert_(started.some((n) => n.startsWith("dccl-page-")), `the bundle is there: ${started}`);
    task.kill("SIGKILL");
    await task.status;
    // The guard notices within a second, then reaps the browser's processes before it removes
    // their folders: on a busy machine that takes a while, so the wait is the group's timeout.
    assertEquals(
      await settles(ours, (names) => names.length === 0, DEFAULT_TIMEOUT_MS),
      [],
      "left in TMPDIR",
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});

Deno.test({
  name:
    `browser driver: a binding's calls are waited for, and the wait names the binding${MISSING}`,
  ignore: !AVAILABLE,
}, async () => {
  const chromium = await Chromium.launch();
  try {
    const page = await chromium.page("data:text/html,<p>bound</p>");
    const seen: string[] = [];
    const binding = await page.expose("driverCalls", (text) => seen.push(text));
    const sent = await page.evaluate<number>(
      "(async () => { for (let i = 0; i < 100; i++) { driverCalls(String(i)); await null; } " +
        "return 100; })()",
    );
    await binding.arrived(sent);
    assertEquals(seen, Array.from({ length: 100 }, (_, i) => String(i)));
    // One more than were sent never comes: the wait ends, naming what it waited for.
    const late = await binding.arrived(sent + 1, 200).then(() => "arrived", (e) => e.message);
    assertEquals(late, "driverCalls's 101 calls took longer than 0.2 s");
  } finally {
    await chromium.close();
  }
});
