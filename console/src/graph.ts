import Graph from "graphology";
import Sigma from "sigma";
import { api } from "./api";
import { h } from "./dom";
import { attachKeyboard } from "./keyboard";

function swatch(colour: string): HTMLElement {
  const el = h("span", { class: "swatch" });
  el.style.background = colour; // CSSOM: the deployed CSP allows no style attributes
  return el;
}

interface GraphNode {
  id: string;
  label: string;
  type: string;
  band: string;
  importance: number;
  community: number | null;
}
interface GraphEdge {
  source: string;
  target: string;
  type: string;
}
interface GraphPage {
  nodes: GraphNode[];
  edges: GraphEdge[];
  truncated: boolean;
}

export const BAND_COLOURS: Record<string, string> = {
  strong: "#1d4ed8",
  fading: "#b45309",
  weak: "#b91c1c",
  archive: "#4b5563",
};
const EDGE_COLOURS = ["#0f766e", "#7c3aed", "#be185d", "#854d0e", "#334155"];
const COMMUNITY_COLOURS = ["#1d4ed8", "#15803d", "#b45309", "#7c3aed", "#be185d", "#0f766e", "#b91c1c", "#4b5563"];

let renderer: Sigma | null = null;

declare global {
  interface Window {
    contextosGraph?: Graph;
    contextosFirstPaintMs?: number;
  }
}

// Clusters on a ring, nodes on a golden-angle spiral inside their cluster: O(n), stable, no worker.
function place(nodes: GraphNode[], groupOf: (n: GraphNode) => string): Map<string, [number, number]> {
  const groups = new Map<string, GraphNode[]>();
  for (const node of nodes) {
    const key = groupOf(node);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key)!.push(node);
  }
  const positions = new Map<string, [number, number]>();
  const ring = groups.size > 1 ? Math.sqrt(nodes.length) * 2 : 0;
  [...groups.values()].forEach((members, g) => {
    const angle = (2 * Math.PI * g) / groups.size;
    const cx = ring * Math.cos(angle);
    const cy = ring * Math.sin(angle);
    members.forEach((node, i) => {
      const r = Math.sqrt(i + 1);
      const theta = i * 2.399963;
      positions.set(node.id, [cx + r * Math.cos(theta), cy + r * Math.sin(theta)]);
    });
  });
  return positions;
}

export async function graphView(view: HTMLElement, navigate: (hash: string) => void): Promise<void> {
  const started = performance.now();
  const colourBy = h("select", { id: "colour-by" }, h("option", { value: "band" }, "band"), h("option", { value: "community" }, "community")) as HTMLSelectElement;
  const search = h("input", { id: "graph-search", type: "search", placeholder: "label contains…" }) as HTMLInputElement;
  const results = h("ul", { id: "graph-results", "aria-label": "Matching memories" });
  const status = h("p", { id: "graph-status", role: "status" }, "loading…");
  const canvas = h("div", {
    id: "graph-canvas",
    tabindex: "0",
    role: "application",
    "aria-label": "Memory graph",
    "aria-describedby": "graph-keys",
  });
  const focusStatus = h("p", { id: "graph-focus", role: "status", "aria-live": "polite" });
  const keys = h("p", { id: "graph-keys", class: "hint" }, "Keyboard: focus the graph, then arrow keys move between memories, Enter opens one, + and − zoom, Escape lets go.");
  view.append(
    h("h2", {}, "Memory graph"),
    h("label", { for: "colour-by" }, "Colour by "),
    colourBy,
    " ",
    h("label", { for: "graph-search" }, "Search "),
    search,
    status,
    results,
    keys,
    canvas,
    focusStatus,
    h("p", { class: "legend" }, ...Object.entries(BAND_COLOURS).map(([band, colour]) => h("span", {}, swatch(colour), band))),
  );
  const page = await api<GraphPage>("GET", "/graph?limit=1000");
  const graph = new Graph({ multi: true, type: "directed" });
  const edgeTypes = [...new Set(page.edges.map((e) => e.type))];
  const colourOf = (node: GraphNode, by: string): string =>
    by === "community"
      ? COMMUNITY_COLOURS[(node.community ?? 0) % COMMUNITY_COLOURS.length]
      : (BAND_COLOURS[node.band] ?? "#4b5563");
  const positions = place(page.nodes, (n) => (n.community === null ? "none" : String(n.community)));
  for (const node of page.nodes) {
    const [x, y] = positions.get(node.id)!;
    graph.addNode(node.id, { x, y, label: node.label, size: 2 + node.importance, color: colourOf(node, "band"), band: node.band });
  }
  for (const edge of page.edges) {
    if (graph.hasNode(edge.source) && graph.hasNode(edge.target)) {
      graph.addEdge(edge.source, edge.target, {
        label: edge.type,
        color: EDGE_COLOURS[edgeTypes.indexOf(edge.type) % EDGE_COLOURS.length],
        size: 1,
      });
    }
  }
  renderer?.kill();
  renderer = new Sigma(graph, canvas, { renderEdgeLabels: false, labelRenderedSizeThreshold: 8 });
  window.contextosGraph = graph;
  // The constructor already drew once; a synchronous refresh fires afterRender with our listener on,
  // and the next animation frame is when the browser has put those pixels on screen.
  renderer.once("afterRender", () =>
    requestAnimationFrame(() => {
      window.contextosFirstPaintMs = performance.now() - started;
      canvas.dataset.painted = "true";
    }),
  );
  renderer.refresh();
  renderer.on("clickNode", ({ node }) => navigate(`#/memory/${node}`));
  attachKeyboard(canvas, renderer, graph, (text) => (focusStatus.textContent = text), (id) => navigate(`#/memory/${id}`));
  status.textContent = `${graph.order} memories, ${graph.size} edges${page.truncated ? " (truncated)" : ""}`;
  colourBy.addEventListener("change", () => {
    const byId = new Map(page.nodes.map((n) => [n.id, n]));
    graph.forEachNode((id) => graph.setNodeAttribute(id, "color", colourOf(byId.get(id)!, colourBy.value)));
  });
  search.addEventListener("input", () => {
    const needle = search.value.trim().toLowerCase();
    results.replaceChildren();
    if (!needle) return;
    const hits = page.nodes.filter((n) => n.label.toLowerCase().includes(needle)).slice(0, 20);
    for (const hit of hits) results.append(h("li", {}, h("a", { href: `#/memory/${hit.id}` }, hit.label)));
    graph.forEachNode((id, attrs) => graph.setNodeAttribute(id, "highlighted", hits.some((x) => x.id === id) && attrs.label !== undefined));
  });
}
