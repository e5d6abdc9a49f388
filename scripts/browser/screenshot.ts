/**
 * docs/browser_page.png, made from the page as it is: headless Chromium fills the benchmark form
 * as a person would (allreduce on the form's first transport, as many ranks as the tab allows up
 * to 4, up to 1M floats), runs it, waits for the table and chart, and saves the whole page. Run
 * it after any change to the page, so the README's picture never shows an old one.
 *
 *     deno run -A --v8-flags=--experimental-wasm-fp16 scripts/browser/screenshot.ts [OUT.png]
 * @module
 */

import { withTab } from "./tab_run.ts";

const out = Deno.args[0] ?? new URL("../../docs/browser_page.png", import.meta.url).pathname;

const png = await withTab(async (page) => {
  await page.evaluate(`(() => {
    const form = document.getElementById("sweep-form");
    const set = (name, value) => {
      form.elements[name].value = value;
      form.dispatchEvent(new Event("change"));
    };
    set("primitive", "allreduce");
    set("procs", String(Math.min(4, Number(form.elements.procs.max))));
    set("max", "1M");
    document.getElementById("run").click();
  })()`);
  const start = Date.now();
  let status = "";
  while (!status.startsWith("done")) {
    if (status.startsWith("Error") || Date.now() - start > 300_000) {
      throw new Error(`the page's sweep did not finish: ${status || "no status after 300 s"}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
    status = await page.evaluate<string>(`document.getElementById("sweep-status").textContent`);
  }
  return await page.screenshot();
});
await Deno.writeFile(out, png);
console.log(`wrote ${out} (${png.byteLength} bytes)`);
