// node:assert re-exported with the names the tests use (JSR's @std/assert is not reachable here).
import assert from "node:assert/strict";

export function assertEquals<T>(actual: T, expected: T, message?: string): void {
  assert.deepStrictEqual(actual, expected, message as string);
}

export function assert_(condition: unknown, message?: string): asserts condition {
  assert.ok(condition, message as string);
}

export async function assertRejects(
  fn: () => Promise<unknown>,
  match: { name?: string; message?: RegExp },
): Promise<Error> {
  try {
    await fn();
  } catch (err) {
    const e = err as Error;
    if (match.name) assert.equal(e.name, match.name, `${e.name}: ${e.message}`);
    if (match.message) assert.match(e.message, match.message);
    return e;
  }
  throw new assert.AssertionError({ message: "expected a rejection" });
}

export function assertThrows(fn: () => unknown, ctor: ErrorConstructor, message?: RegExp): void {
  assert.throws(
    fn,
    (e: unknown) => e instanceof ctor && (!message || message.test((e as Error).message)),
  );
}

/**
 * The group timeout of tests that check a failure comes fast: far above what detection takes on
 * a busy machine (process start-up included), so a run that waited it out stands apart.
 */
export const FAIL_FAST_TIMEOUT_MS = 60_000;

/**
 * Asserts that what began at `start` (performance.now()) ended within half of `timeoutMs`, the
 * group's timeout: it failed fast instead of waiting the timeout out.
 */
export function assertFailedFast(start: number, timeoutMs: number, what: string): void {
  const ms = performance.now() - start;
  assert.ok(
    ms < timeoutMs / 2,
    `${what}: ${ms.toFixed(0)} ms, not within half the ${timeoutMs} ms timeout`,
  );
}
