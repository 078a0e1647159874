// The dashboard's charts: one uPlot per spec, created once and fed new data on every
// poll. Each chart's box carries data-points (the samples it shows), which tells a
// reader, or the browser test, that it is filled.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { millis, seconds, Stats, tokenRate } from "./stats";

interface SeriesSpec {
  label: string;
  stroke: string;
  scale?: string;
  dots?: boolean; // per-request samples: points, no line
  steps?: boolean; // per-step state: held until the next step, not interpolated
}

interface ChartSpec {
  id: string;
  title: string;
  series: SeriesSpec[];
  right?: string; // label of a second y axis (on scale "r")
  data: (s: Stats) => uPlot.AlignedData;
}

const MIB = 1024 * 1024;
const stepped = uPlot.paths.stepped!({ align: 1 });

const specs: ChartSpec[] = [
  {
    id: "tokens",
    title: "Tokens / s",
    series: [
      { label: "generated", stroke: "#2563eb" },
      { label: "prompt", stroke: "#f59e0b" },
    ],
    data: (s) => tokenRate(s.steps),
  },
  {
    id: "queue",
    title: "Running and waiting requests",
    series: [
      { label: "running", stroke: "#16a34a", steps: true },
      { label: "waiting", stroke: "#dc2626", steps: true },
    ],
    data: (s) => [seconds(s.steps.t_ms), s.steps.running, s.steps.waiting],
  },
  {
    id: "memory",
    title: "Memory: KV cache (% of blocks) and RSS (MiB)",
    right: "MiB",
    series: [
      { label: "KV used %", stroke: "#7c3aed", steps: true },
      { label: "RSS MiB", stroke: "#0891b2", scale: "r", steps: true },
    ],
    data: (s) => [
      seconds(s.steps.t_ms),
      s.steps.kv_blocks_used.map((u, i) => (100 * u) / Math.max(1, s.steps.kv_blocks_total[i])),
      s.steps.rss_bytes.map((b) => b / MIB),
    ],
  },
  {
    id: "batch",
    title: "Batch efficiency (% of the token budget) and batch size",
    right: "sequences",
    series: [
      { label: "efficiency %", stroke: "#ea580c", steps: true },
      { label: "sequences", stroke: "#64748b", scale: "r", steps: true },
    ],
    data: (s) => [
      seconds(s.steps.t_ms),
      s.steps.batch_tokens.map((t, i) => (100 * t) / Math.max(1, s.steps.token_budget[i])),
      s.steps.batch_size,
    ],
  },
  {
    id: "latency",
    title: "Latency per request (ms)",
    series: [
      { label: "TTFT", stroke: "#2563eb", dots: true },
      { label: "ITL (mean)", stroke: "#16a34a", dots: true },
      { label: "end to end", stroke: "#94a3b8", dots: true },
    ],
    data: (s) => [seconds(s.requests.t_ms), millis(s.requests.ttft_s), millis(s.requests.itl_s), millis(s.requests.e2e_s)],
  },
  {
    id: "compute",
    title: "Compute per request (ms) and its tokens",
    right: "tokens",
    series: [
      { label: "compute ms", stroke: "#db2777", dots: true },
      { label: "generated tokens", stroke: "#0d9488", scale: "r", dots: true },
    ],
    data: (s) => [seconds(s.requests.t_ms), millis(s.requests.compute_s), s.requests.completion_tokens],
  },
  {
    id: "steps",
    title: "Step duration (ms)",
    series: [{ label: "step", stroke: "#475569" }],
    data: (s) => [seconds(s.steps.t_ms), millis(s.steps.duration_s)],
  },
];

function options(spec: ChartSpec, width: number): uPlot.Options {
  const axes: uPlot.Axis[] = [{}, { size: 50 }];
  if (spec.right) axes.push({ scale: "r", side: 1, label: spec.right, grid: { show: false }, size: 50 });
  return {
    title: spec.title,
    width,
    height: 200,
    scales: { x: { time: true } },
    axes,
    series: [
      {},
      ...spec.series.map((s) => ({
        label: s.label,
        stroke: s.stroke,
        scale: s.scale ?? "y",
        width: 1.5,
        paths: s.dots ? () => null : s.steps ? stepped : undefined,
        points: s.dots ? { show: true, size: 5, fill: s.stroke } : { show: false },
      })),
    ],
  };
}

export class Charts {
  private plots: { spec: ChartSpec; plot: uPlot; box: HTMLElement }[] = [];

  constructor(container: HTMLElement) {
    for (const spec of specs) {
      const box = document.createElement("div");
      box.className = "chart";
      box.dataset.chart = spec.id;
      box.dataset.points = "0";
      container.appendChild(box);
      const empty: uPlot.AlignedData = [[], ...spec.series.map(() => [])];
      this.plots.push({ spec, box, plot: new uPlot(options(spec, this.width(box)), empty, box) });
    }
    window.addEventListener("resize", () => {
      for (const p of this.plots) p.plot.setSize({ width: this.width(p.box), height: 200 });
    });
  }

  update(stats: Stats): void {
    for (const p of this.plots) {
      const data = p.spec.data(stats);
      p.plot.setData(data);
      p.box.dataset.points = String(data[0].length);
    }
  }

  private width(box: HTMLElement): number {
    return Math.max(280, box.clientWidth || 480);
  }
}
