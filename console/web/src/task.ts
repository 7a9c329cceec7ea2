// One task (#/task/NS/ID): its state, the events of the store's timeline and of Redis merged, each
// attempt's error and stack, and the payload.
import { deleteTask, payloadEditor, replayTask } from "./actions";
import { ApiError, describeError, getJson, taskPath } from "./api";
import { button, el, notice, replace, table, type Column } from "./dom";
import { fmtBytes, fmtDuration, fmtInt, fmtTime, parseConsumer, utf8Bytes } from "./format";
import { isValidJson, reindentJson } from "./json";
import type { Cleanup } from "./page";
import { bodyPayloadText, fetchRawPayload, MAX_SHOWN_BYTES, payloadUrl } from "./payload";
import { currentRoute, hashFor, navigate, type Route } from "./router";
import { canAct } from "./session";
import type { TaskAnswer, TaskInfo, Timeline } from "./types";

interface Row {
  id: string;
  at_ms: number;
  from: string;
  to: string;
  attempt: number;
  worker: string;
  language: string;
  host: string;
  error: string;
  kind: string;
  stack: string;
  source: string;
}

// Store events and Redis events share the events-stream entry id: keep one row per id, the
// store's (it knows the worker's language and host), filling what it lacks from Redis.
export function mergeEvents(timeline: Timeline | null, live: TaskInfo | null): Row[] {
  const rows = new Map<string, Row>();
  for (const e of timeline?.events ?? []) {
    rows.set(e.entry_id || `t${rows.size}`, {
      id: e.entry_id,
      at_ms: e.at_ms,
      from: e.from,
      to: e.to,
      attempt: e.attempt,
      worker: e.worker ?? "",
      language: e.language ?? "",
      host: e.host ?? "",
      error: e.error ?? "",
      kind: e.kind ?? "",
      stack: e.stack ?? "",
      source: "store",
    });
  }
  for (const e of live?.events ?? []) {
    const known = rows.get(e.event_id);
    if (known) {
      if (!known.error && e.error) known.error = e.error;
      known.source = "store+redis";
      continue;
    }
    const parsed = e.worker ? parseConsumer(e.worker) : null;
    rows.set(e.event_id || `r${rows.size}`, {
      id: e.event_id,
      at_ms: e.at_ms,
      from: e.from,
      to: e.to,
      attempt: e.attempt,
      worker: e.worker ?? "",
      language: parsed?.language ?? (e.worker && e.worker !== "reclaim" ? "unknown" : ""),
      host: parsed?.host ?? "",
      error: e.error ?? "",
      kind: "",
      stack: "",
      source: "redis",
    });
  }
  return [...rows.values()].sort((a, b) => a.at_ms - b.at_ms || compareIds(a.id, b.id));
}

function compareIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split("-").map(Number);
  const [bm = 0, bs = 0] = b.split("-").map(Number);
  return am - bm || as - bs;
}

interface AttemptError {
  attempt: number;
  at_ms: number;
  kind: string;
  worker: string;
  error: string;
  stack: string;
}

// Every attempt's error: Redis' error history (with stacks), then failures only the store still
// holds. One entry per (attempt, error text).
function attemptErrors(rows: Row[], live: TaskInfo | null): AttemptError[] {
  const out = new Map<string, AttemptError>();
  for (const e of live?.errors ?? []) {
    out.set(`${e.attempt}|${e.error}`, { attempt: e.attempt, at_ms: e.at_ms, kind: e.kind ?? "", worker: e.worker ?? "", error: e.error ?? "", stack: e.stack ?? "" });
  }
  for (const r of rows) {
    if (!r.error && !r.stack) continue;
    const key = `${r.attempt}|${r.error}`;
    const known = out.get(key);
    if (known) {
      if (!known.stack && r.stack) known.stack = r.stack;
      if (!known.kind && r.kind) known.kind = r.kind;
      continue;
    }
    out.set(key, { attempt: r.attempt, at_ms: r.at_ms, kind: r.kind, worker: r.worker, error: r.error, stack: r.stack });
  }
  return [...out.values()].sort((a, b) => a.attempt - b.attempt || a.at_ms - b.at_ms);
}

function kv(key: string, value: Node | string, testid?: string): HTMLElement {
  return el("div", { class: "kv" }, el("span", { class: "kv-key" }, key), el("span", { class: "kv-value", testid }, value));
}

function downloadLink(ns: string, id: string): HTMLAnchorElement {
  const a = el("a", { class: "button-link", testid: "task-payload-download" }, "Download raw payload");
  a.setAttribute("href", payloadUrl(ns, id));
  a.setAttribute("download", `${id.replace(/[^A-Za-z0-9_.-]/g, "_")}.payload`);
  return a;
}

