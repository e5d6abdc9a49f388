/**
 * MNIST in IDX format: the four files, raw or gzipped, from wherever the runtime reads them (a
 * folder on Deno, deno/files/mnist_folder.ts; a server on the web). Images stay bytes (0–255),
 * in a shared WebAssembly memory that worker ranks share and kernels read directly; batches
 * scale them to [0, 1] as they are gathered.
 * @module
 */

/** One split: `count` images of `pixels` bytes each, and their labels. */
export interface ImageSet {
  /** The images, row after row, in `memory`. */
  images: Uint8Array;
  /** The labels, one byte each. */
  labels: Uint8Array;
  /** Images in the split. */
  count: number;
  /** Pixels per image. */
  pixels: number;
  /** The shared memory `images` lives in. */
  memory: WebAssembly.Memory;
}

/** The training and test splits, and where they came from. */
export interface Mnist {
  /** The training split. */
  train: ImageSet;
  /** The test split. */
  test: ImageSet;
  /** Where the files were read from (a folder, an address). */
  dir: string;
}

/** Where the four files come from. */
export interface MnistSource {
  /** Where they are, for messages. */
  where: string;
  /** The bytes of file `name`, or `undefined` when there is none. */
  read(name: string): Promise<Uint8Array | undefined>;
}

/** The four file names, without `.gz`. */
export const MNIST_FILES = {
  trainImages: "train-images-idx3-ubyte",
  trainLabels: "train-labels-idx1-ubyte",
  testImages: "t10k-images-idx3-ubyte",
  testLabels: "t10k-labels-idx1-ubyte",
} as const;

/** Classes of MNIST (digits). */
export const MNIST_CLASSES = 10;

/** A data folder that cannot be used: what is wrong with it, in one line. */
export class DataError extends Error {
  /** Always `DataError`. */
  override name = "DataError";
}

/** Reads the four files from `source` (each `name` or `name.gz`). */
export async function loadMnist(source: MnistSource): Promise<Mnist> {
  const dir = source.where;
  const read = async (name: string, dims: number) => {
    const bytes = await readMaybeGzipped(source, name);
    return parseIdx(bytes, name, dims);
  };
  // Read at once, but a problem is reported for the first file in this order, whichever read
  // failed first (the same folder always gets the same message).
  const settled = await Promise.allSettled([
    read(MNIST_FILES.trainImages, 3),
    read(MNIST_FILES.trainLabels, 1),
    read(MNIST_FILES.testImages, 3),
    read(MNIST_FILES.testLabels, 1),
  ]);
  const [trainImages, trainLabels, testImages, testLabels] = settled.map((r) => {
    if (r.status === "rejected") throw r.reason;
    return r.value;
  });
  if (trainImages.dims[0] === 0) throw new DataError(`its training set has no images`);
  const [train, test] = [trainImages, testImages].map((i) => i.dims.slice(1).join("×"));
  if (train !== test) {
    throw new DataError(`its training images are ${train} pixels but its test images ${test}`);
  }
  // Both splits' images in one shared memory; labels in shared buffers.
  const bytes = trainImages.data.length + testImages.data.length;
  const pages = Math.max(1, Math.ceil(bytes / 65536));
  const memory = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true });
  const place = (idx: Idx, offset: number) => {
    const view = new Uint8Array(memory.buffer, offset, idx.data.length);
    view.set(idx.data);
    return { ...idx, data: view };
  };
  const shared = (idx: Idx) => {
    const view = new Uint8Array(new SharedArrayBuffer(idx.data.length));
    view.set(idx.data);
    return { ...idx, data: view };
  };
  return {
    train: imageSet(place(trainImages, 0), shared(trainLabels), "train", memory),
    test: imageSet(place(testImages, trainImages.data.length), shared(testLabels), "t10k", memory),
    dir,
  };
}

interface Idx {
  dims: number[];
  data: Uint8Array;
}

function imageSet(
  images: Idx,
  labels: Idx,
  split: string,
  memory: WebAssembly.Memory,
): ImageSet {
  const count = images.dims[0];
  if (labels.dims[0] !== count) {
    throw new DataError(
      `${split} has ${count} images but ${labels.dims[0]} labels: the files do not belong together`,
    );
  }
  const bad = labels.data.findIndex((l) => l >= MNIST_CLASSES);
  if (bad >= 0) {
    throw new DataError(
      `${split} label ${bad} is ${labels.data[bad]}: MNIST labels are 0 to ${MNIST_CLASSES - 1}`,
    );
  }
  const pixels = images.dims[1] * images.dims[2];
  return { images: images.data, labels: labels.data, count, pixels, memory };
}

async function readMaybeGzipped(source: MnistSource, name: string): Promise<Uint8Array> {
  const raw = await source.read(name);
  if (raw) return raw;
  const gzipped = await source.read(`${name}.gz`);
  if (!gzipped) {
    throw new DataError(`${source.where} has neither ${name} nor ${name}.gz (MNIST's IDX files)`);
  }
  try {
    // A copy: a Blob takes bytes of a plain ArrayBuffer.
    const stream = new Blob([new Uint8Array(gzipped)]).stream()
      .pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  } catch (e) {
    const path = `${source.where.replace(/\/$/, "")}/${name}.gz`;
    throw new DataError(`${path} is not a readable gzip file: ${(e as Error).message}`);
  }
}

/** Parses an IDX file of unsigned bytes with `dims` dimensions; checks its length. */
export function parseIdx(bytes: Uint8Array, name: string, dims: number): Idx {
  const head = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // Magic: two zero bytes, type 0x08 (unsigned byte), then the number of dimensions.
  if (bytes.length < 4 + 4 * dims || head.getUint16(0) !== 0 || bytes[2] !== 0x08) {
    throw new DataError(`${name} is not an IDX file of unsigned bytes`);
  }
  if (bytes[3] !== dims) {
    throw new DataError(`${name} has ${bytes[3]} dimensions; expected ${dims}`);
  }
  const shape = Array.from({ length: dims }, (_, i) => head.getUint32(4 + 4 * i));
  const start = 4 + 4 * dims;
  const length = shape.reduce((a, b) => a * b, 1);
  if (bytes.length !== start + length) {
    throw new DataError(
      `${name} is ${bytes.length} bytes; its header (${shape.join(" × ")}) says ${start + length}`,
    );
  }
  return { dims: shape, data: bytes.subarray(start) };
}
