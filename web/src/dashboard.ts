// The dashboard: polls GET /v1/stats once a second and draws it — headline numbers,
// the charts, finish reasons and the loaded versions with their ratings. Text goes in through
// textContent only: nothing from the server is parsed as HTML.
import { apiFetch, errorMessage } from "./api";
import { Charts } from "./charts";
import { Stats } from "./stats";

const POLL_MS = 1000;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, text = "", cls = ""): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

const ms = (s: number) => `${(s * 1000).toFixed(1)} ms`;
const mib = (b: number) => `${(b / (1024 * 1024)).toFixed(1)} MiB`;

function tiles(s: Stats): [string, string][] {
  const e = s.engine;
  return [
    ["running", String(e.running)],
    ["waiting", String(e.waiting)],
    ["KV cache", `${(100 * e.kv_usage).toFixed(1)} % of ${e.kv_blocks_total} blocks`],
    ["RSS", mib(e.rss_bytes)],
    ["tokens/s (window)", s.summary.generation_tokens_per_s.toFixed(1)],
    ["TTFT p50 / p99", `${ms(s.summary.ttft_s.p50)} / ${ms(s.summary.ttft_s.p99)}`],
    ["ITL p50 / p99", `${ms(s.summary.itl_s.p50)} / ${ms(s.summary.itl_s.p99)}`],
    ["requests", String(s.totals.requests)],
    ["tokens in / out", `${s.totals.prompt_tokens} / ${s.totals.completion_tokens}`],
  ];
}

function drawTiles(box: HTMLElement, s: Stats): void {
  box.replaceChildren(
    ...tiles(s).map(([label, value]) => {
      const t = el("div", "", "tile");
      t.append(el("span", label, "label"), el("span", value, "value"));
      return t;
    }),
  );
}

function drawReasons(box: HTMLElement, s: Stats): void {
  const counts = s.summary.finish_reasons;
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  if (total === 0) {
    box.replaceChildren(el("p", "no finished requests yet", "muted"));
    return;
  }
  box.replaceChildren(
    ...Object.entries(counts).map(([reason, n]) => {
      const row = el("div", "", "bar-row");
      const bar = el("div", "", `bar reason-${reason}`);
      bar.style.width = `${(100 * n) / total}%`; // CSSOM, which the CSP allows
      const track = el("div", "", "track");
      track.append(bar);
      row.append(el("span", reason, "label"), track, el("span", String(n), "value"));
      return row;
    }),
  );
}

function drawVersions(body: HTMLElement, s: Stats): void {
  body.replaceChildren(
    ...s.versions.map((v) => {
      const tr = el("tr");
      const rated = v.ratings > 0;
      const cells = [v.name, v.role, `${(100 * v.share).toFixed(0)} %`, String(v.completed), String(v.failed),
        String(v.abnormal), v.quality_kl.toFixed(4), v.quality_perplexity.toFixed(2), String(v.ratings),
        rated ? v.rating_mean.toFixed(2) : "-", rated ? `${(100 * v.negative_share).toFixed(1)} %` : "-"];
      tr.append(...cells.map((c) => el("td", c)));
      return tr;
    }),
  );
}

export function startDashboard(root: HTMLElement, onModel: (s: Stats) => void): void {
  const charts = new Charts(root.querySelector<HTMLElement>("#charts")!);
  const tileBox = root.querySelector<HTMLElement>("#tiles")!;
  const reasons = root.querySelector<HTMLElement>("#reasons")!;
  const versions = root.querySelector<HTMLElement>("#versions tbody")!;
  const error = root.querySelector<HTMLElement>("#stats-error")!;

  const poll = async () => {
    try {
      const resp = await apiFetch("/v1/stats");
      if (!resp.ok) throw new Error(await errorMessage(resp));
      const s = (await resp.json()) as Stats;
      error.hidden = true;
      onModel(s);
      drawTiles(tileBox, s);
      drawReasons(reasons, s);
      drawVersions(versions, s);
      charts.update(s);
    } catch (e) {
      error.textContent = `GET /v1/stats: ${e instanceof Error ? e.message : String(e)}`;
      error.hidden = false;
    }
    setTimeout(poll, POLL_MS);
  };
  void poll();
}
