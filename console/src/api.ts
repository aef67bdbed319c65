// The public API only, with the user's key kept in sessionStorage (gone when the tab closes).
const KEY = "contextos.apiKey";

export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
  ) {
    super(message);
  }
}

export function getKey(): string {
  return sessionStorage.getItem(KEY) ?? "";
}

export function setKey(key: string): void {
  sessionStorage.setItem(KEY, key);
}

// Where the API is, learnt at run time so one build serves every deployment: `?api=` first, then
// the `config.json` the deployment writes beside index.html, then this page's own origin (the
// local stack, and a CloudFront distribution that routes /v1/* to the API).
export const CONFIG_URL = `${import.meta.env.BASE_URL}config.json`;

async function resolveBase(): Promise<string> {
  const override = new URLSearchParams(location.search).get("api");
  if (override) return override.replace(/\/+$/, "");
  try {
    const response = await fetch(CONFIG_URL, { cache: "no-store" });
    if (response.ok) {
      const config = await response.json();
      if (typeof config?.apiBaseUrl === "string" && config.apiBaseUrl) return config.apiBaseUrl.replace(/\/+$/, "");
    }
  } catch {
    // No config (the local stack has none) or not JSON: the page's origin serves the API.
  }
  return location.origin;
}

export const apiBase: Promise<string> = resolveBase();

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const base = await apiBase;
  const response = await fetch(`${base}/v1${path}`, {
    method,
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${getKey()}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = data?.error ?? {};
    throw new ApiError(response.status, error.code ?? "http_error", error.message ?? response.statusText);
  }
  return data as T;
}
