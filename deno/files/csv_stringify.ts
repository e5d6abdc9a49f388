/**
 * csv-stringify's synchronous writer, typed by `csv_stringify.d.ts` as dccl calls it: the
 * package's own declarations reference Node's types, which `deno doc` cannot resolve (a warning
 * for every Node module in `deno task check`).
 * @module
 */

// @ts-types="./csv_stringify.d.ts"
export { stringify } from "csv-stringify/sync";
