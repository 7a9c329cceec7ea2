// Overview: per namespace today's totals, per type rates and queue depth, a chart per
// (namespace, type) from /api/series over 1h/6h/24h, and the daily totals from /api/daily.
import type uPlot from "uplot";
import { describeError, getJson } from "./api";
import { timeChart, type Chart } from "./charts";
import { el, field, notice, replace, select, table, type Column } from "./dom";
import { fmtInt, fmtMs, fmtNum, fmtRate, fmtTime } from "./format";
import type { Cleanup } from "./page";
import type { Route } from "./router";
import type { Daily, DailyRow, NamespaceOverview, Overview, Series, TypeOverview } from "./types";

const RANGES: [string, string][] = [
  ["3600000", "last hour"],
  ["21600000", "last 6 hours"],
  ["86400000", "last 24 hours"],
];

const REFRESH_MS = 30000;
const MINUTE = 60000;

interface NsCard {
  root: HTMLElement;
  stats: HTMLElement;
  types: HTMLElement;
  typeSelect: HTMLSelectElement;
  chartBox: HTMLElement;
  chart: Chart | null;
  chartKey: string;
}

function stat(label: string, value: string, testid?: string): HTMLElement {
  return el("div", { class: "stat" }, el("div", { class: "stat-value", testid }, value), el("div", { class: "stat-label" }, label));
}

function typeTable(types: Record<string, TypeOverview>): HTMLTableElement {
  const rows = Object.keys(types)
    .sort()
    .map((name) => ({ name, t: types[name] as TypeOverview }));
  const cols: Column<{ name: string; t: TypeOverview }>[] = [
    { head: "type", cell: (r) => r.name },
    { head: "enqueued/min", class: "num", cell: (r) => fmtNum(r.t.per_minute_5m?.enqueued) },
    { head: "succeeded/min", class: "num", cell: (r) => fmtNum(r.t.per_minute_5m?.succeeded) },
    { head: "failed/min", class: "num", cell: (r) => fmtNum(r.t.per_minute_5m?.failed) },
    { head: "last hour ok", class: "num", cell: (r) => fmtInt(r.t.last_hour?.succeeded) },
    { head: "last hour dead", class: "num", cell: (r) => fmtInt(r.t.last_hour?.dead) },
    { head: "success", class: "num", cell: (r) => fmtRate(r.t.last_hour?.success_rate) },
    { head: "mean run", class: "num", cell: (r) => fmtMs(r.t.last_hour?.mean_run_ms) },
    { head: "p95 run", class: "num", cell: (r) => fmtMs(r.t.last_hour?.p95_run_ms) },
    { head: "ready", class: "num", cell: (r) => fmtInt(r.t.queue?.ready) },
    { head: "in flight", class: "num", cell: (r) => fmtInt(r.t.queue?.in_flight) },
    { head: "delayed", class: "num", cell: (r) => fmtInt(r.t.queue?.delayed) },
    { head: "retrying", class: "num", cell: (r) => fmtInt(r.t.queue?.retrying) },
    { head: "dead", class: "num", cell: (r) => fmtInt(r.t.queue?.dead) },
    { head: "live consumers", class: "num", cell: (r) => (r.t.queue ? `${fmtInt(r.t.queue.live_consumers)} / ${fmtInt(r.t.queue.consumers)}` : "—") },
  ];
  return table(cols, rows, (r) => ({ attrs: { "data-type": r.name } }), "no task type seen yet");
}

// Minutes without data are absent from the series: fill them with zero counts.
function seriesData(s: Series, fromMs: number, toMs: number): uPlot.AlignedData {
  const byMinute = new Map<number, Series["points"][number]>();
  for (const p of s.points) byMinute.set(p.minute_ms, p);
  const xs: number[] = [];
  const enq: number[] = [];
  const ok: number[] = [];
  const failed: number[] = [];
  const dead: number[] = [];
  const mean: (number | null)[] = [];
  for (let m = Math.floor(fromMs / MINUTE) * MINUTE; m < toMs; m += MINUTE) {
    const p = byMinute.get(m);
    xs.push(m / 1000);
    enq.push(p?.enqueued ?? 0);
    ok.push(p?.succeeded ?? 0);
    failed.push(p?.failed ?? 0);
    dead.push(p?.dead ?? 0);
    mean.push(p?.mean_run_ms ?? null);
  }
  return [xs, enq, ok, failed, dead, mean] as uPlot.AlignedData;
}

