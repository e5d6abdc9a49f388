/**
 * The short flags nccl-tests and OSU micro-benchmark users type, written as this project's own:
 * `-o sum -d float -t 2 -g 1 -c 1` (nccl-tests) and `-m 1:1024 -x 10 -i 100 -f -T mpi_float`
 * (OSU). A flag that means nothing here is refused in one line naming what it means there. Where
 * the two tools spell one letter differently, the issue's choice is documented in docs/cli.md
 * (`-m` and `-i` are OSU's; `-d`, `-T` and `-f N` nccl-tests', `-f` alone OSU's).
 * @module
 */

import { DTYPES } from "../../internal.ts";
import { UsageError } from "./flags.ts";

/** nccl-tests' type names (`-d`) and OSU's (`-T`), as this project's dtypes. */
const NCCL_TYPES: Record<string, string> = {
  float: "f32",
  half: "f16",
  bfloat16: "bf16",
  double: "f64",
  int32: "i32",
  int: "i32",
};
const OSU_TYPES: Record<string, string> = { mpi_float: "f32", mpi_int: "i32", mpi_double: "f64" };

/** One habit: what `-x value` becomes here (flags of this project), or a UsageError. */
type Habit = (value: string) => string[];

const refuse = (flag: string, meaning: string, why: string): never => {
  throw new UsageError(`${flag} (${meaning}) is not accepted: ${why}`);
};

/** A type name of nccl-tests, OSU or this project, as a dtype. */
function dtypeOf(flag: string, value: string, names: Record<string, string>): string[] {
  const dtype = names[value.toLowerCase()] ?? DTYPES.find((d) => d === value);
  if (dtype) return ["--dtype", dtype];
  return refuse(
    `${flag} ${value}`,
    flag === "-T" ? "OSU: the MPI datatype" : "nccl-tests: the element type",
    `accepted: ${Object.keys(names).join(", ")} (or ${DTYPES.join(", ")})`,
  );
}

/** Flags that take a value, by their short name. */
const WITH_VALUE: Record<string, Habit> = {
  // nccl-tests
  "-o": (v) =>
    v === "all"
      ? refuse("-o all", "nccl-tests: every op in turn", "give one op: sum, prod, max, min, avg")
      : ["--op", v],
  "-d": (v) =>
    ["cuda", "rocm", "openacc", "sycl"].includes(v)
      ? refuse(`-d ${v}`, "OSU: buffers on an accelerator", "give --memory gpu")
      : v === "all"
      ? refuse("-d all", "nccl-tests: every type in turn", "give one type")
      : dtypeOf("-d", v, NCCL_TYPES),
  "-c": (v) =>
    v === "1" ? [] : refuse(
      `-c ${v}`,
      "nccl-tests: whether to check results",
      "every size is checked against exact values (-c 1), outside the timed loop",
    ),
  "-t": (v) => ["--threads", v],
  "-g": (v) =>
    v === "1" ? [] : refuse(
      `-g ${v}`,
      "nccl-tests: devices per thread",
      "each rank drives one device at most; give --procs or -t for more ranks",
    ),
  "-a": (v) =>
    v === "1" ? [] : refuse(
      `-a ${v}`,
      "nccl-tests: report rank 0's, the minimum or the maximum time",
      "the table's time is the mean over ranks (-a 1); the CSV's min_us and max_us are the " +
        "fastest and slowest rank's",
    ),
  "-z": (v) =>
    v === "0" ? [] : refuse(
      `-z ${v}`,
      "nccl-tests: wait for each collective before the next",
      "time each op alone with --timing per-iter",
    ),
  "-r": (v) => ["--root", v],
  // OSU
  "-m": (v) => {
    const m = v.match(/^(\d*):?(\d*)$/);
    if (!m || (!m[1] && !m[2])) {
      return refuse(`-m ${v}`, "OSU: the message sizes", "expected MIN:MAX or MAX, in bytes");
    }
    const [min, max] = v.includes(":") ? [m[1], m[2]] : ["", m[1]];
    return [...(min ? ["--min", `${min}B`] : []), ...(max ? ["--max", `${max}B`] : [])];
  },
  "-x": (v) => ["--warmup", v],
  "-T": (v) => dtypeOf("-T", v, OSU_TYPES),
};

/** Flags of either tool that mean nothing here, and what they mean there. */
const MEANINGLESS: Record<string, string> = {
  "-p": "nccl-tests: parallel initialisation",
  "-N": "nccl-tests: cycles of the whole run",
  "-G": "nccl-tests: CUDA graph launches",
  "-C": "nccl-tests: report CPU time",
  "-R": "nccl-tests: register buffers",
  "-y": "nccl-tests: the stream to run on",
  "-u": "nccl-tests: the CUDA memory kind",
  "-M": "OSU: memory limit per process",
  "-I": "OSU: validation iterations",
};

/**
 * `argv` with nccl-tests' and OSU's short flags written as this project's, or a UsageError for
 * one that means nothing here. Values may be joined (`-d float`, `-dfloat`); `-f` followed by a
 * number is nccl-tests' step factor, alone it is OSU's full output. Everything after `--` is kept.
 */
export function translateHabits(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") return [...out, ...argv.slice(i)];
    const flag = arg.slice(0, 2), joined = arg.length > 2 ? arg.slice(2).replace(/^=/, "") : "";
    if (arg.startsWith("--") || !arg.startsWith("-")) {
      out.push(arg);
    } else if (flag === "-f") {
      const value = joined || (/^\d+(\.\d+)?$/.test(argv[i + 1] ?? "") ? argv[++i] : "");
      out.push(...(value ? ["--step-factor", value] : ["--full"]));
    } else if (flag in WITH_VALUE) {
      const value = joined || argv[++i];
      if (value === undefined) throw new UsageError(`${flag} needs a value`);
      out.push(...WITH_VALUE[flag](value));
    } else if (flag in MEANINGLESS) {
      refuse(flag, MEANINGLESS[flag], "it means nothing here");
    } else {
      out.push(arg);
    }
  }
  return out;
}
