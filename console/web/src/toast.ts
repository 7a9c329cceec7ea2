// Action results: a short message in the corner (data-testid="toast"), dismissed on click or
// after a while. Errors stay longer.
import { el } from "./dom";

let box: HTMLElement | null = null;

function container(): HTMLElement {
  if (!box || !box.isConnected) {
    box = el("div", { class: "toasts", attrs: { role: "status", "aria-live": "polite" } });
    document.body.appendChild(box);
  }
  return box;
}

export function toast(message: string, kind: "ok" | "error" = "ok"): void {
  const t = el("div", { class: `toast toast-${kind}`, testid: "toast", attrs: { "data-kind": kind } }, message);
  t.addEventListener("click", () => t.remove());
  container().appendChild(t);
  window.setTimeout(() => t.remove(), kind === "error" ? 15000 : 8000);
}
