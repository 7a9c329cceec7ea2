// The console's entry point: load the session (or show the login form), then the top bar and the
// page the hash names.
import { ApiError, describeError, getJson, onUnauthorized, postJson } from "./api";
import { el, notice } from "./dom";
import { renderLogin } from "./login";
import { renderNav } from "./nav";
import type { Cleanup, PageRender } from "./page";
import { currentRoute, DEFAULT_PAGE, startRouter, type Route } from "./router";
import { canAudit, getSession, setSession } from "./session";
import type { Session } from "./types";

import { renderAudit } from "./audit";
import { renderCron } from "./cron";
import { renderDoctor } from "./doctor";
import { renderFailed } from "./failed";
import { renderLive } from "./live";
import { renderOverview } from "./overview";
import { renderTask } from "./task";
import { renderWorkers } from "./workers";

const PAGES: Record<string, PageRender> = {
  overview: renderOverview,
  live: renderLive,
  failed: renderFailed,
  task: renderTask,
  workers: renderWorkers,
  cron: renderCron,
  doctor: renderDoctor,
  audit: renderAudit,
};

let root: HTMLElement;
let view: HTMLElement | null = null;
let setActive: ((page: string) => void) | null = null;
let cleanup: Cleanup | null = null;
let routerStarted = false;

function runCleanup(): void {
  const c = cleanup;
  cleanup = null;
  if (c) {
    try {
      c();
    } catch (e) {
      console.error("page cleanup failed", e);
    }
  }
}

function showPage(route: Route): void {
  if (!getSession() || !view) return; // signed out: the login form is shown
  runCleanup();
  let render = PAGES[route.page];
  let page = route.page;
  if (!render) {
    page = DEFAULT_PAGE;
    render = PAGES[DEFAULT_PAGE] as PageRender;
  }
  setActive?.(page);
  const section = el("section", { class: `page page-${page}`, attrs: { "data-page": page } });
  view.replaceChildren(section);
  if (page === "audit" && !canAudit()) {
    section.appendChild(notice("The audit log is for admins.", "error"));
    return;
  }
  try {
    cleanup = render(section, route) || null;
  } catch (e) {
    section.appendChild(notice(`This page failed: ${describeError(e)}`, "error"));
  }
}

function showLogin(): void {
  runCleanup();
  setSession(null);
  view = null;
  setActive = null;
  document.title = "Sign in - Baton console";
  renderLogin(root, (session) => startApp(session));
}

function logout(): void {
  postJson("/api/logout", {})
    .catch(() => undefined)
    .finally(() => showLogin());
}

function startApp(session: Session): void {
  setSession(session);
  document.title = "Baton console";
  const nav = renderNav(session, logout);
  setActive = nav.setActive;
  view = el("main", { class: "view" });
  root.replaceChildren(nav.nav, view);
  if (!routerStarted) {
    routerStarted = true;
    startRouter(showPage);
  } else {
    showPage(currentRoute());
  }
}

function boot(): void {
  root = document.getElementById("app") ?? document.body;
  onUnauthorized(() => {
    if (getSession()) showLogin();
  });
  getJson<Session>("/api/session")
    .then(startApp)
    .catch((e: unknown) => {
      if (e instanceof ApiError && e.status === 401) showLogin();
      else root.replaceChildren(el("main", { class: "view" }, notice(`The console cannot load the session: ${describeError(e)}`, "error")));
    });
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
else boot();
