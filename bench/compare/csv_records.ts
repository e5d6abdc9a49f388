/**
 * CSV records (RFC 4180: fields quoted with `"`, quotes doubled inside them, a quoted field may
 * span lines; LF or CRLF line ends) from lines as they stream in, each a record of the header's
 * columns. Written here rather than taken from csv-parse, whose Node build needs Node's `Buffer`
 * (a browser has none) and whose browser build rewrites `Object.prototype.__proto__` (Deno
 * refuses): the results readers run in both.
 * @module
 */

/** The fields of one record's text (its quoted fields whole). */
function fields(text: string): string[] {
  if (!text.includes('"')) return text.split(",");
  const out: string[] = [];
  let field = "", quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c !== '"') field += c;
      else if (text[i + 1] === '"') field += c, i++;
      else quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === ",") out.push(field), field = "";
    else field += c;
  }
  out.push(field);
  return out;
}

/** Whether `text` leaves a quoted field open (an odd number of quotes). */
function open(text: string): boolean {
  let quotes = 0;
  for (let i = text.indexOf('"'); i >= 0; i = text.indexOf('"', i + 1)) quotes++;
  return quotes % 2 === 1;
}

/**
 * The records of the CSV whose lines `lines` yields, as objects of the first record's columns;
 * blank lines are skipped. A record with another number of fields than the header is an Error.
 */
export async function* csvRecords(
  lines: AsyncIterable<string>,
): AsyncGenerator<Record<string, string>> {
  let header: string[] | undefined, pending: string | undefined, line = 0;
  for await (const raw of lines) {
    line++;
    const text = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const record = pending === undefined ? text : `${pending}\n${text}`;
    if (open(record)) {
      pending = record;
      continue;
    }
    pending = undefined;
    if (record === "") continue;
    const values = fields(record);
    if (!header) {
      header = values;
      continue;
    }
    if (values.length !== header.length) {
      throw new Error(`line ${line} has ${values.length} fields; the header has ${header.length}`);
    }
    const row: Record<string, string> = {};
    for (let i = 0; i < header.length; i++) row[header[i]] = values[i];
    yield row;
  }
  if (pending !== undefined) throw new Error("a quoted field never ends");
}
