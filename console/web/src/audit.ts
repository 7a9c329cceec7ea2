// The audit log (admins): every action, newest first (/api/audit).
import { describeError, getJson } from "./api";
import { button, el, notice, replace, table, type Column } from "./dom";
import { fmtInt, fmtTime } from "./format";
import type { Cleanup } from "./page";
import type { Route } from "./router";
import type { AuditEntry, AuditList } from "./types";

const PAGE_SIZE = 100;

function text(v: unknown): string {
  if (v === null || v === undefined) return "";
  if (typeof v === "string") return v;
  if (Array.isArray(v)) return v.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(", ");
  return JSON.stringify(v);
}

export function renderAudit(view: HTMLElement, _route: Route): Cleanup {
  let alive = true;
  let offset = 0;
  const box = el("div", { class: "table-wrap" }, notice("Loading…"));
  const pager = el("div", { class: "pager" });
  view.append(el("div", { class: "page-head" }, el("h2", null, "Audit log")), el("section", { class: "card" }, box, pager));

  async function load(): Promise<void> {
    try {
      const a = await getJson<AuditList>("/api/audit", { limit: PAGE_SIZE, offset });
      if (!alive) return;
      const cols: Column<AuditEntry>[] = [
        { head: "time", class: "time", cell: (r) => fmtTime(r.at_ms) },
        { head: "user", cell: (r) => r.user },
        { head: "role", cell: (r) => r.role },
        { head: "action", cell: (r) => r.action },
        { head: "namespace", cell: (r) => r.ns },
        { head: "target", class: "mono small", cell: (r) => r.target },
        { head: "task ids", class: "mono small", cell: (r) => el("span", { class: "clamp", attrs: { title: text(r.task_ids) } }, text(r.task_ids)) },
        { head: "outcome", cell: (r) => el("span", { class: `outcome outcome-${text(r.outcome).split(/[^a-z_]/)[0] ?? ""}` }, text(r.outcome)) },
        { head: "detail", class: "error-cell", cell: (r) => el("span", { class: "clamp", attrs: { title: text(r.detail) } }, text(r.detail)) },
        { head: "from", class: "small", cell: (r) => text(r.remote) },
      ];
      const entries = a.entries ?? [];
      replace(box, table(cols, entries, (r) => ({ testid: "audit-row", attrs: { "data-action": r.action } }), "no action recorded"));
      replace(
        pager,
        el("span", { class: "muted" }, entries.length ? `${fmtInt(offset + 1)}–${fmtInt(offset + entries.length)}` : ""),
        offset > 0 ? button("← Newer", () => { offset = Math.max(0, offset - PAGE_SIZE); void load(); }) : null,
        entries.length === PAGE_SIZE ? button("Older →", () => { offset += PAGE_SIZE; void load(); }) : null,
      );
    } catch (e) {
      if (alive) replace(box, notice(`The audit log cannot be loaded: ${describeError(e)}`, "error"));
    }
  }

  void load();
  return () => {
    alive = false;
  };
}
