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
