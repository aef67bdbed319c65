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

const base = new URLSearchParams(location.search).get("api") ?? location.origin;

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
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
