// A worker that writes its thread's id where its launcher watches (as a GPU rank does before it
// opens a device), then idles until terminated: gpu_test's teardown wait.
import "../../deno/platform/install.ts";
import { GpuThreads } from "../../primitives/launch/gpu_teardown.ts";

const scope = self as unknown as {
  onmessage: (e: MessageEvent<Int32Array>) => void;
  postMessage(message: string): void;
};

scope.onmessage = ({ data }) => {
  GpuThreads.record(data, 0);
  scope.postMessage("recorded");
};
