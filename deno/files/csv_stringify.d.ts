/**
 * The types of csv_stringify.ts, whose module is csv-stringify's own JavaScript.
 * @module
 */

/** CSV text (RFC 4180, a line per row) of `rows`: csv-stringify's synchronous writer. */
export function stringify(rows: readonly (readonly unknown[])[]): string;
