// A tiny element builder: text always goes through textContent, never innerHTML.
type Child = Node | string | number | null | undefined | false;

export function h(tag: string, attrs: Record<string, string> = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, value);
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

export function button(label: string, onClick: () => void, attrs: Record<string, string> = {}): HTMLElement {
  const el = h("button", { type: "button", ...attrs }, label);
  el.addEventListener("click", onClick);
  return el;
}

export function table(headers: string[], rows: Child[][], attrs: Record<string, string> = {}): HTMLElement {
  return h(
    "table",
    attrs,
    h("thead", {}, h("tr", {}, ...headers.map((name) => h("th", { scope: "col" }, name)))),
    h("tbody", {}, ...rows.map((row) => h("tr", {}, ...row.map((cell) => h("td", {}, cell))))),
  );
}

export function bar(value: number, label: string, widthPx = 120): HTMLElement {
  const fill = h("span", { class: "bar", role: "img", "aria-label": `${label} ${value.toFixed(3)}` });
  // Through the CSSOM, not a style attribute: the deployed CSP has no 'unsafe-inline' for styles.
  fill.style.width = `${Math.max(0, Math.min(1, value)) * widthPx}px`;
  return h(
    "span",
    {},
    fill,
    " ",
    h("span", { class: "value", "data-component": label }, value.toFixed(3)),
  );
}
