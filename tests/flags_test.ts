// One parser for every task: a flag's kind says what its value is (numbers as numbers, choices
// as their union, lists as arrays), `given` says what the command line named, and a value its kind
// refuses is a one-line UsageError naming the flag and what it accepts. The type checker holds the
// kinds too (the @ts-expect-error lines fail `deno task check` if a kind stops being typed).
import { assertEquals, assertThrows } from "./_assert.ts";
import { defineFlags, parseFlags, usage, UsageError, wantsHelp } from "../scripts/common/flags.ts";

const SPEC = defineFlags({
  name: { help: "a text", default: "x" },
  file: { help: "a path", path: true },
  quick: { help: "a switch", kind: "switch" },
  count: { help: "an integer", kind: "integer", min: 1, max: 9, default: 2 },
  every: { help: "an integer or epoch", kind: "integer", min: 1, max: 9, words: ["epoch"] },
  rate: { help: "a rate", kind: "number", min: 0, above: true, max: 10, default: 0.5 },
  mode: { help: "a choice", kind: "choice", choices: ["a", "b"], default: "a" },
  kinds: { help: "a list", kind: "list", choices: ["p", "q", "r"], default: ["p"] },
  sizes: { help: "integers", kind: "integers", min: 1, max: 64, aliases: ["-s"] },
});

const refused = (argv: string[], message: RegExp) =>
  assertThrows(() => parseFlags(SPEC, argv), UsageError as ErrorConstructor, message);

Deno.test("flags: each kind parses to its type, defaults typed the same", () => {
  const flags = parseFlags(SPEC, []);
  assertEquals(
    [flags.name, flags.quick, flags.count, flags.every, flags.rate, flags.mode, flags.kinds],
    ["x", false, 2, undefined, 0.5, "a", ["p"]],
  );
  assertEquals([...flags.given], []);
  const given = parseFlags(SPEC, [
    "--quick",
    "--count=9",
    "--every",
    "epoch",
    "--rate",
    "1e-3",
    "--mode",
    "b",
    "--kinds",
    "r, q,r",
    "-s",
    "4,8",
  ]);
  assertEquals(
    [given.quick, given.count, given.every, given.rate, given.mode, given.kinds, given.sizes],
    [true, 9, "epoch", 0.001, "b", ["r", "q"], [4, 8]],
  );
  assertEquals([...given.given].sort(), [
    "count",
    "every",
    "kinds",
    "mode",
    "quick",
    "rate",
    "sizes",
  ]);
  const typed: number = given.count;
  // @ts-expect-error a choice is its union of strings, not a number
  const wrong: number = given.mode;
  // @ts-expect-error a flag without a default may be absent
  const absent: number[] = given.sizes;
  assertEquals([typed, wrong, absent], [9, "b", [4, 8]]);
});

Deno.test("flags: a value its kind refuses names the flag and what it accepts", () => {
  refused(["--count", "10"], /^--count 10 is not accepted: expected an integer from 1 to 9$/);
  refused(["--count", "2.5"], /--count 2.5 is not accepted/);
  refused(["--every", "epochs"], /--every epochs .* from 1 to 9 or epoch$/);
  refused(["--rate", "0"], /--rate 0 is not accepted: expected a number above 0 and at most 10/);
  refused(["--mode", "c"], /^--mode c is not accepted; accepted: a, b$/);
  refused(["--kinds", "p,s"], /^--kinds s is not accepted; accepted: p, q, r$/);
  refused(["--kinds", ","], /^--kinds needs at least one of p, q, r$/);
  refused(["--sizes", "4,0"], /^--sizes 0 is not accepted: expected an integer from 1 to 64$/);
  refused(["--quick=yes"], /--quick/);
  refused(["--cont", "3"], /unknown flag --cont: did you mean --count\?/);
  refused(["-s"], /^-s \(--sizes\) needs a value$/);
});

Deno.test("flags: help is asked before anything is parsed, and shows typed defaults", () => {
  assertEquals([wantsHelp(["--count", "99", "-h"]), wantsHelp(["--", "-h"])], [true, false]);
  const text = usage("demo", "A demo.", SPEC);
  for (
    const line of ["--count X", "(default 2)", "(default 0.5)", "(default p)", "-s, --sizes X"]
  ) {
    assertEquals(text.includes(line), true, line);
  }
  assertEquals(text.includes("--quick X"), false);
});

Deno.test("flags: a spec may not take the names every task keeps", () => {
  assertThrows(() => defineFlags({ given: { help: "taken" } }), Error, /--given/);
});
