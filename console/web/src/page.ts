// What every page module exports: it fills its own section and may return a cleanup (close an
// EventSource, stop a timer, destroy charts) that runs when another page is shown.
import type { Route } from "./router";

export type Cleanup = () => void;

export type PageRender = (view: HTMLElement, route: Route) => Cleanup | void;
