// The playground: one prompt against /v1/chat/completions or /v1/completions, streamed,
// with the sampling parameters and llmserve's priority and lane. Shows the text as it
// arrives, then TTFT and tokens/s of the answer; a failed request shows the server's
// error message.
import { apiFetch, errorMessage } from "./api";
import { sseData } from "./sse";

interface Chunk {
  choices?: { text?: string; delta?: { content?: string }; finish_reason?: string | null }[];
  usage?: { completion_tokens?: number } | null;
  error?: { message?: string };
}

function requestBody(form: HTMLFormElement): { path: string; body: Record<string, unknown> } {
  const f = new FormData(form);
  const text = (name: string) => String(f.get(name) ?? "").trim();
  const num = (name: string) => Number(text(name));
  const chat = text("mode") === "chat";
  const body: Record<string, unknown> = {
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: num("max_tokens"),
    temperature: num("temperature"),
    top_p: num("top_p"),
    priority: num("priority"),
    lane: text("lane"),
  };
  const stop = text("stop").split(",").map((s) => s.trim()).filter(Boolean);
  if (stop.length) body.stop = stop;
  const prompt = String(f.get("prompt") ?? "");
  if (chat) body.messages = [{ role: "user", content: prompt }];
  else body.prompt = prompt;
  return { path: chat ? "/v1/chat/completions" : "/v1/completions", body };
}

export function startPlayground(root: HTMLElement): void {
  const form = root.querySelector<HTMLFormElement>("#play-form")!;
  const output = root.querySelector<HTMLElement>("#output")!;
  const stats = root.querySelector<HTMLElement>("#answer-stats")!;
  const error = root.querySelector<HTMLElement>("#play-error")!;
  const send = root.querySelector<HTMLButtonElement>("#send")!;
  const stop = root.querySelector<HTMLButtonElement>("#stop")!;
  let abort: AbortController | null = null;

  stop.addEventListener("click", () => abort?.abort());
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const { path, body } = requestBody(form);
    output.textContent = "";
    output.dataset.chunks = "0";
    stats.textContent = "";
    error.hidden = true;
    send.disabled = true;
    stop.disabled = false;
    abort = new AbortController();
    const started = performance.now();
    let first = 0;
    let chunks = 0;
    let tokens = 0;
    let finish = "";
    try {
      const resp = await apiFetch(path, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
        signal: abort.signal,
      });
      if (!resp.ok || !resp.body) throw new Error(await errorMessage(resp));
      for await (const data of sseData(resp.body)) {
        if (data === "[DONE]") break;
        const chunk = JSON.parse(data) as Chunk;
        if (chunk.error) throw new Error(chunk.error.message ?? "the stream failed");
        if (chunk.usage?.completion_tokens !== undefined) tokens = chunk.usage.completion_tokens;
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        const piece = choice.delta?.content ?? choice.text ?? "";
        if (piece) {
          if (!first) first = performance.now();
          output.append(piece);
          output.dataset.chunks = String(++chunks);
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
      const end = performance.now();
      const n = tokens || chunks;
      const rate = first && end > first ? ((n - 1) * 1000) / (end - first) : 0;
      stats.textContent = `TTFT ${first ? (first - started).toFixed(0) : "-"} ms · ${n} tokens · ` +
        `${rate.toFixed(1)} tokens/s · finish: ${finish || "-"}`;
    } catch (e) {
      const aborted = e instanceof DOMException && e.name === "AbortError";
      error.textContent = aborted ? "stopped" : e instanceof Error ? e.message : String(e);
      error.hidden = false;
    } finally {
      send.disabled = false;
      stop.disabled = true;
      abort = null;
    }
  });
}
