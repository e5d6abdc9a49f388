/**
 * A task run inside headless Chromium: the page served here, its ranks the tab's workers (or
 * logical ranks on its GPU), the rows (or epochs) brought back over the DevTools protocol as they
 * come and written here as the CLI writes them — the table on stdout, the CSV and its JSON sidecar.
 * @module
 */

import type { SweepOptions } from "../../bench/harness.ts";
import type { ReportOptions, RunMetadata } from "../../bench/report_format.ts";
import type { SizeResult } from "../../bench/harness.ts";
import { WEB_TRANSPORTS } from "../../internal.ts";
import { type WebTransportName } from "../../core.ts";
import {
  type MachineFacts,
  type MachineLimits,
  sweepBounds,
} from "../../bench/limits/machine_limits.ts";
import { tabFacts } from "../../web/tab_limits.ts";
import type { TabEnvironment } from "../../web/environment.ts";
import { cpuModel } from "../common/cpu_model.ts";
import { fingerprintOf, keepLimits, keptLimits } from "../limits/this_machine.ts";
import type { TrainConfig } from "../../trainer/config.ts";
import type { EpochRow, TrainSummary } from "../../trainer/epochs.ts";
import { SweepWriter } from "../../deno/mod.ts";
import { TrainReporter, type TrainReportOptions } from "../../deno/mod.ts";
import { Chromium, type ChromiumPage } from "./chromium.ts";
import { servePage } from "./page_server.ts";

/** The tab's page, served and opened, for the time `body` runs; everything is closed after. */
export async function withTab<T>(
  body: (page: ChromiumPage) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const server = await servePage();
  let chromium: Chromium | undefined;
  try {
    chromium = await Chromium.launch({ alsoRemove: [server.bundle] });
    const page = await chromium.page(server.url);
    await page.evaluate("dccl.ready.then(() => true)");
    return await untilAborted(body(page), signal);
  } finally {
    await chromium?.close();
    await server.close();
  }
}

/**
 * Headless Chromium tabs that open a mixed group's join link (`--tabs`): one browser, `count`
 * tabs, each a rank; `close` ends them.
 */
export function joiningTabs(count: number): {
  onJoinLink(link: URL): Promise<void>;
  close(): Promise<void>;
} {
  let chromium: Chromium | undefined;
  return {
    async onJoinLink(link) {
      chromium = await Chromium.launch();
      for (let i = 0; i < count; i++) await chromium.page(link);
    },
    async close() {
      await chromium?.close();
    },
  };
}

/** `work`, or the signal's reason once it aborts. */
function untilAborted<T>(work: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return work;
  return Promise.race([
    work,
    new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason);
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    }),
  ]);
}

/** A sweep to run in the tab, as the CLI planned it. */
export interface TabSweep {
  sweep: SweepOptions;
  procs: number;
  transport: WebTransportName;
  gpu: boolean;
  timeoutMs: number;
  /** Lines above the table. */
  header: string[];
  /** Where the rows go, besides the table. */
  csv?: string;
  json?: string;
  /** The command line, for the sidecar. */
  command: string[];
}

/**
 * The facts a tab's limits are kept by: this machine's CPU (a tab does not say it) with the
 * tab's cores and browser.
 */
async function tabFactsOf(page: ChromiumPage): Promise<MachineFacts> {
  const env = await page.evaluate<TabEnvironment>("dccl.ready");
  return { ...tabFacts(env), cpu: cpuModel() };
}

/** Measures the tab's limits in it and keeps them for this machine's browser. */
export function limitsInTab(
  signal?: AbortSignal,
): Promise<{ limits: MachineLimits; kept: string }> {
  return withTab(async (page) => {
    const facts = await tabFactsOf(page);
    const measured = await page.evaluate<MachineLimits>("dccl.limits()", 10 * 60_000);
    const limits = { ...measured, machine: facts, fingerprint: fingerprintOf(facts) };
    return { limits, kept: keepLimits(limits) };
  }, signal);
}

/** Runs `run` in the tab, writing its rows here; resolves with the wrong elements. */
export function sweepInTab(run: TabSweep, signal?: AbortSignal): Promise<number> {
  return withTab(async (page) => {
    const { bounds } = WEB_TRANSPORTS.byName[run.transport];
    const limits = keptLimits(await tabFactsOf(page));
    const readAgainst = sweepBounds(limits, {
      bounds,
      primitive: run.sweep.primitive,
      procs: run.procs,
      window: run.sweep.window,
    });
    let writer: SweepWriter | undefined;
    const rows = await page.expose("dcclSweep", (text) => {
      const message = JSON.parse(text) as
        | { type: "start"; report: ReportOptions }
        | { type: "row"; result: SizeResult };
      if (message.type === "start") {
        const metadata: RunMetadata = { ...message.report.metadata, command: run.command };
        writer = new SweepWriter({ ...message.report, csv: run.csv, json: run.json, metadata });
        writer.start();
      } else writer?.add(message.result);
    });
    const request = JSON.stringify({
      sweep: run.sweep,
      procs: run.procs,
      transport: run.transport,
      gpu: run.gpu,
      timeoutMs: run.timeoutMs,
      header: run.header,
      live: false,
      bounds: readAgainst,
    });
    try {
      const outcome = await page.evaluate<{ wrong: number; sent: number }>(
        `dccl.sweep(${request}).then((o) => ({ wrong: o.wrong, sent: dccl.forwarded("dcclSweep") }))`,
        24 * 3600_000,
      );
      await rows.arrived(outcome.sent);
      return outcome.wrong;
    } catch (e) {
      throw new Error(`the tab failed: ${(e as Error).message}`);
    } finally {
      writer?.finish();
    }
  }, signal);
}

/** A training run to make in the tab, as the CLI planned it. */
export interface TabTraining {
  config: TrainConfig<WebTransportName>;
  report: Omit<TrainReportOptions, "epochs">;
}

/** Trains in the tab, printing and writing the epochs here; resolves with the summary. */
export function trainInTab(run: TabTraining, signal?: AbortSignal): Promise<TrainSummary> {
  return withTab(async (page) => {
    const reporter = new TrainReporter({ ...run.report, epochs: run.config.epochs });
    const epochs = await page.expose("dcclTrain", (text) => {
      const message = JSON.parse(text) as
        | { type: "progress"; epoch: number; step: number; steps: number; loss?: number }
        | { type: "epoch"; row: EpochRow };
      if (message.type === "epoch") reporter.add(message.row);
      else reporter.progress(message.epoch, message.step, message.steps, () => message.loss);
    });
    reporter.start();
    const { summary, sent } = await page.evaluate<{ summary: TrainSummary; sent: number }>(
      `dccl.train(${
        JSON.stringify(run.config)
      }).then((summary) => ({ summary, sent: dccl.forwarded("dcclTrain") }))`,
      24 * 3600_000,
    );
    await epochs.arrived(sent);
    reporter.finish(summary);
    return summary;
  }, signal);
}
