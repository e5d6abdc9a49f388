/** CSV text (RFC 4180, a line per row) of `rows`: csv-stringify's synchronous writer. */
export function stringify(rows: readonly (readonly unknown[])[]): string;
