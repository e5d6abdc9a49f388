// A new collective is six places (docs/design.md, "A new collective"): its spec, its algorithm,
// the algorithm's registry line, one Communicator method, its bench case and its task. This test
// adds a throwaway one to a scratch copy of the library — allreduceMax, an allreduce that also
// returns the max — and measures it with its own task, every element checked. Then it leaves
// each place out in turn: the type checker names every place but the task, whose absence the
// task check below names (it runs on this repository too).
import { assert_, assertEquals } from "./_assert.ts";

const ROOT = new URL("../", import.meta.url).pathname;
/** What a scratch copy leaves out: what the library's programs never import. */
const LEFT_OUT = new Set([".git", ".ci", "node_modules", "out", "tests", "docs", "results"]);

/** One place: new files (no `after`) and lines added after an anchor in a file. */
interface Edit {
  path: string;
  after?: string;
  text: string;
}

const SPEC = `/**
 * allreduceMax (a throwaway of tests/new_collective_test.ts): \`recv\` (2n) gets the sum of every
 * rank's \`send\` (n) in its first half and their max in its second.
 * @module
 */

import type { BufferLike } from "../memory/comm_buffer.ts";
import type { TypedArray } from "../types.ts";
import type { CollectiveContext, Completion } from "./context.ts";
import type { AlgorithmOptions } from "./options.ts";
import {
  type ArgumentChecks,
  type CheckedCall,
  type CollectiveSpec,
  NO_LAYOUT,
  type UniformRun,
} from "./spec.ts";

/** The sum of every rank's \`send\` into recv's first half, their max into its second. */
export type AllreduceMaxRun<B = TypedArray> = (
  ctx: CollectiveContext,
  send: B,
  recv: B,
) => Completion;

/** allreduceMax's spec. */
export const ALLREDUCE_MAX = {
  name: "allreduceMax",
  code: 15,
  rooted: false,
  reduces: false,
  staging: { pickBy: "send", pipelines: false },
  check(
    args: ArgumentChecks,
    send: BufferLike,
    recv: BufferLike,
    options: AlgorithmOptions,
  ): CheckedCall<"allreduceMax"> {
    const s = args.buffer(send, "allreduceMax"), r = args.buffer(recv, "allreduceMax into");
    args.pair(s, r, r.length === 2 * s.length, "allreduceMax", "recv = 2 × send");
    args.apart(s, r, "allreduceMax");
    return {
      collective: "allreduceMax",
      buffers: [[s, false], [r, true]],
      block: s,
      algorithm: options.algorithm,
    };
  },
  bind: <B>(run: AllreduceMaxRun<B>) => (ctx: CollectiveContext, a: B, b: B) => run(ctx, a, b),
  unbind: <B>(run: UniformRun<B>): AllreduceMaxRun<B> => (ctx, send, recv) =>
    run(ctx, send, recv, "sum", 0, NO_LAYOUT),
} as const satisfies CollectiveSpec<"allreduceMax">;
`;

const ALGORITHM = `import type { TypedArray } from "../types.ts";
import type { CollectiveContext } from "./context.ts";
import { hostAlgorithm } from "./collective_table.ts";
import type { HostAlgorithm } from "./algorithm.ts";

/** allreduceMax as two allreduces, each by what \`auto\` picks for its size. */
export async function allreduceMaxCompose(
  ctx: CollectiveContext,
  send: TypedArray,
  recv: TypedArray,
): Promise<void> {
  const n = send.length, sum = recv.subarray(0, n), max = recv.subarray(n);
  sum.set(send);
  max.set(send);
  const allreduce = hostAlgorithm(ctx, "allreduce", sum.byteLength);
  await allreduce(ctx, sum, sum, "sum");
  await allreduce(ctx, max, max, "max");
}

/** allreduceMax \`compose\`. */
export const ALLREDUCE_MAX_COMPOSE: HostAlgorithm<"allreduceMax"> = {
  name: "compose",
  collective: "allreduceMax",
  needs: "messages",
  run: allreduceMaxCompose,
  winsBelow: () => Infinity,
};
`;

const METHOD = `
  /** The sum of every rank's \`send\` into recv's first half, their max into its second. */
  allreduceMax(send: BufferLike, recv: BufferLike, options?: AlgorithmOptions): Promise<void> {
    options ??= {};
    return this.#collective(() => ALLREDUCE_MAX.check(this.#args, send, recv, options));
  }
`;

