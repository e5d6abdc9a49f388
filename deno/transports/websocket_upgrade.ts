/**
 * The checks every `websocket` upgrade passes, at the hub and at each process rank, before a
 * WebSocket opens: the Host is this server's own name (no DNS rebinding), the Origin is absent (a
 * Deno rank) or the join page's, the run's token is presented (in the subprotocol, since a page
 * cannot set headers; compared in constant time), and a claimed rank is a plain decimal one.
 * @module
 */

import { parseRank, tokenDigest, tokenMatches } from "./rendezvous.ts";

/** What an upgrade request passed: the rank it claims, if any. */
export interface Upgrade {
  /** The subprotocol it offered, which the answer echoes. */
  protocol: string;
  rank?: number;
}

/** What the checks need: who this server is and whom it accepts. */
export interface UpgradeRules {
  /** `host:port` values the Host header may have. */
  hosts: ReadonlySet<string>;
  /** The join page's origins (a tab's), if tabs may connect. */
  origins: readonly string[];
  /** The run's token's digest. */
  digest: Uint8Array;
  /** Ranks in the group. */
  size: number;
}

/** The `Host` values that name a server on `hostname`:`port`. */
export function hostNames(hostname: string, port: number): Set<string> {
  const names = hostname === "127.0.0.1" ? ["127.0.0.1", "localhost"] : [hostname];
  return new Set(names.map((h) => `${h.includes(":") ? `[${h}]` : h}:${port}`));
}

/** The rules of a server for a group of `size` with `token`. */
export function upgradeRules(
  hosts: ReadonlySet<string>,
  token: string,
  size: number,
  origins: readonly string[] = [],
): UpgradeRules {
  return { hosts, origins, digest: tokenDigest(token), size };
}

/** The upgrade `request` makes, or the refusal to answer it with. */
export function checkUpgrade(request: Request, rules: UpgradeRules): Upgrade | Response {
  if (!rules.hosts.has((request.headers.get("host") ?? "").toLowerCase())) {
    return refuse(403, `Host is not accepted: expected ${[...rules.hosts].join(" or ")}`);
  }
  if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
    return refuse(426, "only WebSocket upgrades are answered here");
  }
  const origin = request.headers.get("origin");
  if (origin !== null && !rules.origins.includes(origin)) {
    return refuse(403, "this Origin is not the group's join page");
  }
  const protocol = request.headers.get("sec-websocket-protocol") ?? "";
  const [dccl, hex, claim, ...rest] = protocol.split(".");
  if (dccl !== "dccl" || rest.length > 0 || !tokenMatches(fromHex(hex), rules.digest)) {
    return refuse(401, "the run's token was not presented");
  }
  if (claim === undefined) return { protocol };
  const rank = parseRank(claim, rules.size);
  return rank === undefined ? refuse(400, "not a rank of this group") : { protocol, rank };
}

/** A plain-text refusal. */
export function refuse(status: number, text: string): Response {
  return new Response(text + "\n", { status, headers: { "content-type": "text/plain" } });
}

function fromHex(hex: string | undefined): string | undefined {
  if (hex === undefined || !/^([0-9a-f]{2})*$/.test(hex)) return undefined;
  const bytes = new Uint8Array(hex.length / 2).map((_, i) =>
    parseInt(hex.slice(2 * i, 2 * i + 2), 16)
  );
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}