export function renderOverview(view: HTMLElement, _route: Route): Cleanup {
  let alive = true;
  const cards = new Map<string, NsCard>();
  const rangeSelect = select("range", RANGES, "3600000", { testid: "overview-range" });
  const status = el("span", { class: "muted" });
  const nsBox = el("div", { class: "ns-list" }, notice("Loading…"));
  const dailyDays = select("days", [["7", "7 days"], ["30", "30 days"], ["90", "90 days"], ["365", "365 days"]], "30", { testid: "daily-days" });
  const dailyBox = el("div", { class: "table-wrap" }, notice("Loading…"));

  view.append(
    el("div", { class: "page-head" }, el("h2", null, "Overview"), status, el("div", { class: "spacer" }), field("Charts", rangeSelect)),
    nsBox,
    el("div", { class: "page-head" }, el("h2", null, "Daily totals (UTC days)"), el("div", { class: "spacer" }), field("Show", dailyDays)),
    dailyBox,
  );

  async function loadChart(ns: string, card: NsCard): Promise<void> {
    const type = card.typeSelect.value;
    if (!type) {
      card.chart?.destroy();
      card.chart = null;
      replace(card.chartBox, notice("No task type to chart yet."));
      return;
    }
    const range = Number(rangeSelect.value);
    const toMs = Date.now();
    const fromMs = toMs - range;
    try {
      const s = await getJson<Series>("/api/series", { ns, type, from_ms: fromMs, to_ms: toMs });
      if (!alive) return;
      const data = seriesData(s, fromMs, toMs);
      const key = `${type}|${range}`;
      if (card.chart && card.chartKey === key) {
        card.chart.setData(data);
        return;
      }
      card.chart?.destroy();
      card.chartBox.replaceChildren();
      card.chartKey = key;
      card.chart = timeChart(
        card.chartBox,
        {
          series: [
            { label: "enqueued/min", color: "#3b6fd8" },
            { label: "succeeded/min", color: "#2e9d4f" },
            { label: "failed/min", color: "#e0a020" },
            { label: "dead/min", color: "#d03b3b" },
            { label: "mean run (ms)", color: "#8a55c9", scale: "ms" },
          ],
        },
        data,
      );
    } catch (e) {
      if (!alive) return;
      card.chart?.destroy();
      card.chart = null;
      card.chartKey = "";
      replace(card.chartBox, notice(`The series cannot be loaded: ${describeError(e)}`, "error"));
    }
  }

  function fillCard(card: NsCard, n: NamespaceOverview): void {
    const t = n.today;
    replace(
      card.stats,
      stat("enqueued today", fmtInt(t.enqueued), "overview-today-count"),
      stat("succeeded", fmtInt(t.succeeded)),
      stat("failed (retried)", fmtInt(t.failed)),
      stat("dead", fmtInt(t.dead)),
      stat("success rate", fmtRate(t.success_rate), "overview-success-rate"),
      stat("mean run time", fmtMs(t.mean_run_ms), "overview-mean-ms"),
      stat("p95 run time", fmtMs(t.p95_run_ms)),
    );
    if (!n.complete || n.events_lost > 0) {
      card.stats.appendChild(
        el(
          "div",
          { class: "warning" },
          `${fmtInt(n.events_lost)} events were lost before the collector read them` +
            (n.events_lost_last_detected_ms ? ` (last at ${fmtTime(n.events_lost_last_detected_ms)})` : "") +
            ": counts are incomplete.",
        ),
      );
    }
    replace(card.types, typeTable(n.types));
    const types = Object.keys(n.types).sort();
    const before = card.typeSelect.value;
    const same = types.length === card.typeSelect.options.length && types.every((ty, i) => card.typeSelect.options[i]?.value === ty);
    if (!same) {
      card.typeSelect.replaceChildren(...types.map((ty) => {
        const o = el("option", null, ty);
        o.value = ty;
        return o;
      }));
      card.typeSelect.value = types.includes(before) ? before : types[0] ?? "";
    }
  }

  function makeCard(ns: string): NsCard {
    const typeSelect = select("type", [], undefined, { attrs: { "aria-label": `task type of ${ns}` } });
    const card: NsCard = {
      root: el("section", { class: "card ns-card", testid: `overview-ns-${ns}`, attrs: { "data-ns": ns } }),
      stats: el("div", { class: "stats" }),
      types: el("div", { class: "table-wrap" }),
      typeSelect,
      chartBox: el("div", { class: "chart" }),
      chart: null,
      chartKey: "",
    };
    typeSelect.addEventListener("change", () => void loadChart(ns, card));
    card.root.append(
      el("h3", null, ns),
      card.stats,
      card.types,
      el("div", { class: "chart-head" }, el("span", null, "Per minute: "), field("type", typeSelect)),
      card.chartBox,
    );
    return card;
  }

  async function loadOverview(): Promise<void> {
    try {
      const o = await getJson<Overview>("/api/overview");
      if (!alive) return;
      status.textContent = `today ${o.day} (UTC), as of ${fmtTime(o.now_ms)}`;
      if (o.namespaces.length === 0) {
        replace(nsBox, notice("No namespace has any stored event yet. Is baton-collector running on this store?"));
        cards.clear();
        return;
      }
      if (cards.size === 0) nsBox.replaceChildren();
      for (const n of o.namespaces) {
        let card = cards.get(n.namespace);
        if (!card) {
          card = makeCard(n.namespace);
          cards.set(n.namespace, card);
          nsBox.appendChild(card.root);
        }
        fillCard(card, n);
        void loadChart(n.namespace, card);
      }
    } catch (e) {
      if (alive) replace(nsBox, notice(`The overview cannot be loaded: ${describeError(e)}`, "error"));
      for (const c of cards.values()) c.chart?.destroy();
      cards.clear();
    }
  }

  async function loadDaily(): Promise<void> {
    try {
      const d = await getJson<Daily>("/api/daily", { days: dailyDays.value });
      if (!alive) return;
      const cols: Column<DailyRow>[] = [
        { head: "day", cell: (r) => r.day },
        { head: "namespace", cell: (r) => r.namespace },
        { head: "enqueued", class: "num", cell: (r) => fmtInt(r.enqueued) },
        { head: "succeeded", class: "num", cell: (r) => fmtInt(r.succeeded) },
        { head: "failed", class: "num", cell: (r) => fmtInt(r.failed) },
        { head: "dead", class: "num", cell: (r) => fmtInt(r.dead) },
        { head: "replayed", class: "num", cell: (r) => fmtInt(r.replayed) },
        { head: "success", class: "num", cell: (r) => fmtRate(r.success_rate) },
        { head: "mean run", class: "num", cell: (r) => fmtMs(r.mean_run_ms) },
        { head: "p95 run", class: "num", cell: (r) => fmtMs(r.p95_run_ms) },
      ];
      replace(dailyBox, table(cols, d.days, () => ({ testid: "daily-row" }), `no data since ${d.from_day}`));
    } catch (e) {
      if (alive) replace(dailyBox, notice(`The daily totals cannot be loaded: ${describeError(e)}`, "error"));
    }
  }

  rangeSelect.addEventListener("change", () => {
    for (const [ns, card] of cards) void loadChart(ns, card);
  });
  dailyDays.addEventListener("change", () => void loadDaily());

  void loadOverview();
  void loadDaily();
  const timer = window.setInterval(() => void loadOverview(), REFRESH_MS);

  return () => {
    alive = false;
    window.clearInterval(timer);
    for (const c of cards.values()) c.chart?.destroy();
    cards.clear();
  };
}