const CASE = `/**
 * allreduceMax: the sum and the max of every rank's inputs, each element checked (f32).
 * @module
 */

import { DTYPE_INFO } from "../../internal.ts";
import { alloc, collectiveFacts, head, prepared, whole } from "./_buffers.ts";
import { clearRecvFillSend, expectedReduction, inputValue, wrongReducedIn } from "../exact_inputs.ts";
import type { PrimitiveSpec } from "./spec.ts";

/** allreduceMax's case. */
export const ALLREDUCE_MAX: PrimitiveSpec = {
  ...collectiveFacts("allreduceMax"),
  inPlace: false,
  busFactor: (n) => (4 * (n - 1)) / n,
  work: (n) => ({ copy: 2 * (n - 1), reduce: 2 * (n - 1) }),
  busFormula: "4(n-1)/n",
  footprint: (count) => 3 * count,
  fit: whole,
  prepare(comm, maxCount, o) {
    const sendBuf = alloc(comm, maxCount, o), recvBuf = alloc(comm, 2 * maxCount, o);
    const { rank, size } = comm;
    return prepared(comm, o, [sendBuf, recvBuf], (count) => {
      const send = head(sendBuf, count), recv = head(recvBuf, 2 * count);
      return {
        buffers: [send, recv],
        fill: () => clearRecvFillSend(send, recv, { op: "sum" }, rank, size),
        run: () => comm.allreduceMax(send, recv, { algorithm: o.algorithm }),
        async wrong() {
          const max = new DTYPE_INFO[o.dtype].array(count);
          await recv.subarray(count).read(max);
          let wrong = await wrongReducedIn(recv.subarray(0, count), { op: "sum" }, size);
          for (let i = 0; i < count; i++) {
            const value = (r: number) => inputValue("sum", r, size, i, o.dtype);
            if (max[i] !== expectedReduction("max", o.dtype, size, value)) wrong++;
          }
          return wrong;
        },
      };
    });
  },
};
`;

const TASK =
  `/** \`deno task allreduce_max [flags]\`: measures allreduceMax over a size sweep. @module */
import { benchmarkMain } from "./bench/benchmark.ts";

Deno.exit(await benchmarkMain("allreduceMax", Deno.args));
`;

/** The six places, each with every edit it makes. */
const PLACES: Record<string, Edit[]> = {
  "its spec": [
    { path: "primitives/collectives/allreduce_max.ts", text: SPEC },
    {
      path: "primitives/collectives/collective_table.ts",
      after: `import { ALLREDUCE, type AllreduceRun } from "./allreduce.ts";\n`,
      text: `import { ALLREDUCE_MAX, type AllreduceMaxRun } from "./allreduce_max.ts";\n`,
    },
    {
      path: "primitives/collectives/collective_table.ts",
      after: "  SCATTER,\n",
      text: "  ALLREDUCE_MAX,\n",
    },
    {
      path: "primitives/collectives/collective_table.ts",
      after: "  scatter: ScatterRun<B>;\n",
      text: "  allreduceMax: AllreduceMaxRun<B>;\n",
    },
    {
      path: "primitives/collectives/collective_table.ts",
      after: "  scatter: SCATTER,\n",
      text: "  allreduceMax: ALLREDUCE_MAX,\n",
    },
  ],
  "its algorithm": [{ path: "primitives/collectives/allreduce_max_compose.ts", text: ALGORITHM }],
  "its registry line": [
    {
      path: "primitives/registry.ts",
      after: `import { ALLREDUCE_SHM_DIRECT } from "./collectives/allreduce_shm_direct.ts";\n`,
      text: `import { ALLREDUCE_MAX_COMPOSE } from "./collectives/allreduce_max_compose.ts";\n`,
    },
    {
      path: "primitives/registry.ts",
      after:
        "  scatter: [SCATTER_BINOMIAL, SCATTER_LINEAR, SCATTER_SHM_DIRECT, SCATTER_GPU_DIRECT],\n",
      text: "  allreduceMax: [ALLREDUCE_MAX_COMPOSE],\n",
    },
  ],
  "a Communicator method": [
    {
      path: "primitives/communicator/communicator.ts",
      after: `import { ALLREDUCE } from "../collectives/allreduce.ts";\n`,
      text: `import { ALLREDUCE_MAX } from "../collectives/allreduce_max.ts";\n`,
    },
    {
      path: "primitives/communicator/communicator.ts",
      after: "      this.#collective(() => ALLREDUCE.check(this.#args, buf, options));\n  }\n",
      text: METHOD,
    },
  ],
  "its bench case": [
    { path: "bench/cases/allreduce_max.ts", text: CASE },
    {
      path: "bench/cases.ts",
      after: `import { ALLREDUCE } from "./cases/allreduce.ts";\n`,
      text: `import { ALLREDUCE_MAX } from "./cases/allreduce_max.ts";\n`,
    },
    {
      path: "bench/cases.ts",
      after: "  scatter: SCATTER,\n",
      text: "  allreduceMax: ALLREDUCE_MAX,\n",
    },
  ],
  "its task": [
    { path: "scripts/allreduce_max.ts", text: TASK },
    {
      path: "deno.json",
      after:
        `"allreduce": "deno run -A --v8-flags=--experimental-wasm-fp16 scripts/allreduce.ts",\n`,
      text:
        `    "allreduce_max": "deno run -A --v8-flags=--experimental-wasm-fp16 scripts/allreduce_max.ts",\n`,
    },
  ],
};

