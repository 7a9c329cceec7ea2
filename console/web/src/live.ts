// Live flow: the server pushes `event: snapshot` on /api/live (Server-Sent Events). Per queue the
// depth, consumers and rates; the workers by language and host; a rolling chart of total depth.
import type uPlot from "uplot";
import { getJson } from "./api";
import { timeChart, type Chart } from "./charts";
import { el, notice, replace, setText, table, type Column } from "./dom";
import { fmtDuration, fmtInt, fmtNum, fmtTime } from "./format";
import type { Cleanup } from "./page";
import type { Route } from "./router";
import type { LiveSnapshot, QueueInfo, Session, Worker } from "./types";

const HISTORY = 300; // snapshots kept for the rolling chart

type ConnState = "connecting" | "live" | "reconnecting" | "closed";

function perMinute(count: number, windowMs: number): number {
  return windowMs > 0 ? (count * 60000) / windowMs : count;
}

function queueTable(ns: string, queues: QueueInfo[]): HTMLTableElement {
  const rate = (q: QueueInfo, n: number) => `${fmtNum(perMinute(n, q.rate?.window_ms ?? 60000))}${q.rate && !q.rate.exact ? "~" : ""}`;
  const cols: Column<QueueInfo>[] = [
    { head: "type", cell: (q) => q.type },
    { head: "ready", class: "num", cell: (q) => `${fmtInt(q.ready)}${q.ready_exact === false ? "+" : ""}` },
    { head: "in flight", class: "num", cell: (q) => fmtInt(q.in_flight) },
    { head: "expired leases", class: "num", cell: (q) => fmtInt(q.expired_leases) },
    { head: "delayed", class: "num", cell: (q) => fmtInt(q.delayed) },
    { head: "retrying", class: "num", cell: (q) => fmtInt(q.retrying) },
    { head: "dead", class: "num", cell: (q) => fmtInt(q.dead) },
    { head: "live consumers", class: "num", cell: (q) => `${fmtInt(q.live_consumers)} / ${fmtInt(q.consumers)}` },
    { head: "oldest", class: "num", cell: (q) => (q.oldest_age_ms === null || q.oldest_age_ms === undefined ? "—" : fmtDuration(q.oldest_age_ms)) },
    { head: "queued/min", class: "num", cell: (q) => rate(q, q.rate?.queued ?? 0) },
    { head: "started/min", class: "num", cell: (q) => rate(q, q.rate?.started ?? 0) },
    { head: "done/min", class: "num", cell: (q) => rate(q, q.rate?.done ?? 0) },
    { head: "failed/min", class: "num", cell: (q) => rate(q, q.rate?.failed ?? 0) },
  ];
  return table(cols, queues, (q) => ({
    testid: `live-queue-${ns}-${q.type}`,
    class: q.dead > 0 ? "has-dead" : undefined,
    attrs: { "data-ns": ns, "data-type": q.type },
  }), "no queue");
}

