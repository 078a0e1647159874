// Requests to the server the page came from, with the API key the user typed. The key
// stays in this page's memory only: nothing stores it, and a reload asks again.
let key = "";

export function setApiKey(value: string): void {
  key = value;
}

export function apiFetch(path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
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
