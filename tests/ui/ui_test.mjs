// The dashboard and playground in a real browser: Debian's Chromium, headless, driven
// by playwright-core (which downloads nothing). Against `llmserve serve` on stories260K
// it checks that the charts fill after a few requests, that a playground answer streams
// in piece by piece with its TTFT and tokens/s, that a bad parameter shows the server's
// error message, that a server with an API key gets the key typed into the page, and
// that the page runs under the server's CSP without a console error.
// Saves screenshots into OUT_DIR.
//   node ui_test.mjs LLMSERVE_BIN MODEL.gguf OUT_DIR [CHROMIUM]
// run_ui_test.sh installs what it needs and turns a missing piece into a skip.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [bin, model, outDir, browserPath = "/usr/bin/chromium"] = process.argv.slice(2);
if (!bin || !model || !outDir) {
  console.error("usage: node ui_test.mjs LLMSERVE_BIN MODEL.gguf OUT_DIR [CHROMIUM]");
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });

function check(cond, what) {
  if (!cond) throw new Error(`FAILED: ${what}`);
  console.log(`ok: ${what}`);
}

// Starts the server on a free port; resolves to its base URL once it listens.
function startServer(extra = []) {
  const args = ["serve", "-m", model, "--port", "0", "--threads", "1", ...extra];
  const proc = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  const url = new Promise((resolve, reject) => {
    const onData = (d) => {
      log += d;
      const m = /http:\/\/127\.0\.0\.1:\d+/.exec(log);
      if (m) resolve(m[0]);
    };
    proc.stdout.on("data", onData);
    proc.stderr.on("data", (d) => (log += d));
    proc.on("exit", (code) => reject(new Error(`the server exited (${code}) before listening:\n${log}`)));
  });
  return { proc, url };
}

async function complete(base, prompt, maxTokens) {
  const r = await fetch(`${base}/v1/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0.8 }),
  });
  if (r.status !== 200) throw new Error(`completion: ${r.status} ${await r.text()}`);
  return (await r.json()).id;
}

async function rate(base, id, rating) {
  const r = await fetch(`${base}/v1/feedback`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ id, rating }),
  });
  if (r.status !== 200) throw new Error(`feedback: ${r.status} ${await r.text()}`);
}

// A slow network between the page and a server: a TCP relay that passes what the page
// sends at once and what the server answers in slices of 256 bytes, one every 10 ms
// (25 KB/s a connection). On loopback a tiny model's whole answer can reach the page in
// one read, which would hide whether the page shows it as it streams; through the relay
// the stream's pacing is visible. Resolves to the relay's base URL.
function slowRelay(target, relays) {
  const { hostname, port } = new URL(target);
  const relay = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    const pending = [];
    let timer = null;
    let ended = false;
    const drip = () => {
      if (pending.length === 0) {
        clearInterval(timer);
        timer = null;
        if (ended) client.end();
        return;
      }
      client.write(pending[0].subarray(0, 256));
      pending[0] = pending[0].subarray(256);
      if (pending[0].length === 0) pending.shift();
    };
    upstream.on("data", (d) => {
      pending.push(d);
      timer ??= setInterval(drip, 10);
    });
    upstream.on("end", () => {
      ended = true;
      timer ??= setInterval(drip, 10);
    });
    client.on("data", (d) => upstream.write(d));
    const close = () => {
      clearInterval(timer);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", close);
    client.on("error", close);
    upstream.on("error", close);
  });
  relays.push(relay);
  return new Promise((resolve) => relay.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${relay.address().port}`)));
}

