// Hash routes: #/overview, #/live, #/failed, #/task/NS/ID, #/workers, #/cron, #/doctor, #/audit.
// Path parts are percent-encoded (a task id may hold "/" or ":"); a query may follow ("?ns=x").

export interface Route {
  page: string;
  params: string[];
  query: URLSearchParams;
}

export const DEFAULT_PAGE = "overview";

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

export function parseHash(hash: string): Route {
  let h = hash.startsWith("#") ? hash.slice(1) : hash;
  let query = new URLSearchParams();
  const q = h.indexOf("?");
  if (q >= 0) {
    query = new URLSearchParams(h.slice(q + 1));
    h = h.slice(0, q);
  }
  const parts = h.split("/").filter((p) => p !== "").map(decode);
  return { page: parts[0] ?? DEFAULT_PAGE, params: parts.slice(1), query };
}

// hashFor("task", ["shop", "id/1"]) -> "#/task/shop/id%2F1"
export function hashFor(page: string, params: string[] = [], query?: Record<string, string>): string {
  let h = `#/${[page, ...params].map((p) => encodeURIComponent(p)).join("/")}`;
  if (query) {
    const qs = new URLSearchParams(query).toString();
    if (qs) h += `?${qs}`;
  }
  return h;
}

export function taskHash(ns: string, id: string): string {
  return hashFor("task", [ns, id]);
}

export function navigate(hash: string): void {
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent("hashchange"));
  else location.hash = hash;
}

export function currentRoute(): Route {
  return parseHash(location.hash);
}

export function startRouter(render: (route: Route) => void): void {
  window.addEventListener("hashchange", () => render(currentRoute()));
  render(currentRoute());
}
