// The doctor (/api/doctor): why one task is where it is (ns + id), or how a queue is doing
// (ns + type). #/doctor?ns=..&id=.. or ?ns=..&type=.. fills the form and asks at once.
import { describeError, getJson } from "./api";
import { el, field, input, link, notice, replace, table, type Column } from "./dom";
import { fmtDuration, fmtInt } from "./format";
import type { Cleanup } from "./page";
import { hashFor, taskHash, type Route } from "./router";
import type { QueueDiagnosis, QueueInfo, Verdict } from "./types";

function factValue(v: unknown): string {
  if (v === null || v === undefined) return "—";
  if (typeof v === "number") return fmtInt(v);
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}

function verdictCard(v: Verdict): HTMLElement {
  const facts = Object.entries(v.facts ?? {});
  return el(
    "article",
    { class: `verdict severity-${v.severity}`, testid: "doctor-verdict", attrs: { "data-code": v.code, "data-severity": v.severity } },
    el("div", { class: "verdict-head" }, el("span", { class: `badge severity-badge-${v.severity}`, testid: "doctor-severity" }, v.severity), " ", el("code", { testid: "doctor-code" }, v.code)),
    el("p", { class: "verdict-message", testid: "doctor-message" }, v.message),
    facts.length ? el("dl", { class: "facts-list" }, ...facts.flatMap(([k, val]) => [el("dt", null, k), el("dd", { class: "mono" }, factValue(val))])) : null,
  );
}

function queueSummary(q: QueueInfo): HTMLElement {
  const cols: Column<QueueInfo>[] = [
    { head: "ready", class: "num", cell: (r) => fmtInt(r.ready) },
    { head: "in flight", class: "num", cell: (r) => fmtInt(r.in_flight) },
    { head: "expired leases", class: "num", cell: (r) => fmtInt(r.expired_leases) },
    { head: "delayed", class: "num", cell: (r) => fmtInt(r.delayed) },
    { head: "retrying", class: "num", cell: (r) => fmtInt(r.retrying) },
    { head: "dead", class: "num", cell: (r) => fmtInt(r.dead) },
    { head: "live consumers", class: "num", cell: (r) => `${fmtInt(r.live_consumers)} / ${fmtInt(r.consumers)}` },
    { head: "oldest", class: "num", cell: (r) => (r.oldest_age_ms === null ? "—" : fmtDuration(r.oldest_age_ms)) },
  ];
  return el("div", { class: "table-wrap" }, table(cols, [q]));
}

export function renderDoctor(view: HTMLElement, route: Route): Cleanup {
  let alive = true;
  const q = route.query;
  const fNs = input("ns", { testid: "doctor-ns", attrs: { required: true, value: q.get("ns") ?? "" } });
  const fId = input("id", { testid: "doctor-id", attrs: { placeholder: "a task id", value: q.get("id") ?? "" } });
  const fType = input("type", { testid: "doctor-type", attrs: { placeholder: "or a task type", value: q.get("type") ?? "" } });
  const go = el("button", { class: "primary", testid: "doctor-submit" }, "Diagnose");
  go.type = "submit";
  const form = el("form", { class: "filters", attrs: { action: "#", method: "get" } }, field("Namespace", fNs), field("Task id", fId), field("Task type", fType), go);
  const out = el("div", { class: "doctor-out" });
  view.append(el("div", { class: "page-head" }, el("h2", null, "Doctor")), el("section", { class: "card" }, el("p", { class: "muted" }, "Give a namespace and a task id (why is this task where it is?) or a namespace and a task type (how is this queue?)."), form), out);

  async function ask(): Promise<void> {
    const ns = fNs.value.trim();
    const id = fId.value.trim();
    const type = fType.value.trim();
    if (!ns || (!id && !type)) {
      replace(out, notice("Give the namespace and a task id or a task type.", "error"));
      return;
    }
    replace(out, notice("Asking…"));
    try {
      if (id) {
        const v = await getJson<Verdict>("/api/doctor", { ns, id });
        if (!alive) return;
        replace(out, el("section", { class: "card" }, el("h3", null, "Task ", link(taskHash(ns, id), id, { class: "mono" })), verdictCard(v)));
      } else {
        const d = await getJson<QueueDiagnosis>("/api/doctor", { ns, type });
        if (!alive) return;
        replace(out, el("section", { class: "card" }, el("h3", null, `Queue ${ns}/${type}`), d.queue ? queueSummary(d.queue) : null, ...(d.findings ?? []).map(verdictCard)));
      }
    } catch (e) {
      if (alive) replace(out, notice(`The doctor failed: ${describeError(e)}`, "error"));
    }
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const query: Record<string, string> = { ns: fNs.value.trim() };
    if (fId.value.trim()) query.id = fId.value.trim();
    else if (fType.value.trim()) query.type = fType.value.trim();
    const hash = hashFor("doctor", [], query);
    if (location.hash !== hash) history.replaceState(null, "", hash);
    void ask();
  });
  if (q.get("ns") && (q.get("id") || q.get("type"))) void ask();
  return () => {
    alive = false;
  };
}
