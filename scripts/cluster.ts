/**
 * `deno task cluster up|down|run`: a simulated cluster on this machine (scripts/cluster/netns.ts) — hosts
 * as network namespaces with shaped links — and dccl tasks run on it through the env launcher.
 *
 *     deno task cluster up --hosts 4 --rate 5gbit
 *     deno task cluster run -- allreduce --transport tcp --max 4M
 *     deno task cluster down
 *
 * `run` with `--hosts` and no cluster up makes one for the run and removes it after, whatever
 * happens. Needs root and `ip netns`.
 * @module
 */

import {
  clusterDown,
  ClusterError,
  clusterHosts,
  clusterProblem,
  clusterUp,
  holdCluster,
} from "./cluster/netns.ts";
import { firstFailure, howItEnded, runOnCluster } from "./cluster/cluster_run.ts";
import { defineFlags, UsageError } from "./common/flags.ts";
import { type Task, taskMain } from "./common/task.ts";

const ACTIONS = ["up", "down", "run"] as const;

const FLAGS = defineFlags({
  hosts: {
    help: "hosts (network namespaces), 1 to 250; run: makes a cluster for the run",
    kind: "integer",
    min: 1,
    max: 250,
  },
  rate: { help: "each host's link rate each way, as tc writes it (5gbit, 500mbit), or none" },
  name: { help: "prefix of the namespaces, links and /etc/hosts lines it makes", default: "dccl" },
  "procs-per-host": {
    help: "run: processes per host (a flat group of hosts × procs)",
    kind: "integer",
    min: 1,
    max: 64,
    default: 1,
  },
});

interface ClusterPlan {
  action: typeof ACTIONS[number];
  name: string;
  hosts?: number;
  rate?: string;
  procsPerHost: number;
  /** run: the task's script and its arguments. */
  script?: string;
  args: string[];
}

/** The script of `deno task <task>` (deno.json's tasks), or a UsageError naming the tasks. */
function taskScript(task: string): string {
  const config = JSON.parse(Deno.readTextFileSync(new URL("../deno.json", import.meta.url)));
  const tasks = Object.entries(config.tasks as Record<string, string>)
    .filter(([, command]) => /^deno run -A (--v8-flags=\S+ )?scripts\/[a-z_]+\.ts$/.test(command));
  const found = tasks.find(([name]) => name === task);
  if (!found || task === "cluster") {
    const names = tasks.map(([n]) => n).filter((n) => n !== "cluster");
    throw new UsageError(`run -- ${task} is not accepted: name a task (${names.join(", ")})`);
  }
  return new URL(`../${found[1].split(" ").at(-1)}`, import.meta.url).pathname;
}

const CLUSTER: Task<ClusterPlan, typeof FLAGS> = {
  name: "cluster",
  synopsis: `cluster <${ACTIONS.join("|")}> [-- task flags]`,
  summary: "Hosts as network namespaces on this machine, and dccl tasks run across them.",
  flags: FLAGS,
  positionals: true,
  async plan(values, positionals) {
    const [given, ...args] = positionals;
    if (given === undefined) throw new UsageError(`name an action: ${ACTIONS.join(", ")}`);
    const action = ACTIONS.find((a) => a === given);
    if (!action) {
      throw new UsageError(`${given} is not accepted: the actions are ${ACTIONS.join(", ")}`);
    }
    const { name, hosts } = values;
    if (!/^[a-z][a-z0-9]{0,7}$/.test(name)) {
      throw new UsageError(`--name ${name} is not accepted: 1 to 8 letters and digits`);
    }
    if (action === "up" && hosts === undefined) throw new UsageError("up needs --hosts");
    if (action !== "run" && args.length > 0) {
      throw new UsageError(`unexpected argument ${args[0]}: only run takes a task`);
    }
    const script = action === "run"
      ? taskScript(
        args[0] ?? (() => {
          throw new UsageError("run needs a task: deno task cluster run -- allreduce …");
        })(),
      )
      : undefined;
    const problem = action === "down" ? undefined : await clusterProblem();
    if (problem) throw new UsageError(problem);
    return {
      action,
      name,
      hosts,
      rate: values.rate,
      procsPerHost: values["procs-per-host"],
      script,
      args: args.slice(1),
    };
  },
  async run(plan, signal) {
    let hold;
    try {
      // One process at a time makes, runs on or removes a cluster of one name.
      hold = holdCluster(plan.name, `cluster ${plan.action}`);
      if (plan.action === "down") {
        await clusterDown(plan.name);
        return 0;
      }
      if (plan.action === "up") {
        const hosts = await clusterUp({ ...plan, hosts: plan.hosts!, signal });
        for (const h of hosts) console.log(`${h.name} ${h.address}`);
        return 0;
      }
      let hosts = await clusterHosts(plan.name);
      const temporary = hosts.length === 0;
      if (temporary) {
        if (plan.hosts === undefined) {
          throw new UsageError(`no cluster ${plan.name} is up: run up first, or give --hosts`);
        }
        hosts = await clusterUp({ ...plan, hosts: plan.hosts, signal });
      } else if (plan.hosts !== undefined && plan.hosts !== hosts.length) {
        throw new UsageError(`--hosts ${plan.hosts}: cluster ${plan.name} has ${hosts.length}`);
      }
      try {
        const ends = await runOnCluster(hosts, plan.script!, plan.args, {
          procsPerHost: plan.procsPerHost,
          signal,
        });
        const failed = firstFailure(ends);
        if (failed && !signal.aborted) {
          const others = ends.filter((e) => e.code !== 0 && e !== failed).length;
          console.error(
            `dccl cluster: rank ${failed.rank} on ${failed.host} ${howItEnded(failed)} first` +
              (others ? ` (${others} more failed after it)` : ""),
          );
        }
        signal.throwIfAborted();
        return failed ? 1 : 0;
      } finally {
        if (temporary) await clusterDown(plan.name);
      }
    } catch (e) {
      throw e instanceof ClusterError ? new Error(e.message) : e;
    } finally {
      hold?.release();
    }
  },
};

Deno.exit(await taskMain(CLUSTER, Deno.args));