async function showPayload(box: HTMLElement, ns: string, id: string, live: TaskInfo | null): Promise<void> {
  const fromJson = bodyPayloadText(live?.body);
  const tooBig = (n: number) =>
    replace(box, el("p", { class: "notice notice-info", testid: "task-payload-note" }, `The payload is ${fmtBytes(n)}: too large to show here.`), downloadLink(ns, id));
  if (fromJson !== null && utf8Bytes(fromJson) >= MAX_SHOWN_BYTES) {
    tooBig(utf8Bytes(fromJson));
    return;
  }
  let text: string | null = null;
  try {
    text = await fetchRawPayload(ns, id);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return;
    text = fromJson;
  }
  if (text === null) {
    replace(box, el("p", { class: "notice notice-info", testid: "task-payload-note" }, "The payload is not kept in Redis once a task finished."));
    return;
  }
  const bytes = utf8Bytes(text);
  if (bytes >= MAX_SHOWN_BYTES) tooBig(bytes);
  else if (!isValidJson(text))
    replace(box, el("p", { class: "notice notice-info", testid: "task-payload-note" }, `The payload (${fmtBytes(bytes)}) is not valid JSON.`), downloadLink(ns, id));
  else replace(box, el("pre", { class: "payload", testid: "task-payload" }, reindentJson(text)));
}

// Replay, edit & replay, delete for a dead task (operators).
function actionsCard(ns: string, id: string, type: string): HTMLElement {
  const reload = () => navigate(location.hash || hashFor("task", [ns, id]));
  const editorBox = el("div");
  const replayBtn = button("Replay", () => {
    replayBtn.disabled = true;
    void replayTask(ns, id).then((ok) => {
      if (ok) reload();
      else replayBtn.disabled = false;
    });
  }, { class: "primary", testid: "replay-button" });
  const card = el(
    "section",
    { class: "card" },
    el(
      "div",
      { class: "row-actions" },
      replayBtn,
      button("Edit & replay", () => {
        if (editorBox.firstChild) editorBox.replaceChildren();
        else editorBox.appendChild(payloadEditor(ns, id, reload, () => editorBox.replaceChildren()));
      }, { testid: "edit-replay-button" }),
      button("Delete", () => {
        void deleteTask(ns, id, type).then((ok) => {
          if (ok && currentRoute().page === "task") navigate(hashFor("failed"));
        });
      }, { class: "danger", testid: "delete-button" }),
    ),
    editorBox,
  );
  return card;
}

// The task's string headers (contract: "who produced it, correlation ids"): the producer's
// identity when it set one. Untrusted text, shown as text.
function headersOf(extra: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (extra === null || typeof extra !== "object") return out;
  const headers = (extra as Record<string, unknown>)["headers"];
  if (headers === null || typeof headers !== "object") return out;
  for (const [k, v] of Object.entries(headers as Record<string, unknown>)) {
    if (typeof v === "string") out[k] = v;
  }
  return out;
}

