// The top bar: page links, the user and role, a read-only badge and Logout.
import { el, button } from "./dom";
import { hashFor } from "./router";
import { canAudit } from "./session";
import type { Session } from "./types";

export interface NavPage {
  page: string;
  label: string;
  visible?: () => boolean;
}

export const NAV_PAGES: NavPage[] = [
  { page: "overview", label: "Overview" },
  { page: "live", label: "Live" },
  { page: "failed", label: "Failed" },
  { page: "workers", label: "Workers" },
  { page: "cron", label: "Cron" },
  { page: "doctor", label: "Doctor" },
  { page: "audit", label: "Audit", visible: canAudit },
];

export function renderNav(session: Session, onLogout: () => void): { nav: HTMLElement; setActive: (page: string) => void } {
  const links = new Map<string, HTMLAnchorElement>();
  const list = el("ul", { class: "nav-links" });
  for (const p of NAV_PAGES) {
    if (p.visible && !p.visible()) continue;
    const a = el("a", { testid: `nav-${p.page}` }, p.label);
    a.setAttribute("href", hashFor(p.page));
    links.set(p.page, a);
    list.appendChild(el("li", null, a));
  }
  const who = el(
    "div",
    { class: "nav-session" },
    el("span", { class: "session-user", testid: "session-user" }, `${session.user} (${session.role})`),
    session.read_only ? el("span", { class: "badge badge-readonly", testid: "read-only-badge", attrs: { title: "The console runs with --read-only: every action is refused" } }, "read-only") : null,
    button("Logout", onLogout, { class: "link-button", testid: "logout-button" }),
  );
  const nav = el("header", { class: "topbar" }, el("a", { class: "brand", attrs: { href: "#/overview" } }, "Baton"), el("nav", null, list), who);
  return {
    nav,
    setActive(page: string) {
      for (const [name, a] of links) {
        if (name === page || (page === "task" && name === "failed")) a.setAttribute("aria-current", "page");
        else a.removeAttribute("aria-current");
      }
    },
  };
}
