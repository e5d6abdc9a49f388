// Enough of PNG to tell a blank screenshot from a drawn one: the distinct byte values of the
// image's (filtered) scanlines. A blank page compresses to a handful; text and charts to many.

/** Distinct byte values in the image data of the PNG `bytes`. */
export async function distinctBytes(bytes: Uint8Array): Promise<number> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const chunks: Uint8Array[] = [];
  for (let at = 8; at < bytes.length;) {
    const length = view.getUint32(at);
    const type = new TextDecoder().decode(bytes.subarray(at + 4, at + 8));
    if (type === "IDAT") chunks.push(bytes.subarray(at + 8, at + 8 + length));
    at += 12 + length;
  }
  const zlib = new Blob(chunks.map((c) => new Uint8Array(c))).stream()
    .pipeThrough(new DecompressionStream("deflate"));
  const data = new Uint8Array(await new Response(zlib).arrayBuffer());
  return new Set(data).size;
}
