/** Placeholder until the WGSL model lands. @module */
import type { Communicator } from "../primitives/communicator.ts";
import type { Engine } from "./engine.ts";
import type { MlpLayout } from "./model.ts";
export class GpuEngine {
  static create(_c: Communicator, _l: MlpLayout, _o: unknown): Promise<Engine> {
    throw new Error("not yet");
  }
}
