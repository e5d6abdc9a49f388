// compare stops when told, in every phase (reading, folding, drawing, writing): SIGINT and
// SIGTERM end it within a second with 130 or 143 and leave no output; and its chart stays a few
// MB whatever the input (here 210 curves of 1000 sizes: 210,000 rows).
import { assert_, assertEquals } from "./_assert.ts";
import { CSV_COLUMNS } from "../bench/metrics.ts";

/** A dccl CSV row of allreduce at `procs` ranks over `transport`. */
function row(transport: string, procs: number, floats: number, us: number): string {
  const gbps = (32 * floats) / us / 1e3, gbs = (4 * floats) / us / 1e3;
  return ["allreduce", transport, "host", "auto", procs, floats, 4 * floats, 10, us, us, us]
    .concat([gbps, gbs, gbs, 0]).join(",");
}

/** `rows` rows over `sizes` sizes: 7 transports × as many rank counts as it takes. */
function manyCurves(sizes: number, rows: number): string {
  const lines = [CSV_COLUMNS.join(",")];
  const transports = ["shm", "worker", "ws", "tcp", "gpu", "a", "b"];
  for (let i = 0; lines.length <= rows; i++) {
    const procs = 2 + Math.floor(i / transports.length), transport = transports[i % 7];
    for (let k = 0; k < sizes; k++) {
      const floats = 37 * k + 1;
      lines.push(
        row(transport, procs, floats, (1 + ((k * 7919 + i) % 100) / 100) * (1 + floats / 1e4)),
      );
    }
  }
  return lines.join("\n") + "\n";
}

/** `deno run scripts/compare.ts <csv> --out <dir>/report.html`, started. */
function startCompare(csv: string, dir: string): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "scripts/compare.ts", csv, "--out", `${dir}/report.html`],
    stdout: "null",
    stderr: "piped",
  }).spawn();
}

/**
 * Sends `signal` to `child` after `ms`; resolves with its exit, stderr and how long it took, or
 * undefined when it had already finished.
 */
async function stopAfter(child: Deno.ChildProcess, ms: number, signal: Deno.Signal) {
  const output = child.output();
  let ended = false;
  output.then(() => ended = true, () => ended = true);
  await new Promise((resolve) => setTimeout(resolve, ms));
  if (ended) return undefined;
  const sent = performance.now();
  child.kill(signal);
  // One that ignores the signal is killed, and fails the exit code's check.
  const killer = setTimeout(() => child.kill("SIGKILL"), 5000);
  const { code, stderr } = await output;
  clearTimeout(killer);
  return { code, err: new TextDecoder().decode(stderr), waited: performance.now() - sent };
}

Deno.test("compare: 210,000 rows of 210 curves: a chart of a few MB, and a signal in any phase stops it within a second", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const csv = `${dir}/many.csv`;
    await Deno.writeTextFile(csv, manyCurves(1000, 210_000));
    const start = performance.now();
    const { code, stderr } = await startCompare(csv, dir).output();
    const whole = performance.now() - start;
    assertEquals(code, 0, new TextDecoder().decode(stderr));
    const svg = Deno.statSync(`${dir}/report.svg`).size,
      html = Deno.statSync(`${dir}/report.html`).size;
    assert_(svg < 5e6 && html < 10e6, `the chart is ${svg} B, the report ${html} B`);
    assert_(
      Deno.readTextFileSync(`${dir}/report.svg`).includes("of 210 curves"),
      "it says what it left out",
    );
    for (const file of ["report.svg", "report.html"]) Deno.removeSync(`${dir}/${file}`);
    // Early (reading), midway and late (folding, drawing): each stops at once, leaving nothing.
    // A run that happens to finish before its signal (a loaded machine varies) is not counted:
    // one that had ended, or one the signal reached as it exited, its report whole and exit 0.
    let stopped = 0;
    const points = [[0.2, "SIGINT", 130], [0.5, "SIGTERM", 143], [0.8, "SIGINT", 130]] as const;
    const finished = () =>
      ["report.svg", "report.html"].every((f) => {
        try {
          return Deno.statSync(`${dir}/${f}`).isFile;
        } catch {
          return false;
        }
      });
    for (const [share, signal, exit] of points) {
      const end = await stopAfter(startCompare(csv, dir), share * whole, signal);
      if (!end || (end.code === 0 && finished())) {
        for (const file of ["report.svg", "report.html"]) Deno.removeSync(`${dir}/${file}`);
        continue;
      }
      stopped++;
      assertEquals(end.code, exit, end.err);
      assert_(end.waited < 1000, `at ${share} of the run it took ${end.waited.toFixed(0)} ms`);
      assert_(end.err.includes(`interrupted by ${signal}`), end.err);
      assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), ["many.csv"]);
    }
    assert_(stopped >= 2, `only ${stopped} of 3 runs were still going when signalled`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

for (const [signal, code] of [["SIGTERM", 143], ["SIGINT", 130]] as const) {
  Deno.test(`compare: ${signal} ends a comparison in its middle within a second, exit ${code}`, async () => {
    // A pipe fed without end: compare reads and parses rows until the signal comes.
    const dir = await Deno.makeTempDir();
    const fifo = `${dir}/endless.csv`;
    try {
      await new Deno.Command("mkfifo", { args: [fifo] }).output();
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "scripts/compare.ts", fifo, "--out", `${dir}/report.html`],
        stdout: "null",
        stderr: "piped",
      }).spawn();
      const pipe = await Deno.open(fifo, { write: true });
      const rows = new TextEncoder().encode(manyCurves(1000, 20_000));
      const header = CSV_COLUMNS.join(",").length + 1;
      await pipe.write(rows.subarray(0, header));
      const feeding = (async () => {
        try {
          for (;;) await pipe.write(rows.subarray(header));
        } catch { /* the reader went away */ }
      })();
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const sent = performance.now();
      child.kill(signal);
      // One that ignores the signal is killed, and fails the exit code's check.
      const killer = setTimeout(() => child.kill("SIGKILL"), 5000);
      const { code: exit, stderr } = await child.output();
      clearTimeout(killer);
      const waited = performance.now() - sent;
      try {
        pipe.close();
      } catch { /* closed by the failed write */ }
      await feeding;
      const err = new TextDecoder().decode(stderr);
      assertEquals(exit, code, err);
      assert_(waited < 1000, `it took ${waited.toFixed(0)} ms to stop`);
      assert_(err.includes(`interrupted by ${signal}`), err);
      assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), ["endless.csv"]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
