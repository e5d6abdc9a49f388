/**
 * A simulated cluster on this machine: hosts are Linux network namespaces on one bridge, each
 * host's link shaped with `tc` (tbf), and ranks start in each host's namespace through the env
 * launcher, as mpirun, srun or torchrun would start them on real hosts. It needs root and
 * `ip netns`. Everything it makes is named after the cluster (`<name>br`, `<name>h<i>`, lines in
 * /etc/hosts marked with the name), so `clusterDown` finds and removes all of it, whatever state
 * a failed or interrupted run left.
 * @module
 */

/** A cluster's shape. */
export interface ClusterOptions {
  /** Prefix of every name it makes (at most 8 letters and digits). @default {"dccl"} */
  name?: string;
  /** Hosts, 1 … 250. */
  hosts: number;
  /** Each host's link rate each way, as tc writes it (`5gbit`, `500mbit`); none: unshaped. */
  rate?: string;
  /** The first three octets of the hosts' addresses. @default {"10.212.0"} */
  subnet?: string;
  /** Stops making it (and removes what was made) when it aborts. */
  signal?: AbortSignal;
}

/** One host of a cluster. */
export interface ClusterHost {
  /** The namespace (and /etc/hosts name). */
  name: string;
  address: string;
}

/** A failure to make, use or remove a cluster, in one line. */
export class ClusterError extends Error {
  override name = "ClusterError";
}

const NAME = /^[a-z][a-z0-9]{0,7}$/;
const HOSTS_MARK = "# dccl cluster";
/** Where a cluster's lock lives: a root-owned folder, so no other user can plant it. */
const LOCK_DIR = "/run";

/** A cluster name held by this process (see {@linkcode holdCluster}). */
export interface ClusterHold {
  /** Lets the name go. */
  release(): void;
}

/**
 * Holds cluster `name` for `what` (an action, for the message others get): one process at a time
 * makes, runs on or removes a cluster of one name. The lock is a file made exclusively in /run
 * holding this process's id; one whose process is gone is taken over. A name held by a running
 * process is a ClusterError naming it.
 */
export function holdCluster(name: string, what: string): ClusterHold {
  const path = `${LOCK_DIR}/dccl-cluster-${name}.lock`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      Deno.writeTextFileSync(path, `${Deno.pid} ${what}\n`, { createNew: true, mode: 0o644 });
      return {
        release: () => {
          try {
            Deno.removeSync(path);
          } catch { /* already gone */ }
        },
      };
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) {
        throw new ClusterError(`cannot lock cluster ${name} (${path}): ${(e as Error).message}`);
      }
    }
    const [pid, ...holder] = readLock(path).split(" ");
    if (pid && alive(Number(pid))) {
      throw new ClusterError(
        `cluster ${name} is in use by process ${pid} (${holder.join(" ") || "cluster"}): ` +
          `wait for it to end, or give another --name`,
      );
    }
    try {
      Deno.removeSync(path); // its process is gone
    } catch { /* another process took it over first */ }
  }
  throw new ClusterError(`cannot lock cluster ${name}: ${path} keeps coming back`);
}

function readLock(path: string): string {
  try {
    return Deno.readTextFileSync(path).trim();
  } catch {
    return "";
  }
}

function alive(pid: number): boolean {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}

/** Why clusters cannot be made here (one line), or undefined when they can. */
export async function clusterProblem(): Promise<string | undefined> {
  if (Deno.build.os !== "linux") return "a simulated cluster needs Linux network namespaces";
  if (Deno.uid() !== 0) return "a simulated cluster needs root (it makes network namespaces)";
  const probe = `dcclp${Deno.pid % 100000}`;
  try {
    await ip("netns", "add", probe);
  } catch (e) {
    return `cannot make network namespaces here (${(e as Error).message})`;
  } finally {
    await ip("netns", "del", probe).catch(() => {});
  }
  return undefined;
}

/** The hosts of cluster `name` that exist now, in order. */
export async function clusterHosts(name = "dccl", subnet = "10.212.0"): Promise<ClusterHost[]> {
  const listed = await run("ip", "netns", "list");
  const hosts = listed.split("\n").map((l) => l.split(" ")[0])
    .filter((n) => new RegExp(`^${name}h\\d+$`).test(n))
    .map((n) => Number(n.slice(name.length + 1)))
    .sort((a, b) => a - b);
  return hosts.map((i) => ({ name: hostName(name, i), address: `${subnet}.${i + 1}` }));
}

/**
 * Makes the cluster: a bridge, and per host a namespace with a veth pair on the bridge, its
 * address, its link shaped both ways, and a line in /etc/hosts. A cluster of that name that
 * exists already is an error; anything made before a failure is removed again.
 */
