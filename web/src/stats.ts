// The shape of GET /v1/stats (docs/api.md) and the series the charts derive from it.
export interface StepColumns {
  t_ms: number[];
  duration_s: number[];
  batch_tokens: number[];
  prefill_tokens: number[];
  token_budget: number[];
  batch_size: number[];
  running: number[];
  waiting: number[];
  kv_blocks_used: number[];
  kv_blocks_total: number[];
  rss_bytes: number[];
}

export interface RequestColumns {
  t_ms: number[];
  queue_s: number[];
  ttft_s: number[];
  itl_s: number[];
  e2e_s: number[];
  compute_s: number[];
  prompt_tokens: number[];
  cached_prompt_tokens: number[];
  completion_tokens: number[];
  priority: number[];
  finish_reason: string[];
}

export interface Percentiles {
  p50: number;
  p90: number;
  p99: number;
  count: number;
}

export interface VersionRow {
  name: string;
  role: string;
  share: number;
  completed: number;
  failed: number;
  abnormal: number;
  quality_kl: number;
  quality_perplexity: number;
  ratings: number; // POST /v1/feedback ratings of its answers
  rating_mean: number;
  negative_share: number; // of its ratings: thumbs -1, or stars 1-2
}

export interface Stats {
  model: string;
  version: string;
  now_ms: number;
  uptime_s: number;
  window: number;
  engine: {
    running: number;
    waiting: number;
    kv_blocks_total: number;
    kv_blocks_used: number;
    kv_usage: number;
    rss_bytes: number;
    overloaded: boolean;
    steps: number;
    preemptions: number;
  };
  totals: {
    requests: number;
    steps: number;
    prompt_tokens: number;
    completion_tokens: number;
    finish_reasons: Record<string, number>;
  };
  summary: {
    ttft_s: Percentiles;
    itl_s: Percentiles;
    e2e_s: Percentiles;
    generation_tokens_per_s: number;
    finish_reasons: Record<string, number>;
  };
  versions: VersionRow[];
  steps: StepColumns;
  requests: RequestColumns;
}

// Tokens per second over the window's steps, generated (decode) and prompt (prefill),
// in about 40 bins of equal width (50 ms to 10 s, so that a short burst and an hour
// both draw as a curve); bins without a step count zero. Times in seconds, as uPlot's
// time axis wants.
export function tokenRate(s: StepColumns): [number[], number[], number[]] {
  const n = s.t_ms.length;
  if (n === 0) return [[], [], []];
  const first = s.t_ms[0];
  const span = s.t_ms[n - 1] - first;
  const width = Math.min(10000, Math.max(50, span / 40));
  const bins = Math.floor(span / width) + 1;
  const t = Array.from({ length: bins }, (_, i) => (first + (i + 0.5) * width) / 1000);
  const decode = new Array<number>(bins).fill(0);
  const prefill = new Array<number>(bins).fill(0);
  for (let i = 0; i < n; i++) {
    const b = Math.min(bins - 1, Math.floor((s.t_ms[i] - first) / width));
    decode[b] += s.batch_tokens[i] - s.prefill_tokens[i];
    prefill[b] += s.prefill_tokens[i];
  }
  const perSecond = (v: number) => (v * 1000) / width;
  return [t, decode.map(perSecond), prefill.map(perSecond)];
}

export const seconds = (ms: number[]): number[] => ms.map((v) => v / 1000);
export const millis = (s: number[]): number[] => s.map((v) => v * 1000);
