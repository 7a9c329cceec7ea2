// The actions on one dead task, shared by the failed list and the task page: replay, edit &
// replay (a payload editor validated as a JSON object before it is sent) and delete.
import { ApiError, describeError, getJson, postJson, taskPath } from "./api";
import { button, el, setText } from "./dom";
import { isJsonObjectText, isValidJson, reindentJson } from "./json";
import { bodyPayloadText, fetchRawPayload } from "./payload";
import { toast } from "./toast";
import type { TaskAnswer } from "./types";

export async function replayTask(ns: string, id: string, payload?: string): Promise<boolean> {
  try {
    const body: Record<string, unknown> = { ns, id };
    if (payload !== undefined) body.payload = payload;
    const r = await postJson<{ stream_id?: string }>("/api/dead/replay", body);
    toast(`Replayed ${id}${payload !== undefined ? " with the edited payload" : ""}${r.stream_id ? ` (stream id ${r.stream_id})` : ""}`);
    return true;
  } catch (e) {
    toast(`Replay of ${id} failed: ${describeError(e)}`, "error");
    return false;
  }
}

// Asks first (window.confirm); false when not confirmed or refused.
export async function deleteTask(ns: string, id: string, type = ""): Promise<boolean> {
  if (!window.confirm(`Delete the dead task ${id} (${ns}${type ? `/${type}` : ""})? This cannot be undone.`)) return false;
  try {
    await postJson("/api/dead/delete", { ns, id });
    toast(`Deleted ${id}`);
    return true;
  } catch (e) {
    toast(`Delete of ${id} failed: ${describeError(e)}`, "error");
    return false;
  }
}

// The payload text to edit: the raw stored text re-indented when it is valid JSON (exact, big
// numbers included), else the payload from the task JSON.
async function editablePayload(ns: string, id: string): Promise<{ text: string; note?: string }> {
  const notJson = "The stored payload is not valid JSON: fix it before replaying.";
  try {
    const raw = await fetchRawPayload(ns, id);
    return isValidJson(raw) ? { text: reindentJson(raw) } : { text: raw, note: notJson };
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) throw e;
  }
  const task = await getJson<TaskAnswer>(taskPath(ns, id));
  const text = bodyPayloadText(task.live?.body);
  if (text === null) return { text: "{}", note: "The payload cannot be read from Redis: enter the new payload." };
  return isValidJson(text) ? { text: reindentJson(text) } : { text, note: notJson };
}

// An editor prefilled with the task's payload; onReplayed runs after a successful replay.
export function payloadEditor(ns: string, id: string, onReplayed: () => void, onCancel: () => void): HTMLElement {
  const area = el("textarea", { class: "payload-editor", testid: "payload-editor", attrs: { rows: 12, spellcheck: "false", "aria-label": `payload of ${id}` } });
  area.disabled = true;
  const msg = el("p", { class: "editor-msg", testid: "payload-error" });
  const submit = button(
    "Replay with this payload",
    () => {
      const check = isJsonObjectText(area.value);
      if (!check.ok) {
        setText(msg, check.error);
        msg.className = "editor-msg error";
        area.focus();
        return;
      }
      setText(msg, "");
      submit.disabled = true;
      void replayTask(ns, id, area.value).then((ok) => {
        if (ok) onReplayed();
        else submit.disabled = false;
      });
    },
    { class: "primary", testid: "payload-submit" },
  );
  submit.disabled = true;
  const box = el(
    "div",
    { class: "editor" },
    el("div", { class: "muted" }, `Edit the payload of ${id}, then replay it. It must be a JSON object.`),
    area,
    msg,
    el("div", { class: "actions" }, submit, button("Cancel", onCancel, { testid: "payload-cancel" })),
  );
  setText(msg, "Loading the payload…");
  editablePayload(ns, id)
    .then((p) => {
      area.value = p.text;
      area.disabled = false;
      submit.disabled = false;
      setText(msg, p.note ?? "");
      msg.className = p.note ? "editor-msg warning" : "editor-msg";
      area.focus();
    })
    .catch((e: unknown) => {
      setText(msg, `The payload cannot be loaded: ${describeError(e)}`);
      msg.className = "editor-msg error";
    });
  return box;
}
