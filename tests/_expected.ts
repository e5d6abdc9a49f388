// Process ranks' lines that a test provokes (the errors it makes them report), marked so that
// every unmarked error line in the suite's log is a real one.

/** An `onLine` for launchGroup that prints a rank's line marked as expected in this test. */
export const expectedLine = (rank: number, _: string, line: string): void =>
  console.error(`[rank ${rank}, expected in this test] ${line}`);