export function renderTask(view: HTMLElement, route: Route): Cleanup {
  let alive = true;
  const [ns = "", id = ""] = route.params;
  if (!ns || !id) {
    view.append(notice("A task page is #/task/NAMESPACE/TASK_ID.", "error"));
    return () => undefined;
  }
  const doctorLink = el("a", { class: "button-link", testid: "task-doctor" }, "Doctor");
  doctorLink.setAttribute("href", hashFor("doctor", [], { ns, id }));
  const body = el("div", null, notice("Loading…"));
  view.append(el("div", { class: "page-head" }, el("h2", null, "Task ", el("span", { class: "mono" }, id)), el("span", { class: "muted" }, ns), el("div", { class: "spacer" }), doctorLink), body);

  getJson<TaskAnswer>(taskPath(ns, id))
    .then((t) => {
      if (!alive) return;
      const live = t.live ?? null;
      const timeline = t.timeline ?? null;
      const state = live?.state ?? timeline?.state ?? "unknown";
      const type = live?.type ?? timeline?.type ?? "";
      const attempts = live?.attempts ?? (timeline?.attempts ?? []).length;
      const rows = mergeEvents(timeline, live);
      const headers = headersOf(live?.body?.extra);
      const producer = headers["producer"] ?? headers["service"] ?? headers["source"];

      const facts = el(
        "section",
        { class: "card facts" },
        kv("state", el("span", { class: `state state-${state}` }, state), "task-state"),
        kv("namespace", ns),
        kv("type", type, "task-type"),
        kv("attempts", fmtInt(attempts), "task-attempts"),
        producer ? kv("enqueued by", producer, "task-producer") : null,
        Object.keys(headers).length
          ? kv("headers", Object.entries(headers).map(([k, v]) => `${k}=${v}`).join("  "), "task-headers")
          : null,
        live?.due_ms ? kv("due", fmtTime(live.due_ms)) : null,
        live?.dead_since_ms ? kv("dead since", fmtTime(live.dead_since_ms)) : null,
        live?.finished_ms ? kv("finished", `${fmtTime(live.finished_ms)}${live.finished_by ? ` by ${live.finished_by}` : ""}`) : null,
        live?.lease_deadline_ms ? kv("lease until", fmtTime(live.lease_deadline_ms)) : null,
        live?.stream_id ? kv("stream id", live.stream_id) : null,
        live ? null : kv("Redis", "not in Redis any more (history from the store only)"),
        timeline ? null : kv("store", "no event stored (the collector has not seen it, or it is older than the retention)"),
        timeline && !timeline.complete ? kv("history", "incomplete: the first stored event is not the enqueue") : null,
        live && !live.events_complete ? kv("Redis events", "incomplete (trimmed)") : null,
      );

      const cols: Column<Row>[] = [
        { head: "time", class: "time", cell: (r) => fmtTime(r.at_ms) },
        { head: "from → to", cell: (r) => `${r.from} → ${r.to}` },
        { head: "attempt", class: "num", cell: (r) => fmtInt(r.attempt) },
        { head: "worker", class: "mono small", cell: (r) => r.worker },
        { head: "language", cell: (r) => r.language },
        { head: "host", cell: (r) => r.host },
        { head: "error", class: "error-cell", cell: (r) => (r.error ? el("span", { class: "clamp", attrs: { title: r.error } }, r.kind ? `[${r.kind}] ${r.error}` : r.error) : "") },
      ];
      const runs = (timeline?.attempts ?? []).map((a) =>
        el(
          "li",
          null,
          `attempt ${a.attempt}: ${a.outcome ?? "running"}` +
            (a.worker ? ` on ${a.worker}${a.language ? ` (${a.language})` : ""}` : "") +
            (a.run_ms !== undefined ? `, ${fmtDuration(a.run_ms)}` : "") +
            (a.started_ms ? `, started ${fmtTime(a.started_ms)}` : ""),
        ),
      );

      const errors = attemptErrors(rows, live);
      const errorBox = el(
        "section",
        { class: "card" },
        el("h3", null, "Errors"),
        errors.length === 0
          ? el("p", { class: "muted" }, "No error recorded.")
          : el(
              "div",
              { class: "errors" },
              ...errors.map((e) =>
                el(
                  "article",
                  { class: "error-item", testid: "task-error", attrs: { "data-attempt": e.attempt } },
                  el("div", { class: "error-head" }, `attempt ${e.attempt}${e.kind ? ` · ${e.kind}` : ""}${e.worker ? ` · ${e.worker}` : ""}${e.at_ms ? ` · ${fmtTime(e.at_ms)}` : ""}`),
                  el("pre", { class: "error-text", testid: "task-error-text" }, e.error),
                  e.stack ? el("pre", { class: "stack", testid: "task-error-stack" }, e.stack) : null,
                ),
              ),
            ),
      );

      const payloadBox = el("div", null, notice("Loading the payload…"));
      const settings = live?.body
        ? el(
            "div",
            { class: "muted small" },
            `max_retry ${String(live.body.max_retry ?? "—")} · execution_timeout ${String(live.body.execution_timeout ?? "—")} · created ${
              typeof live.body.created_at === "number" ? fmtTime(live.body.created_at * 1000) : String(live.body.created_at ?? "—")
            }`,
          )
        : null;

      replace(
        body,
        facts,
        state === "dead" && canAct() ? actionsCard(ns, id, type) : null,
        el(
          "section",
          { class: "card" },
          el("h3", null, "Timeline"),
          el("div", { class: "table-wrap" }, table(cols, rows, (r) => ({ testid: "timeline-row", attrs: { "data-entry-id": r.id, "data-source": r.source } }), "no event known")),
          runs.length ? el("ul", { class: "attempts" }, ...runs) : null,
        ),
        errorBox,
        el("section", { class: "card" }, el("h3", null, "Payload"), settings, payloadBox),
      );
      void showPayload(payloadBox, ns, id, live);
    })
    .catch((e: unknown) => {
      if (!alive) return;
      replace(body, notice(e instanceof ApiError && e.status === 404 ? `No task ${id} is known in ${ns}, neither in Redis nor in the store.` : `The task cannot be loaded: ${describeError(e)}`, "error"));
    });

  return () => {
    alive = false;
  };
}
