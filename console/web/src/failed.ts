// Failed tasks: search the store's dead tasks (/api/dead), act on one (replay, edit & replay,
// delete) and in bulk by filter (preview, then replay all / delete all with the previewed count).
import { deleteTask, payloadEditor, replayTask } from "./actions";
import { ApiError, describeError, getJson, postJson } from "./api";
import { button, el, field, input, link, notice, replace, table, type Column } from "./dom";
import { fmtDuration, fmtInt, fmtTime, localInputToMs } from "./format";
import type { Cleanup } from "./page";
import { taskHash, type Route } from "./router";
import { canAct, canBulk } from "./session";
import { toast } from "./toast";
import type { DeadBatchResult, DeadList, DeadPreview, InspectorDeadTask, StoreDeadTask } from "./types";

const PAGE_SIZE = 100;

function namespaceList(): HTMLDataListElement {
  const list = el("datalist", { attrs: { id: "ns-options" } });
  getJson<{ namespaces: string[] }>("/api/namespaces")
    .then((r) => {
      for (const ns of r.namespaces ?? []) {
        const o = el("option");
        o.value = ns;
        list.appendChild(o);
      }
    })
    .catch(() => undefined);
  return list;
}

export function renderFailed(view: HTMLElement, route: Route): Cleanup {
  let alive = true;
  const q = route.query;

  // ---- search ----
  const fNs = input("ns", { testid: "failed-ns", attrs: { list: "ns-options", placeholder: "any", value: q.get("ns") ?? "" } });
  const fType = input("type", { testid: "failed-type", attrs: { placeholder: "any", value: q.get("type") ?? "" } });
  const fText = input("text", { testid: "failed-text", attrs: { placeholder: "part of the last error", value: q.get("text") ?? "" } });
  const fFrom = input("from", { testid: "failed-from" }, "datetime-local");
  const fTo = input("to", { testid: "failed-to" }, "datetime-local");
  const searchBtn = el("button", { class: "primary", testid: "failed-search" }, "Search");
  searchBtn.type = "submit";
  const form = el("form", { class: "filters", attrs: { action: "#", method: "get" } }, field("Namespace", fNs), field("Type", fType), field("Error text", fText), field("Died from", fFrom), field("to", fTo), searchBtn);
  const results = el("div", { class: "table-wrap" }, notice("Loading…"));
  const pager = el("div", { class: "pager" });
  let offset = 0;

  function removeRow(tr: HTMLTableRowElement): void {
    const next = tr.nextElementSibling;
    if (next && next.classList.contains("editor-row")) next.remove();
    tr.remove();
  }

  function openEditor(t: StoreDeadTask, tr: HTMLTableRowElement): void {
    const existing = tr.nextElementSibling;
    if (existing && existing.classList.contains("editor-row")) {
      existing.remove();
      return;
    }
    const td = el("td");
    td.colSpan = tr.children.length;
    const editorRow = el("tr", { class: "editor-row" }, td);
    td.appendChild(payloadEditor(t.namespace, t.task_id, () => removeRow(tr), () => editorRow.remove()));
    tr.after(editorRow);
  }

  function actionsCell(t: StoreDeadTask): HTMLElement | string {
    if (!canAct()) return "";
    const box = el("div", { class: "row-actions" });
    const getRow = () => box.closest("tr") as HTMLTableRowElement;
    const rb = button("Replay", () => {
      rb.disabled = true;
      const tr = getRow();
      void replayTask(t.namespace, t.task_id).then((ok) => {
        if (ok) removeRow(tr);
        else rb.disabled = false;
      });
    }, { testid: "replay-button" });
    box.append(
      rb,
      button("Edit & replay", () => openEditor(t, getRow()), { testid: "edit-replay-button" }),
      button("Delete", () => {
        const tr = getRow();
        void deleteTask(t.namespace, t.task_id, t.type).then((ok) => {
          if (ok) removeRow(tr);
        });
      }, { class: "danger", testid: "delete-button" }),
    );
    return box;
  }

  async function search(): Promise<void> {
    const fromMs = localInputToMs(fFrom.value);
    const toMs = localInputToMs(fTo.value);
    replace(results, notice("Searching…"));
    try {
      const r = await getJson<DeadList>("/api/dead", {
        ns: fNs.value.trim(),
        type: fType.value.trim(),
        text: fText.value,
        from_ms: fromMs,
        to_ms: toMs,
        limit: PAGE_SIZE,
        offset,
      });
      if (!alive) return;
      const now = Date.now();
      const cols: Column<StoreDeadTask>[] = [
        { head: "task id", class: "mono", cell: (t) => link(taskHash(t.namespace, t.task_id), t.task_id, { testid: "failed-task-link" }) },
        { head: "namespace", cell: (t) => t.namespace },
        { head: "type", cell: (t) => t.type },
        { head: "attempts", class: "num", cell: (t) => fmtInt(t.attempt) },
        { head: "died", class: "time", cell: (t) => el("span", { attrs: { title: `${fmtDuration(now - t.died_at_ms)} ago` } }, fmtTime(t.died_at_ms)) },
        { head: "worker", class: "mono small", cell: (t) => t.worker },
        { head: "last error", class: "error-cell", cell: (t) => el("span", { class: "clamp", attrs: { title: t.error } }, t.kind ? `[${t.kind}] ${t.error}` : t.error) },
      ];
      if (canAct()) cols.push({ head: "", cell: actionsCell });
      replace(results, table(cols, r.tasks ?? [], (t) => ({ testid: "failed-row", attrs: { "data-task-id": t.task_id, "data-ns": t.namespace } }), "no dead task matches"));
      const n = (r.tasks ?? []).length;
      replace(
        pager,
        el("span", { class: "muted" }, n ? `${fmtInt(offset + 1)}–${fmtInt(offset + n)}` : ""),
        offset > 0 ? button("← Newer", () => { offset = Math.max(0, offset - PAGE_SIZE); void search(); }) : null,
        n === PAGE_SIZE ? button("Older →", () => { offset += PAGE_SIZE; void search(); }) : null,
      );
    } catch (e) {
      if (alive) replace(results, notice(`The search failed: ${describeError(e)}`, "error"));
    }
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    offset = 0;
    void search();
  });

  // ---- bulk ----
  const bNs = input("bulk-ns", { testid: "bulk-ns", attrs: { list: "ns-options", required: true, value: q.get("ns") ?? "" } });
  const bType = input("bulk-type", { testid: "bulk-type", attrs: { placeholder: "any" } });
  const bSince = input("bulk-since", { testid: "bulk-since" }, "datetime-local");
  const bUntil = input("bulk-until", { testid: "bulk-until" }, "datetime-local");
  const previewBtn = el("button", { testid: "bulk-preview" }, "Preview");
  previewBtn.type = "submit";
  const bForm = el("form", { class: "filters", attrs: { action: "#", method: "get" } }, field("Namespace", bNs), field("Type", bType), field("Dead since", bSince), field("until", bUntil), previewBtn);
  const bResult = el("div", { class: "bulk-result" });

  interface BulkFilter {
    ns: string;
    type?: string;
    since_ms?: number;
    until_ms?: number;
  }

  async function runBulk(action: "replay" | "delete", filter: BulkFilter, expect: number): Promise<void> {
    const what = `${action === "replay" ? "Replay" : "Delete"} all ${fmtInt(expect)} dead tasks of ${filter.ns}${filter.type ? `/${filter.type}` : ""}`;
    if (action === "delete" && !window.confirm(`${what}? This cannot be undone.`)) return;
    for (const b of bResult.querySelectorAll("button")) b.disabled = true;
    try {
      const r = await postJson<DeadBatchResult>("/api/dead/bulk", { action, ...filter, expect });
      const failed = r.failed ?? [];
      toast(`${action === "replay" ? "Replayed" : "Deleted"} ${fmtInt(r.succeeded)} of ${fmtInt(r.matched)}${failed.length ? `; ${fmtInt(failed.length)} failed` : ""}`, failed.length ? "error" : "ok");
      replace(
        bResult,
        el("p", { testid: "bulk-done" }, `${action === "replay" ? "Replayed" : "Deleted"} ${fmtInt(r.succeeded)} of ${fmtInt(r.matched)} matched.`),
        failed.length
          ? table([{ head: "task id", class: "mono", cell: (f: { task_id: string; error: string }) => f.task_id }, { head: "error", cell: (f) => f.error }], failed)
          : null,
      );
      offset = 0;
      void search();
    } catch (e) {
      const stale = e instanceof ApiError && e.status === 409;
      toast(stale ? `The preview is stale: ${describeError(e)}. Preview again.` : `${what} failed: ${describeError(e)}`, "error");
      if (stale) replace(bResult, notice("The filter now matches another number of tasks: preview again.", "error"));
      else for (const b of bResult.querySelectorAll("button")) b.disabled = false;
    }
  }

  async function preview(): Promise<void> {
    const ns = bNs.value.trim();
    if (!ns) {
      replace(bResult, notice("namespace: required", "error"));
      return;
    }
    const filter: BulkFilter = { ns };
    if (bType.value.trim()) filter.type = bType.value.trim();
    const since = localInputToMs(bSince.value);
    const until = localInputToMs(bUntil.value);
    if (since !== undefined) filter.since_ms = since;
    if (until !== undefined) filter.until_ms = until;
    replace(bResult, notice("Counting…"));
    try {
      const p = await postJson<DeadPreview>("/api/dead/preview", filter);
      if (!alive) return;
      const n = p.matched ?? 0;
      const cols: Column<InspectorDeadTask>[] = [
        { head: "task id", class: "mono", cell: (t) => link(taskHash(ns, t.task_id), t.task_id) },
        { head: "type", cell: (t) => t.type },
        { head: "dead since", class: "time", cell: (t) => fmtTime(t.dead_since_ms) },
        { head: "attempts", class: "num", cell: (t) => fmtInt(t.attempts) },
        { head: "last error", class: "error-cell", cell: (t) => el("span", { class: "clamp", attrs: { title: t.last_error } }, t.kind ? `[${t.kind}] ${t.last_error}` : t.last_error) },
      ];
      const actions = el("div", { class: "actions" });
      if (canBulk() && n > 0) {
        actions.append(
          button(`Replay all ${fmtInt(n)}`, () => void runBulk("replay", filter, n), { class: "primary", testid: "bulk-replay" }),
          button(`Delete all ${fmtInt(n)}`, () => void runBulk("delete", filter, n), { class: "danger", testid: "bulk-delete" }),
        );
      }
      replace(
        bResult,
        el("p", { class: "bulk-count", testid: "bulk-count", attrs: { "data-count": n } }, `${fmtInt(n)} ${n === 1 ? "task matches" : "tasks match"}`),
        (p.sample ?? []).length ? el("div", { class: "table-wrap" }, table(cols, p.sample ?? [], (t) => ({ testid: "bulk-sample-row", attrs: { "data-task-id": t.task_id } }))) : null,
        (p.sample ?? []).length < n ? el("p", { class: "muted" }, `showing ${fmtInt((p.sample ?? []).length)} of ${fmtInt(n)}`) : null,
        actions,
      );
    } catch (e) {
      if (alive) replace(bResult, notice(`The preview failed: ${describeError(e)}`, "error"));
    }
  }

  bForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void preview();
  });
  // A changed filter invalidates the preview and its buttons.
  for (const i of [bNs, bType, bSince, bUntil]) i.addEventListener("input", () => bResult.replaceChildren());

  view.append(
    namespaceList(),
    el("div", { class: "page-head" }, el("h2", null, "Failed tasks")),
    el("section", { class: "card" }, form, results, pager),
    el(
      "section",
      { class: "card bulk" },
      el("h3", null, "Bulk by filter"),
      el("p", { class: "muted" }, canBulk() ? "Preview what a filter matches (live from Redis), then replay or delete all of them." : "Preview what a filter matches (live from Redis). Bulk actions are for admins."),
      bForm,
      bResult,
    ),
  );

  void search();
  return () => {
    alive = false;
  };
}