export async function clusterUp(options: ClusterOptions): Promise<ClusterHost[]> {
  const name = options.name ?? "dccl", subnet = options.subnet ?? "10.212.0";
  if (!NAME.test(name)) {
    throw new ClusterError(`cluster name ${name} is not accepted: 1 to 8 letters and digits`);
  }
  if (!Number.isInteger(options.hosts) || options.hosts < 1 || options.hosts > 250) {
    throw new ClusterError(`${options.hosts} hosts is not accepted: 1 to 250`);
  }
  if ((await clusterHosts(name, subnet)).length > 0) {
    throw new ClusterError(`cluster ${name} is up already: take it down first`);
  }
  const bridge = `${name}br`;
  const hosts: ClusterHost[] = [];
  try {
    await ip("link", "add", bridge, "type", "bridge");
    await ip("link", "set", bridge, "up");
    for (let i = 0; i < options.hosts; i++) {
      options.signal?.throwIfAborted();
      const host = { name: hostName(name, i), address: `${subnet}.${i + 1}` };
      const [inside, outside] = [`${host.name}e`, `${host.name}b`];
      await ip("netns", "add", host.name);
      hosts.push(host);
      await ip("link", "add", inside, "type", "veth", "peer", "name", outside);
      await ip("link", "set", inside, "netns", host.name);
      await ip("link", "set", outside, "master", bridge);
      await ip("link", "set", outside, "up");
      await ip("-n", host.name, "addr", "add", `${host.address}/24`, "dev", inside);
      await ip("-n", host.name, "link", "set", inside, "up");
      await ip("-n", host.name, "link", "set", "lo", "up");
      if (options.rate && options.rate !== "none") {
        // Both ways: what leaves the host (its veth end) and what reaches it (the bridge's end).
        const tbf = ["root", "tbf", "rate", options.rate, "burst", "512kb", "latency", "10ms"];
        await run("ip", "netns", "exec", host.name, "tc", "qdisc", "add", "dev", inside, ...tbf);
        await run("tc", "qdisc", "add", "dev", outside, ...tbf);
      }
    }
    const lines = hosts.map((h) => `${h.address} ${h.name} ${HOSTS_MARK} ${name}`);
    Deno.writeTextFileSync("/etc/hosts", lines.join("\n") + "\n", { append: true });
    return hosts;
  } catch (e) {
    await clusterDown(name);
    throw e instanceof Error && e.name === "Error" ? new ClusterError(e.message) : e;
  }
}

/** Removes everything cluster `name` made; a cluster that is not there is no error. */
export async function clusterDown(name = "dccl"): Promise<void> {
  const listed = await run("ip", "netns", "list").catch(() => "");
  for (const line of listed.split("\n")) {
    const ns = line.split(" ")[0];
    if (new RegExp(`^${name}h\\d+$`).test(ns)) {
      // Processes left in the namespace would keep its links; none should be there.
      await run("ip", "netns", "pids", ns).then((pids) => {
        for (const pid of pids.split("\n").filter(Boolean)) {
          try {
            Deno.kill(Number(pid), "SIGKILL");
          } catch { /* already gone */ }
        }
      }).catch(() => {});
      await ip("netns", "del", ns).catch(() => {});
      await ip("link", "del", `${ns}b`).catch(() => {});
    }
  }
  await ip("link", "del", `${name}br`).catch(() => {});
  try {
    const text = Deno.readTextFileSync("/etc/hosts");
    const kept = text.split("\n").filter((l) => !l.endsWith(`${HOSTS_MARK} ${name}`));
    if (kept.length !== text.split("\n").length) {
      Deno.writeTextFileSync("/etc/hosts", kept.join("\n"));
    }
  } catch { /* no /etc/hosts to clean */ }
}

/** Whether anything of cluster `name` is left (namespaces, links, /etc/hosts lines). */
export async function clusterLeftovers(name = "dccl"): Promise<string[]> {
  const left: string[] = [];
  const listed = await run("ip", "netns", "list").catch(() => "");
  for (const line of listed.split("\n")) {
    if (new RegExp(`^${name}h\\d+`).test(line)) left.push(`namespace ${line.split(" ")[0]}`);
  }
  const links = await run("ip", "-o", "link", "show").catch(() => "");
  for (const line of links.split("\n")) {
    const link = line.split(": ")[1]?.split("@")[0];
    if (link === `${name}br` || new RegExp(`^${name}h\\d+[eb]$`).test(link ?? "")) {
      left.push(`link ${link}`);
    }
  }
  const hostsFile = Deno.readTextFileSync("/etc/hosts");
  if (hostsFile.includes(`${HOSTS_MARK} ${name}`)) left.push("lines in /etc/hosts");
  return left;
}

function hostName(name: string, i: number): string {
  return `${name}h${i}`;
}

function ip(...args: string[]): Promise<string> {
  return run("ip", ...args);
}

/** Runs a command; its stdout, or a ClusterError with its stderr's first line. */
async function run(command: string, ...args: string[]): Promise<string> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(command, { args, stdout: "piped", stderr: "piped" }).output();
  } catch (e) {
    throw new ClusterError(`cannot run ${command}: ${(e as Error).message}`);
  }
  if (!out.success) {
    const why = new TextDecoder().decode(out.stderr).trim().split("\n")[0];
    throw new ClusterError(`${command} ${args.join(" ")}: ${why || `exit ${out.code}`}`);
  }
  return new TextDecoder().decode(out.stdout);
}
