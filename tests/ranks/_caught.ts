// What a call threw (or its promise rejected with), as "Name: message", for rank programs that
// return errors for their tests to check.
export async function caught(fn: () => unknown): Promise<string> {
  try {
    await fn();
  } catch (e) {
    return `${(e as Error).name}: ${(e as Error).message}`;
  }
  return "no error";
}
