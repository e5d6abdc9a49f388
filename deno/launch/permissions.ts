/**
 * The permissions a group's ranks need, checked before any rank starts: without them Deno stops
 * a worker or a subprocess part-way with a stack, and the others wait; here the caller gets one
 * line naming every flag to add.
 * @module
 */

import { fileURLToPath } from "node:url";

/** Deno refused what a launcher needs: one line naming the flags to add. */
export class PermissionError extends Error {
  override name = "PermissionError";
  constructor(message: string) {
    super(message);
    // The line says all there is to say: no stack of dccl's frames under it.
    this.stack = `${this.name}: ${message}`;
  }
}

/** What each way of starting ranks needs: `[flag, why, descriptor]`. */
function needs(
  launch: "workers" | "processes" | "thread",
  module: URL,
): [string, string, Deno.PermissionDescriptor][] {
  const read: [string, string, Deno.PermissionDescriptor] = [
    "--allow-read",
    "the ranks load their module and dccl's",
    { name: "read", path: module.protocol === "file:" ? fileURLToPath(module) : undefined },
  ];
  if (launch !== "processes") return [read];
  return [
    read,
    ["--allow-run", "ranks are Deno processes", { name: "run", command: Deno.execPath() }],
    ["--allow-write", "the ranks' arguments go through a temporary file", { name: "write" }],
    ["--allow-net", "ranks listen and connect", { name: "net" }],
    ["--allow-env", "ranks find each other through their environment", { name: "env" }],
  ];
}

/** Throws a {@linkcode PermissionError} unless this process may start `launch` ranks of `module`. */
export function requirePermissions(
  launch: "workers" | "processes" | "thread",
  transport: string,
  module: URL,
): void {
  const missing = needs(launch, module).filter(([, , d]) =>
    Deno.permissions.querySync(d).state !== "granted"
  );
  if (missing.length === 0) return;
  throw new PermissionError(
    `ranks over ${transport} need ${missing.map(([flag]) => flag).join(" ")} (${
      missing.map(([, why]) => why).join("; ")
    }): run again with ${missing.length > 1 ? "them" : "it"}, or -A`,
  );
}
