// The fetch wrapper: JSON in and out, the CSRF header on every POST, and a 401 (no or expired
// session) hands over to the login form.
import { getSession } from "./session";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }
}

let unauthorizedHandler: (() => void) | null = null;

// Called on every 401 except the login's own.
export function onUnauthorized(handler: () => void): void {
  unauthorizedHandler = handler;
}

export type Query = Record<string, string | number | boolean | null | undefined>;

// "/api/dead" + {ns: "shop", type: ""} -> "/api/dead?ns=shop" (empty values are left out).
export function withQuery(path: string, query?: Query): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === null || v === undefined || v === "") continue;
    params.set(k, String(v));
  }
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

async function errorMessage(res: Response): Promise<string> {
  let text = "";
  try {
    text = await res.text();
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === "object" && typeof (parsed as { error?: unknown }).error === "string") {
      return (parsed as { error: string }).error;
    }
  } catch {
    // not JSON: fall through
  }
  const status = `${res.status} ${res.statusText}`.trim();
  return text && text.length < 300 ? `${status}: ${text}` : status;
}

async function send(method: "GET" | "POST", path: string, body: unknown, isLogin: boolean, accept: string): Promise<string> {
  const headers: Record<string, string> = { Accept: accept };
  if (method === "POST") {
    headers["Content-Type"] = "application/json";
    const session = getSession();
    if (session && !isLogin) headers["X-CSRF-Token"] = session.csrf;
  }
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: method === "POST" ? JSON.stringify(body ?? {}) : undefined,
      credentials: "same-origin",
      cache: "no-store",
    });
  } catch (e) {
    throw new ApiError(0, `the console cannot be reached (${e instanceof Error ? e.message : String(e)})`);
  }
  if (!res.ok) {
    const message = await errorMessage(res);
    if (res.status === 401 && !isLogin && unauthorizedHandler) unauthorizedHandler();
    throw new ApiError(res.status, message);
  }
  return res.text();
}

async function request<T>(method: "GET" | "POST", path: string, body?: unknown, isLogin = false): Promise<T> {
  const text = await send(method, path, body, isLogin, "application/json");
  if (!text) return {} as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ApiError(200, `the answer of ${path} is not JSON`);
  }
}

export function getJson<T>(path: string, query?: Query): Promise<T> {
  return request<T>("GET", withQuery(path, query));
}

// A text answer as it is (e.g. a task's raw payload).
export function getText(path: string): Promise<string> {
  return send("GET", path, undefined, false, "*/*");
}

export function postJson<T>(path: string, body: unknown): Promise<T> {
  return request<T>("POST", path, body);
}

export function postLogin<T>(body: unknown): Promise<T> {
  return request<T>("POST", "/api/login", body, true);
}

export function describeError(e: unknown): string {
  if (e instanceof ApiError) return e.status ? `${e.message} (${e.status})` : e.message;
  return e instanceof Error ? e.message : String(e);
}

// /api/tasks/NS/ID with each part encoded.
export function taskPath(ns: string, id: string): string {
  return `/api/tasks/${encodeURIComponent(ns)}/${encodeURIComponent(id)}`;
}
