// A WebSocket client written by hand over TCP, for tests that must send what a real client never
// would: unmasked frames, reserved opcodes, oversized or malformed first messages.

/**
 * Opens a TCP connection and sends an upgrade request for `path` with `headers` (a `Host` among
 * them replaces this one's); returns the HTTP status.
 */
export async function rawUpgrade(
  port: number,
  headers: Record<string, string>,
  path = "/",
): Promise<{ status: number; conn: Deno.TcpConn }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const lines = [
    `GET ${path} HTTP/1.1`,
    ...("Host" in headers ? [] : [`Host: 127.0.0.1:${port}`]),
    "Upgrade: websocket",
    "Connection: Upgrade",
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version: 13",
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  await conn.write(new TextEncoder().encode(lines.join("\r\n") + "\r\n\r\n"));
  let text = "";
  const buf = new Uint8Array(4096);
  while (!text.includes("\r\n\r\n")) {
    const n = await conn.read(buf);
    if (n === null) break;
    text += new TextDecoder().decode(buf.subarray(0, n));
  }
  return { status: Number(text.match(/^HTTP\/1\.1 (\d+)/)?.[1] ?? 0), conn };
}

/** One frame: FIN set, `opcode`, `payload`, masked (as clients must) unless told otherwise. */
export function frame(opcode: number, payload: Uint8Array, masked = true): Uint8Array {
  const n = payload.byteLength;
  const lengthBytes = n < 126 ? 0 : n < 65536 ? 2 : 8;
  const out = new Uint8Array(2 + lengthBytes + (masked ? 4 : 0) + n);
  const view = new DataView(out.buffer);
  out[0] = 0x80 | opcode;
  out[1] = (masked ? 0x80 : 0) | (n < 126 ? n : n < 65536 ? 126 : 127);
  if (lengthBytes === 2) view.setUint16(2, n);
  if (lengthBytes === 8) view.setBigUint64(2, BigInt(n));
  let at = 2 + lengthBytes;
  const mask = [0x12, 0x34, 0x56, 0x78];
  if (masked) out.set(mask, at), at += 4;
  for (let i = 0; i < n; i++) out[at + i] = payload[i] ^ (masked ? mask[i % 4] : 0);
  return out;
}

/** Whether the peer closes `conn` within `ms` (reading and dropping whatever it sends). */
export async function closedWithin(conn: Deno.TcpConn, ms: number): Promise<boolean> {
  const buf = new Uint8Array(4096);
  const timer = setTimeout(() => conn.close(), ms);
  try {
    while ((await conn.read(buf)) !== null) { /* a close frame, perhaps */ }
    return true;
  } catch {
    return false; // closed by the timer
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* already closed */ }
  }
}
