/**
 * MNIST as the page's server serves it (under `/mnist/`), read by the page or by a tab's rank.
 * @module
 */

import { loadMnist, type Mnist } from "../trainer/mnist.ts";

/** MNIST from the server this page (or worker) came from. */
export function fetchMnist(): Promise<Mnist> {
  return loadMnist({
    where: new URL("/mnist/", location.href).href,
    async read(name) {
      const response = await fetch(new URL(`/mnist/${name}`, location.href));
      return response.ok ? new Uint8Array(await response.arrayBuffer()) : undefined;
    },
  });
}
