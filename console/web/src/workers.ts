// Workers seen in a window (/api/workers): name, language, host, queues, last seen, counts.
import { describeError, getJson } from "./api";
import { el, field, notice, replace, select, table, type Column } from "./dom";
import { fmtAgo, fmtInt, fmtTime } from "./format";
import type { Cleanup } from "./page";
import type { Route } from "./router";
import type { Worker, Workers } from "./types";

const WINDOWS: [string, string][] = [
  ["60000", "last minute"],
  ["600000", "last 10 minutes"],
  ["3600000", "last hour"],
  ["86400000", "last 24 hours"],
  ["604800000", "last 7 days"],
];

export function renderWorkers(view: HTMLElement, _route: Route): Cleanup {
  let alive = true;
  const win = select("window", WINDOWS, "600000", { testid: "workers-window" });
  const summary = el("div", { class: "chips" });
  const box = el("div", { class: "table-wrap" }, notice("Loading…"));
  view.append(el("div", { class: "page-head" }, el("h2", null, "Workers"), el("div", { class: "spacer" }), field("Seen in the", win)), el("section", { class: "card" }, summary, box));

  async function load(): Promise<void> {
    try {
      const w = await getJson<Workers>("/api/workers", { window_ms: win.value });
      if (!alive) return;
      const now = Date.now();
      replace(
        summary,
        ...Object.entries(w.by_language ?? {})
          .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
          .map(([lang, n]) => el("span", { class: "chip", testid: `workers-lang-${lang}` }, `${lang}: ${fmtInt(n)}`)),
      );
      const cols: Column<Worker>[] = [
        { head: "name", class: "mono small", cell: (r) => r.name },
        { head: "language", cell: (r) => r.language },
        { head: "host", cell: (r) => r.host },
        { head: "service", cell: (r) => r.service },
        { head: "queues", cell: (r) => el("div", { class: "queues" }, ...(r.queues ?? []).map((q) => el("span", { class: "chip" }, `${q.namespace}/${q.type}`))) },
        { head: "last seen", cell: (r) => el("span", { attrs: { title: fmtTime(r.last_seen_ms) } }, fmtAgo(r.last_seen_ms, now)) },
        { head: "first seen", cell: (r) => fmtTime(r.first_seen_ms) },
        { head: "pending", class: "num", cell: (r) => fmtInt(r.pending) },
        { head: "started", class: "num", cell: (r) => fmtInt(r.started) },
        { head: "succeeded", class: "num", cell: (r) => fmtInt(r.succeeded) },
        { head: "failed", class: "num", cell: (r) => fmtInt(r.failed) },
      ];
      replace(box, table(cols, w.workers ?? [], (r) => ({ testid: "worker-row", attrs: { "data-worker": r.name } }), "no worker seen in this window"));
    } catch (e) {
      if (alive) replace(box, notice(`The workers cannot be loaded: ${describeError(e)}`, "error"));
    }
  }

  win.addEventListener("change", () => void load());
  void load();
  const timer = window.setInterval(() => void load(), 15000);
  return () => {
    alive = false;
    window.clearInterval(timer);
  };
}
