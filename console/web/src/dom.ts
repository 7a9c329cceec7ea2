// Element helpers. Text only ever reaches the page through textContent or text nodes: there is no
// helper here that parses HTML, and attribute names that would carry script or style are refused.

export type Child = Node | string | number | null | undefined | false;

export type AttrValue = string | number | boolean | null | undefined;

export interface Props {
  class?: string;
  testid?: string;
  text?: string;
  attrs?: Record<string, AttrValue>;
  on?: { [K in keyof HTMLElementEventMap]?: (event: HTMLElementEventMap[K]) => void };
}

const FORBIDDEN_ATTR = /^(on|style$|srcdoc$)/i;

export function setAttr(node: Element, name: string, value: AttrValue): void {
  if (FORBIDDEN_ATTR.test(name)) throw new Error(`attribute ${name} is not allowed`);
  if (value === null || value === undefined || value === false) {
    node.removeAttribute(name);
  } else {
    node.setAttribute(name, value === true ? "" : String(value));
  }
}

export function append(parent: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
}

// el("td", {class: "num", testid: "x"}, "text", otherNode)
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props?: Props | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (props) {
    if (props.class) node.className = props.class;
    if (props.testid) node.setAttribute("data-testid", props.testid);
    if (props.attrs) for (const [k, v] of Object.entries(props.attrs)) setAttr(node, k, v);
    if (props.on) {
      for (const [type, fn] of Object.entries(props.on)) {
        if (fn) node.addEventListener(type, fn as EventListener);
      }
    }
    if (props.text !== undefined) node.textContent = props.text;
  }
  append(node, ...children);
  return node;
}

export function setText(node: Node, text: string): void {
  node.textContent = text;
}

export function clear(node: Element): void {
  node.replaceChildren();
}

export function replace(node: Element, ...children: Child[]): void {
  node.replaceChildren();
  append(node, ...children);
}

// A link inside the app: the hash is built by the caller from encoded parts.
export function link(hash: string, text: string, props?: Props): HTMLAnchorElement {
  const a = el("a", props, text);
  a.setAttribute("href", hash);
  return a;
}

export function button(text: string, onClick: (ev: MouseEvent) => void, props?: Props): HTMLButtonElement {
  const b = el("button", props, text);
  b.type = "button";
  b.addEventListener("click", onClick);
  return b;
}

export interface Column<T> {
  head: string;
  cell: (row: T) => Child;
  class?: string;
}

// A table from rows of data; rowProps adds attributes (data-testid, data-task-id) per row.
export function table<T>(
  columns: Column<T>[],
  rows: T[],
  rowProps?: (row: T) => Props,
  empty = "nothing to show",
): HTMLTableElement {
  const thead = el("thead", null, el("tr", null, ...columns.map((c) => el("th", c.class ? { class: c.class } : null, c.head))));
  const tbody = el("tbody");
  for (const r of rows) {
    const tr = el("tr", rowProps ? rowProps(r) : null);
    columns.forEach((c, i) => {
      // A space between cells keeps the row's textContent readable ("3 0 1", not "301"); CSS
      // tables drop whitespace-only text between cells, so nothing shows.
      if (i > 0) tr.appendChild(document.createTextNode(" "));
      tr.appendChild(el("td", c.class ? { class: c.class } : null, c.cell(r)));
    });
    tbody.appendChild(tr);
  }
  if (rows.length === 0) {
    const td = el("td", { class: "empty" }, empty);
    td.colSpan = columns.length;
    tbody.appendChild(el("tr", null, td));
  }
  return el("table", { class: "data" }, thead, tbody);
}

// A labelled form field.
export function field(label: string, input: HTMLElement): HTMLLabelElement {
  return el("label", { class: "field" }, el("span", null, label), input);
}

export function input(name: string, props?: Props, type = "text"): HTMLInputElement {
  const i = el("input", props);
  i.type = type;
  i.name = name;
  return i;
}

export function select(name: string, options: [string, string][], value?: string, props?: Props): HTMLSelectElement {
  const s = el("select", props);
  s.name = name;
  for (const [v, label] of options) {
    const o = el("option", null, label);
    o.value = v;
    s.appendChild(o);
  }
  if (value !== undefined) s.value = value;
  return s;
}

// A "loading" / error placeholder that a page replaces with its content.
export function notice(text: string, kind: "info" | "error" = "info"): HTMLParagraphElement {
  return el("p", { class: `notice notice-${kind}` }, text);
}