/** What the type checker says when a place is left out (the task's absence the task check says). */
const NAMED: Record<string, RegExp> = {
  "its spec": /Cannot find module '[^']*\/collectives\/allreduce_max\.ts'/,
  "its algorithm": /Cannot find module '[^']*\/allreduce_max_compose\.ts'/,
  "its registry line":
    /Property 'allreduceMax' is missing[\s\S]*?\n\s+at [^\n]*primitives\/registry\.ts/,
  "a Communicator method": /Property 'allreduceMax' does not exist on type 'Communicator'/,
  "its bench case": /Property 'allreduceMax' is missing[\s\S]*?\n\s+at [^\n]*bench\/cases\.ts/,
};

/** Copies the library into a new folder (what its programs import), returns the folder. */
function scratchCopy(): string {
  const to = Deno.makeTempDirSync({ prefix: "dccl-new-collective-" });
  const copy = (from: string, into: string) => {
    for (const entry of Deno.readDirSync(from)) {
      if (LEFT_OUT.has(entry.name)) continue;
      const [src, dst] = [`${from}/${entry.name}`, `${into}/${entry.name}`];
      if (entry.isDirectory) {
        Deno.mkdirSync(dst);
        copy(src, dst);
      } else if (entry.isFile) Deno.copyFileSync(src, dst);
    }
  };
  copy(ROOT.replace(/\/$/, ""), to);
  return to;
}

/** Applies `edits` in `dir`; an anchor the library no longer has fails the test by name. */
function apply(dir: string, edits: Edit[]): void {
  for (const { path, after, text } of edits) {
    const file = `${dir}/${path}`;
    if (after === undefined) {
      Deno.writeTextFileSync(file, text);
      continue;
    }
    const source = Deno.readTextFileSync(file);
    const at = source.indexOf(after);
    assert_(at >= 0, `${path} no longer holds ${JSON.stringify(after)}: update this test's recipe`);
    Deno.writeTextFileSync(
      file,
      source.slice(0, at + after.length) + text + source.slice(at + after.length),
    );
  }
}

/** The scratch copy with every place but `without`. */
function scratchWith(without?: string): string {
  const dir = scratchCopy();
  for (const [place, edits] of Object.entries(PLACES)) if (place !== without) apply(dir, edits);
  return dir;
}

async function deno(dir: string, args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: dir,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, text: decode(out.stdout) + decode(out.stderr) };
}

/**
 * The primitives of the library in `dir` whose task is missing: a `deno task <cli name>` in its
 * deno.json running `scripts/<cli name>.ts`, which must exist.
 */
async function missingTasks(dir: string): Promise<string[]> {
  const listed = await deno(dir, [
    "eval",
    `import { cliName, PRIMITIVE_LIST } from "./bench/cases.ts";
     console.log(JSON.stringify(PRIMITIVE_LIST.map(cliName)));`,
  ]);
  assertEquals(listed.code, 0, listed.text);
  const tasks: Record<string, string> = JSON.parse(Deno.readTextFileSync(`${dir}/deno.json`)).tasks;
  return (JSON.parse(listed.text) as string[]).filter((name) => {
    const script = `scripts/${name}.ts`;
    return !tasks[name]?.endsWith(` ${script}`) || !exists(`${dir}/${script}`);
  });
}

function exists(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

Deno.test("new collective: every primitive of this library has its task", async () => {
  assertEquals(await missingTasks(ROOT), []);
});

Deno.test("new collective: six places make one, which its own task measures exactly", async () => {
  assertEquals(Object.keys(PLACES).length, 6);
  const dir = scratchWith();
  try {
    const checked = await deno(dir, ["check", "scripts/allreduce_max.ts"]);
    assertEquals(checked.code, 0, checked.text);
    assertEquals(await missingTasks(dir), []);
    for (const transport of ["shm", "worker"]) {
      const run = await deno(dir, [
        "task",
        "allreduce_max",
        ...[
          "--transport",
          transport,
          "--procs",
          "3",
          "--max",
          "4K",
          "--iters",
          "3",
          "--warmup",
          "1",
        ],
      ]);
      assertEquals(run.code, 0, run.text);
      assert_(run.text.includes("# dccl allreduce_max: 3 ranks"), run.text);
      assert_(run.text.includes("# Out of bounds values : 0 OK"), run.text);
      // Every size from 1 to 4096 elements ran, picked as auto picks it.
      const rows = run.text.split("\n").filter((l) => /^\s+\d+\s+\d+\s/.test(l));
      assertEquals(rows.length, 13, run.text);
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("new collective: a place left out is named, by the type checker or the task check", async () => {
  for (const place of Object.keys(PLACES)) {
    const dir = scratchWith(place);
    try {
      if (place === "its task") {
        assertEquals(await missingTasks(dir), ["allreduce_max"]);
        continue;
      }
      const checked = await deno(dir, ["check", "scripts/allreduce_max.ts"]);
      assert_(checked.code !== 0, `without ${place} the library still type-checks`);
      assert_(NAMED[place].test(checked.text), `without ${place}:\n${checked.text}`);
    } finally {
      Deno.removeSync(dir, { recursive: true });
    }
  }
});