function countBy(workers: Worker[], key: (w: Worker) => string): [string, number][] {
  const m = new Map<string, number>();
  for (const w of workers) m.set(key(w), (m.get(key(w)) ?? 0) + 1);
  return [...m.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}

function chips(entries: [string, number][], testidPrefix: string): HTMLElement {
  if (entries.length === 0) return el("span", { class: "muted" }, "none");
  return el("div", { class: "chips" }, ...entries.map(([k, n]) => el("span", { class: "chip", testid: `${testidPrefix}-${k}` }, `${k}: ${fmtInt(n)}`)));
}

export function renderLive(view: HTMLElement, _route: Route): Cleanup {
  let closed = false;
  const statusEl = el("span", { class: "live-status", testid: "live-status", attrs: { "data-state": "connecting" } }, "connecting…");
  const asOf = el("span", { class: "muted" });
  const errorBox = el("div");
  const chartBox = el("div", { class: "chart" });
  const queuesBox = el("div", { class: "ns-list" }, notice("Waiting for the first snapshot…"));
  const workersBox = el("div", { class: "card" });
  view.append(
    el("div", { class: "page-head" }, el("h2", null, "Live flow"), statusEl, asOf),
    errorBox,
    el("section", { class: "card" }, el("h3", null, "Depth, all queues"), chartBox),
    queuesBox,
    el("h2", null, "Workers (last 60 s)"),
    workersBox,
  );

  const hist: { x: number[]; ready: number[]; inflight: number[]; scheduled: number[]; dead: number[] } = {
    x: [],
    ready: [],
    inflight: [],
    scheduled: [],
    dead: [],
  };
  let chart: Chart | null = null;

  function setState(state: ConnState, text: string): void {
    statusEl.setAttribute("data-state", state);
    setText(statusEl, text);
  }

  function pushHistory(s: LiveSnapshot): void {
    let ready = 0;
    let inflight = 0;
    let scheduled = 0;
    let dead = 0;
    for (const n of s.namespaces ?? []) {
      for (const q of n.queues ?? []) {
        ready += q.ready ?? 0;
        inflight += q.in_flight ?? 0;
        scheduled += (q.delayed ?? 0) + (q.retrying ?? 0);
        dead += q.dead ?? 0;
      }
    }
    const x = (s.now_ms || Date.now()) / 1000;
    const last = hist.x[hist.x.length - 1];
    if (last !== undefined && x <= last) return; // a repeated or older snapshot
    hist.x.push(x);
    hist.ready.push(ready);
    hist.inflight.push(inflight);
    hist.scheduled.push(scheduled);
    hist.dead.push(dead);
    if (hist.x.length > HISTORY) for (const a of Object.values(hist)) a.shift();
    const data = [hist.x, hist.ready, hist.inflight, hist.scheduled, hist.dead] as uPlot.AlignedData;
    if (chart) chart.setData(data);
    else if (hist.x.length < 2) {
      replace(chartBox, notice("Collecting…"));
    } else {
      chartBox.replaceChildren();
      chart = timeChart(
        chartBox,
        {
          height: 180,
          series: [
            { label: "ready", color: "#3b6fd8", fill: true },
            { label: "in flight", color: "#2e9d4f" },
            { label: "delayed + retrying", color: "#e0a020" },
            { label: "dead", color: "#d03b3b" },
          ],
        },
        data,
      );
    }
  }

  function showSnapshot(s: LiveSnapshot): void {
    setText(asOf, `as of ${fmtTime(s.now_ms)}`);
    replace(errorBox, s.error ? notice(`Redis: ${s.error}`, "error") : null);
    const nss = s.namespaces ?? [];
    if (nss.length === 0) replace(queuesBox, notice("No namespace in Redis yet."));
    else
      replace(
        queuesBox,
        ...nss.map((n) =>
          el("section", { class: "card", testid: `live-ns-${n.ns}`, attrs: { "data-ns": n.ns } }, el("h3", null, n.ns), el("div", { class: "table-wrap" }, queueTable(n.ns, n.queues ?? []))),
        ),
      );
    const workers = s.workers?.workers ?? [];
    const byLanguage: [string, number][] = s.workers?.by_language
      ? Object.entries(s.workers.by_language).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      : countBy(workers, (w) => w.language || "unknown");
    replace(
      workersBox,
      el("div", { class: "kv" }, el("span", { class: "kv-key" }, "by language"), chips(byLanguage, "live-lang")),
      el("div", { class: "kv" }, el("span", { class: "kv-key" }, "by host"), chips(countBy(workers, (w) => w.host || "(unknown host)"), "live-host")),
      el("div", { class: "kv" }, el("span", { class: "kv-key" }, "workers"), fmtInt(workers.length)),
    );
    pushHistory(s);
  }

  let source: EventSource | null = null;
  let retryTimer = 0;

  function connect(): void {
    if (closed) return;
    setState(source ? "reconnecting" : "connecting", source ? "reconnecting…" : "connecting…");
    source = new EventSource("/api/live");
    const es = source;
    es.addEventListener("open", () => {
      if (!closed && es === source) setState("live", "live");
    });
    es.addEventListener("snapshot", (ev) => {
      if (closed || es !== source) return;
      setState("live", "live");
      try {
        showSnapshot(JSON.parse((ev as MessageEvent<string>).data) as LiveSnapshot);
      } catch (e) {
        replace(errorBox, notice(`A snapshot could not be read: ${e instanceof Error ? e.message : String(e)}`, "error"));
      }
    });
    es.addEventListener("error", () => {
      if (closed || es !== source) return;
      if (es.readyState === EventSource.CLOSED) {
        // The browser gave up (e.g. a 401 or 5xx answer): check the session, then retry.
        setState("reconnecting", "disconnected, retrying…");
        getJson<Session>("/api/session")
          .then(() => {
            if (!closed) retryTimer = window.setTimeout(connect, 3000);
          })
          .catch(() => {
            if (!closed) retryTimer = window.setTimeout(connect, 5000);
          });
      } else {
        setState("reconnecting", "reconnecting…");
      }
    });
  }

  connect();

  return () => {
    closed = true;
    window.clearTimeout(retryTimer);
    source?.close();
    source = null;
    chart?.destroy();
    chart = null;
  };
}
