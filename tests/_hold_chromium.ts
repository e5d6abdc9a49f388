// A driver the browser-driver tests kill: it starts Chromium, opens a page, prints the profile
// folder and waits until it is killed.
import { Chromium } from "../scripts/browser/chromium.ts";

const chromium = await Chromium.launch();
await chromium.page("data:text/html,<p>held</p>");
console.log(chromium.profile);
await new Promise(() => {});
