// Cron jobs (/api/cron): schedule, zone, the next fire times read in the job's own zone, the last
// outcomes, and the enabled toggle for operators.
import { describeError, getJson, postJson } from "./api";
import { el, link, notice, replace, table, type Column } from "./dom";
import { fmtInZone, fmtTime } from "./format";
import type { Cleanup } from "./page";
import { taskHash, type Route } from "./router";
import { canAct } from "./session";
import { toast } from "./toast";
import type { CronJob, CronList, CronUnreadable } from "./types";

function jobNs(j: CronJob): string {
  return j.ns ?? j.namespace ?? "";
}

export function renderCron(view: HTMLElement, _route: Route): Cleanup {
  let alive = true;
  const box = el("div", { class: "table-wrap" }, notice("Loading…"));
  const unreadableBox = el("div");
  view.append(el("div", { class: "page-head" }, el("h2", null, "Cron jobs")), el("section", { class: "card" }, box), unreadableBox);

  function toggle(j: CronJob, btn: HTMLButtonElement): void {
    const enabled = !j.enabled;
    btn.disabled = true;
    postJson("/api/cron/enable", { name: j.name, enabled })
      .then(() => {
        toast(`${enabled ? "Enabled" : "Disabled"} ${j.name}`);
        void load();
      })
      .catch((e: unknown) => {
        toast(`${j.name}: ${describeError(e)}`, "error");
        btn.disabled = false;
      });
  }

  async function load(): Promise<void> {
    try {
      const c = await getJson<CronList>("/api/cron");
      if (!alive) return;
      const cols: Column<CronJob>[] = [
        { head: "name", class: "mono", cell: (j) => j.name },
        { head: "schedule", class: "mono", cell: (j) => j.schedule },
        { head: "time zone", cell: (j) => j.timezone || "UTC" },
        { head: "task", cell: (j) => `${jobNs(j)}/${j.task_type}` },
        {
          head: "enabled",
          cell: (j) => {
            const state = el("span", { class: j.enabled ? "badge badge-ok" : "badge badge-off", testid: "cron-enabled" }, j.enabled ? "enabled" : "disabled");
            if (!canAct()) return state;
            const b = el("button", { testid: "cron-toggle" }, j.enabled ? "Disable" : "Enable");
            b.type = "button";
            b.addEventListener("click", () => toggle(j, b));
            return el("div", { class: "row-actions" }, state, b);
          },
        },
        {
          head: "next fire times (job's zone)",
          cell: (j) => el("ul", { class: "plain" }, ...(j.next ?? []).map((s) => el("li", { attrs: { title: fmtTime(s * 1000) } }, fmtInZone(s, j.timezone || "UTC")))),
        },
        {
          head: "last runs",
          cell: (j) =>
            (j.last ?? []).length === 0
              ? el("span", { class: "muted" }, "none")
              : el(
                  "ul",
                  { class: "plain" },
                  ...(j.last ?? []).map((l) =>
                    el("li", null, el("span", { class: `state state-${l.state}` }, l.state), " ", link(taskHash(jobNs(j), l.task_id), l.task_id, { class: "mono small" }), " ", el("span", { class: "muted" }, fmtTime(l.updated_ms))),
                  ),
                ),
        },
        { head: "missed", cell: (j) => j.missed ?? "skip" },
        { head: "max retry", class: "num", cell: (j) => String(j.max_retry ?? "") },
        { head: "timeout", class: "num", cell: (j) => (j.execution_timeout ? `${j.execution_timeout} s` : "—") },
      ];
      replace(box, table(cols, c.jobs ?? [], (j) => ({ testid: "cron-row", attrs: { "data-name": j.name, "data-enabled": j.enabled ? "true" : "false" } }), "no cron job defined"));
      const bad = c.unreadable ?? [];
      const ucols: Column<CronUnreadable>[] = [
        { head: "name", class: "mono", cell: (u) => u.name },
        { head: "error", cell: (u) => u.error },
        { head: "stored definition", cell: (u) => el("pre", { class: "small" }, u.definition) },
      ];
      replace(unreadableBox, bad.length ? el("section", { class: "card" }, el("h3", null, "Unreadable definitions (batond skips them)"), el("div", { class: "table-wrap" }, table(ucols, bad, () => ({ testid: "cron-unreadable-row" })))) : null);
    } catch (e) {
      if (alive) replace(box, notice(`The cron jobs cannot be loaded: ${describeError(e)}`, "error"));
    }
  }

  void load();
  return () => {
    alive = false;
  };
}