const servers = [startServer()];
const server = servers[0];
const relays = [];
const profile = mkdtempSync(join(tmpdir(), "llmserve-ui-chromium-"));
let context;
try {
  const base = await server.url;
  console.log(`server at ${base}`);
  // Three rounds of four concurrent requests of different lengths: batches of several
  // sequences, and requests that end at different times.
  const answerTokens = [24, 48, 96, 160];
  for (let round = 0; round < 3; round++) {
    await Promise.all(answerTokens.map((n, i) => complete(base, `Once upon a time ${round} ${i}`, n)));
  }
  // One thumbs-down, which the versions table shows beside the version.
  await rate(base, await complete(base, "A rated answer", 4), -1);

  context = await chromium.launchPersistentContext(profile, {
    executablePath: browserPath,
    headless: true,
    viewport: { width: 1400, height: 1000 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  // Every console error and uncaught exception, tagged with the step it happened in.
  let step = "load";
  const problems = [];
  page.on("console", (m) => {
    if (m.type() === "error") problems.push({ step, text: m.text() });
  });
  page.on("pageerror", (e) => problems.push({ step, text: `uncaught: ${e.message}` }));
  // CSP violations, reported by every page loaded (they also reach the console).
  const violations = [];
  await page.exposeFunction("reportCspViolation", (v) => violations.push(v));
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) =>
      window.reportCspViolation(`${e.violatedDirective} ${e.blockedURI}`));
  });

  // The dashboard.
  const resp = await page.goto(`${base}/`);
  check(resp.status() === 200, "GET / answers 200");
  const csp = resp.headers()["content-security-policy"] ?? "";
  check(csp.includes("script-src 'self'") && !csp.includes("unsafe-inline"), `the page carries a strict CSP (${csp})`);
  await page.waitForFunction(() => {
    const charts = [...document.querySelectorAll(".chart")];
    return charts.length >= 6 && charts.every((c) => Number(c.dataset.points) > 0);
  }, null, { timeout: 15000 });
  const points = await page.$$eval(".chart", (cs) => cs.map((c) => `${c.dataset.chart}=${c.dataset.points}`));
  check(points.length >= 6, `every chart is filled: ${points.join(" ")}`);
  check(await page.locator("canvas").count() >= 6, "the charts are drawn on canvases");
  const tiles = await page.locator("#tiles").innerText();
  check(/requests\s+13/.test(tiles), "the tiles count the 13 requests");
  check(await page.locator("#reasons .bar-row").count() >= 1, "finish reasons are shown");
  check(await page.locator("#versions tbody tr").count() === 1, "the serving version is listed");
  const feedback = await page.$$eval("#versions tbody tr td", (tds) => tds.slice(-3).map((td) => td.textContent));
  check(feedback.join(" ") === "1 -1.00 100.0 %", `its feedback is shown: ${feedback.join(" ")}`);
  await page.screenshot({ path: join(outDir, "dashboard.png"), fullPage: true });

  // The playground: answers that arrive piece by piece, from both endpoints.
  step = "playground";
  await page.goto(`${await slowRelay(base, relays)}/`);
  await page.click("nav button[data-tab=playground]");
  await page.fill("input[name=max_tokens]", "80");
  for (const mode of ["chat", "completion"]) {
    await page.selectOption("select[name=mode]", mode);
    await page.fill("textarea[name=prompt]", "Once upon a time, there was a little dog");
    await page.evaluate(() => {
      // The output's length, and when, at every change the page makes while the answer streams.
      window.__observer?.disconnect();
      window.__lengths = [];
      window.__times = [];
      const out = document.getElementById("output");
      window.__observer = new MutationObserver(() => {
        if (out.textContent.length === 0) return; // the page clearing the last answer
        window.__lengths.push(out.textContent.length);
        window.__times.push(performance.now());
      });
      window.__observer.observe(out, { childList: true, characterData: true, subtree: true });
    });
    await page.click("#send");
    await page.waitForFunction(() => document.getElementById("answer-stats").textContent.includes("tokens/s"), null,
      { timeout: 20000 });
    const lengths = await page.evaluate(() => window.__lengths);
    const times = await page.evaluate(() => window.__times);
    const chunks = Number(await page.locator("#output").getAttribute("data-chunks"));
    const grew = lengths.every((n, i) => i === 0 || n >= lengths[i - 1]);
    check(chunks >= 40, `${mode}: the answer arrived as ${chunks} streamed pieces`);
    check(lengths.length >= 2 && grew && lengths[lengths.length - 1] > lengths[0],
      `${mode}: the text grew over ${lengths.length} updates (${lengths[0]} → ${lengths[lengths.length - 1]} characters)`);
    // Not all at once at the end: the updates came as the tokens did, over time.
    const spread = times[times.length - 1] - times[0];
    const moments = new Set(times.map((t) => Math.floor(t / 20))).size;
    check(spread > 100 && moments >= 5,
      `${mode}: the updates came at ${moments} moments 20 ms apart or more, over ${spread.toFixed(0)} ms`);
    const answerStats = await page.locator("#answer-stats").innerText();
    check(/TTFT \d+ ms/.test(answerStats) && /[\d.]+ tokens\/s/.test(answerStats),
      `${mode}: TTFT and tokens/s are shown: ${answerStats}`);
    check(await page.locator("#play-error").isHidden(), `${mode}: no error is shown for a good request`);
  }
  // The screenshot shows an answer at the server's own speed.
  await page.goto(`${base}/`);
  await page.click("nav button[data-tab=playground]");
  await page.selectOption("select[name=mode]", "completion");
  await page.fill("textarea[name=prompt]", "Once upon a time, there was a little dog");
  await page.fill("input[name=max_tokens]", "120");
  await page.click("#send");
  await page.waitForFunction(() => document.getElementById("answer-stats").textContent.includes("tokens/s"), null,
    { timeout: 20000 });
  await page.screenshot({ path: join(outDir, "playground.png"), fullPage: true });

  // A bad parameter: the server's message, not a generic failure.
  step = "bad-parameter";
  await page.fill("input[name=top_p]", "7");
  await page.click("#send");
  await page.locator("#play-error").waitFor({ state: "visible", timeout: 10000 });
  const error = await page.locator("#play-error").innerText();
  check(error.startsWith("400") && error.includes("top_p"), `the server's error message is shown: ${error}`);
  await page.screenshot({ path: join(outDir, "playground-error.png"), fullPage: true });

  // A server with an API key: the page loads without one, says why the stats fail,
  // and fills once the key is typed.
  step = "api-key";
  const key = "sk-dashboard-browser-test";
  servers.push(startServer(["--api-key", key]));
  const keyed = await servers[1].url;
  await page.goto(`${keyed}/`);
  await page.locator("#stats-error").waitFor({ state: "visible", timeout: 10000 });
  const refused = await page.locator("#stats-error").innerText();
  check(refused.includes("401"), `without a key the page shows the server's refusal: ${refused}`);
  await page.fill("#api-key", key);
  await page.locator("#api-key").dispatchEvent("change");
  // (A poll sent just before the key was typed may still log its 401.)
  await page.waitForFunction(() => /requests\s*\d/.test(document.getElementById("tiles").textContent), null,
    { timeout: 10000 });
  check(await page.locator("#stats-error").isHidden(), "with the key the stats load");

  // The deliberate 400 and 401s are the console errors the browser may log (failed resources).
  const expected = (p) => (p.step === "bad-parameter" && /status of 400/.test(p.text)) ||
    (p.step === "api-key" && /status of 401/.test(p.text));
  const unexpected = problems.filter((p) => !expected(p));
  check(unexpected.length === 0, `no console errors or uncaught exceptions ${JSON.stringify(unexpected)}`);
  check(violations.length === 0, `no CSP violations ${JSON.stringify(violations)}`);
  console.log(`screenshots in ${outDir}`);
} finally {
  await context?.close();
  for (const srv of servers) srv.proc.kill("SIGTERM");
  for (const relay of relays) relay.close();
  rmSync(profile, { recursive: true, force: true });
}
