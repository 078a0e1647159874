// Requests to the server the page came from, with the API key the user typed (kept in
// sessionStorage only, so it leaves with the tab).
const KEY_STORAGE = "llmserve.api_key";

export function apiKey(): string {
  return sessionStorage.getItem(KEY_STORAGE) ?? "";
}

export function setApiKey(key: string): void {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
}

export function apiFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const key = apiKey();
  if (key) headers.set("Authorization", `Bearer ${key}`);
  return fetch(path, { ...init, headers });
}

// The server's own words for a failed request: OpenAI's {"error": {"message"}}, else
// the status line.
export async function errorMessage(resp: Response): Promise<string> {
  const text = await resp.text();
  try {
    const body = JSON.parse(text) as { error?: { message?: string } };
    if (body.error?.message) return `${resp.status}: ${body.error.message}`;
  } catch {
    // not JSON: fall through to the status
  }
  return `${resp.status} ${resp.statusText}${text ? `: ${text.slice(0, 200)}` : ""}`;
}
