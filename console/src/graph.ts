import Graph from "graphology";
import forceAtlas2 from "graphology-layout-forceatlas2";
import FA2Layout from "graphology-layout-forceatlas2/worker";
import Sigma from "sigma";
import type { NodeLabelDrawingFunction } from "sigma/rendering";
import { api } from "./api";
import { button, h } from "./dom";
import { attachKeyboard } from "./keyboard";
import { communitiesForLayout, groupedPositions } from "./layout";
import { CameraMoves, CPU_PROGRAMS, type Shown } from "./render";
import { BAND_COLOURS, BANDS, type GraphColumns, type GraphEdge, type GraphNode, type MemoryGraph } from "./types";

const PAGE = 1000; // what "load more" adds
const COLUMNS_PAGE = 5000; // the API's largest page of graph columns
const EDGE_COLOURS: Record<string, string> = {
  related: "#0f766e",
  supersedes: "#7c3aed",
  corroborates: "#15803d",
  contradicts: "#be185d",
  derived_from: "#854d0e",
};
const SPARE_EDGE_COLOURS = ["#334155", "#0369a1", "#a16207", "#9d174d"];
// Eight distinguishable community colours; past eight the smaller communities share "other".
const COMMUNITY_COLOURS = ["#1d4ed8", "#15803d", "#b45309", "#7c3aed", "#be185d", "#0f766e", "#b91c1c", "#ca8a04"];
const OTHER = "#9ca3af";
const TYPE_COLOURS = ["#1d4ed8", "#15803d", "#b45309", "#7c3aed", "#be185d", "#0f766e", "#b91c1c", "#0e7490", "#4d7c0f", "#a21caf", "#c2410c", "#475569"];
const LAYOUT_MS = 4000; // ForceAtlas2 runs this long in its worker, then the layout holds still
const LAYOUT_PUBLISH_MS = 1000; // how often the drawn graph takes the worker's positions (a full redraw each)

type ColourMode = "band" | "type" | "community";

// Every field sigma fills in when missing, given up front: its copy of each node's and edge's
// attributes then keeps their shape instead of growing five fields at a time (thousands of times).
const NODE_DEFAULTS = { type: "circle", hidden: false, highlighted: false, forceLabel: false, zIndex: 0 };
const EDGE_DEFAULTS = { type: "arrow", label: "", hidden: false, forceLabel: false, zIndex: 0 };

declare global {
  interface Window {
    contextosGraph?: Graph;
    contextosRenderer?: Sigma;
    contextosFirstPaintMs?: number;
    contextosFirstPaintAt?: number;
    contextosLayoutRunning?: boolean;
    contextosGraphEdgesApi?: number;
    contextosMarks?: Record<string, number>; // ms from navigation at each first-paint stage (benchmarks read them)
    contextosShown?: Shown; // the camera on screen and whether it was drawn or moved there
  }
}

let renderer: Sigma | null = null;
let moves: CameraMoves | null = null;
let layout: FA2Layout | null = null;

// Leaving the graph: stop the worker and free the WebGL contexts (a killed renderer never redraws
// into a detached container, so no "Container has no width" either).
export function disposeGraph(): void {
  layout?.kill();
  layout = null;
  moves?.dispose();
  moves = null;
  renderer?.kill();
  renderer = null;
  window.contextosRenderer = undefined;
  window.contextosLayoutRunning = false;
}

function swatch(colour: string): HTMLElement {
  const el = h("span", { class: "swatch" });
  el.style.background = colour; // CSSOM: the deployed CSP allows no style attributes
  return el;
}

// Nodes shrink as the graph grows, so thousands of them leave room for their edges.
function nodeSize(importance: number, count: number): number {
  return (2 + importance * 0.6) * Math.min(1, Math.max(0.4, Math.sqrt(1000 / Math.max(count, 1))));
}

// Sigma's label grid keeps one label per cell, but a long label still runs into its neighbour's:
// a label that would overlap one already drawn in this frame is left out. A white halo keeps the
// text readable over nodes and edges.
function labelsThatDoNotOverlap(): { draw: NodeLabelDrawingFunction; reset: () => void } {
  let placed: [number, number, number, number][] = [];
  return {
    reset: () => (placed = []),
    draw: (context, data, settings) => {
      if (!data.label) return;
      const size = settings.labelSize;
      context.font = `${settings.labelWeight} ${size}px ${settings.labelFont}`;
      const left = data.x + data.size + 1;
      const box: [number, number, number, number] = [left, data.y - size * 0.75, left + context.measureText(data.label).width + 4, data.y + size * 0.6];
      if (placed.some(([x0, y0, x1, y1]) => box[0] < x1 && x0 < box[2] && box[1] < y1 && y0 < box[3])) return;
      placed.push(box);
      context.lineWidth = 3;
      context.lineJoin = "round";
      context.strokeStyle = "#fff";
      context.strokeText(data.label, left + 2, data.y + size / 3);
      context.fillStyle = "#111";
      context.fillText(data.label, left + 2, data.y + size / 3);
    },
  };
}

function edgeColour(type: string, known: string[]): string {
  return EDGE_COLOURS[type] ?? SPARE_EDGE_COLOURS[known.indexOf(type) % SPARE_EDGE_COLOURS.length];
}

// A page of columns as nodes and edges; `ranked` (ids by rank, over every page so far) names the
// ends of an edge that reaches back to an earlier page.
function fromColumns(page: GraphColumns, ranked: string[]): MemoryGraph {
  const nodes: GraphNode[] = page.ids.map((id, i) => {
    ranked[page.offset + i] = id;
    return { id, label: page.labels[i], type: page.types[i], band: page.bands[i], importance: page.importance[i], community: page.communities[i], hops: 0 };
  });
  const edges: GraphEdge[] = page.edge_src.map((src, j) => ({ src: ranked[src], dst: ranked[page.edge_dst[j]], type: page.edge_types[j], weight: page.edge_weights[j] }));
  return { nodes, edges, truncated: page.truncated };
}

// A cheap first placement (the API's communities, else types, on a ring; golden-angle spiral
// inside each) for the first frame; after it the layout is seeded by community (layout.ts).
function seedPosition(node: GraphNode, groups: Map<string, number>, counts: Map<string, number>, total: number): [number, number] {
  const key = node.community === null || node.community === undefined ? `t:${node.type}` : `c:${node.community}`;
  if (!groups.has(key)) groups.set(key, groups.size);
  const g = groups.get(key)!;
  const i = counts.get(key) ?? 0;
  counts.set(key, i + 1);
  const ring = Math.sqrt(total) * 3;
  const angle = g * 2.399963;
  const cx = g ? ring * Math.sqrt(g) * Math.cos(angle) : 0;
  const cy = g ? ring * Math.sqrt(g) * Math.sin(angle) : 0;
  const r = Math.sqrt(i + 1);
  const theta = i * 2.399963;
  return [cx + r * Math.cos(theta), cy + r * Math.sin(theta)];
}

export async function graphView(view: HTMLElement, navigate: (hash: string) => void): Promise<void> {
  const started = performance.now();
  const params = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const want = Math.max(PAGE, Number(params.get("nodes") ?? PAGE) || PAGE);
  // Variants the benchmark measures beside the default (benchmarks/console_graph.py):
  // `render=full` redraws everything on each camera change; `render=sigma` also uses sigma's own
  // instanced programs (circles, arrows).
  const variant = params.get("render") ?? "";
  const select = (id: string, label: string, options: [string, string][]) =>
    h("select", { id, "aria-label": label }, ...options.map(([value, text]) => h("option", { value }, text))) as HTMLSelectElement;
  const colourBy = select("colour-by", "Colour by", [["band", "band"], ["type", "type"], ["community", "community"]]);
  const bandFilter = select("filter-band", "Band", [["", "any band"], ...BANDS.map((b): [string, string] => [b, b])]);
  const typeFilter = select("filter-type", "Type", [["", "any type"]]);
  const communityFilter = select("filter-community", "Community", [["", "any community"]]);
  const userId = h("input", { id: "filter-user", size: "10", value: params.get("user_id") ?? "" }) as HTMLInputElement;
  const agentId = h("input", { id: "filter-agent", size: "10", value: params.get("agent_id") ?? "" }) as HTMLInputElement;
  const tag = h("input", { id: "filter-tag", size: "10", value: params.get("tag") ?? "" }) as HTMLInputElement;
  const scopeForm = h(
    "form",
    { id: "graph-scope", class: "controls" },
    h("label", { for: "filter-user" }, "user_id "), userId, " ",
    h("label", { for: "filter-agent" }, "agent_id "), agentId, " ",
    h("label", { for: "filter-tag" }, "tag "), tag, " ",
    h("button", { type: "submit" }, "Apply scope"),
  );
  const search = h("input", { id: "graph-search", type: "search", placeholder: "label contains…" }) as HTMLInputElement;
  const results = h("ul", { id: "graph-results", "aria-label": "Matching memories" });
  const status = h("p", { id: "graph-status", role: "status" }, "loading…");
  const more = h("p", { id: "graph-more" });
  const canvas = h("div", { id: "graph-canvas", tabindex: "0", role: "application", "aria-label": "Memory graph", "aria-describedby": "graph-keys" });
  const focusStatus = h("p", { id: "graph-focus", role: "status", "aria-live": "polite" });
  const selected = h("div", { id: "graph-selected", role: "region", "aria-label": "Selected memory" });
  const legend = h("div", { id: "graph-legend", class: "legend", "aria-label": "Node colours" });
  const edgeLegend = h("div", { id: "edge-legend", class: "legend", "aria-label": "Edge colours" });
  const keys = h("p", { id: "graph-keys", class: "hint" }, "Keyboard: focus the graph, then arrow keys move between memories, Enter opens one, + and − zoom, Escape lets go. Click a memory to show its neighbours.");
  view.append(
    h("h2", {}, "Memory graph"),
    h("div", { class: "controls" },
      h("label", { for: "colour-by" }, "Colour by "), colourBy, " ",
      h("label", { for: "filter-band" }, "Band "), bandFilter, " ",
      h("label", { for: "filter-type" }, "Type "), typeFilter, " ",
      h("label", { for: "filter-community" }, "Community "), communityFilter, " ",
      h("label", { for: "graph-search" }, "Search "), search,
    ),
    scopeForm,
    status,
    more,
    results,
    keys,
    legend,
    edgeLegend,
    canvas,
    focusStatus,
    selected,
  );
  scopeForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const q = new URLSearchParams();
    if (userId.value.trim()) q.set("user_id", userId.value.trim());
    if (agentId.value.trim()) q.set("agent_id", agentId.value.trim());
    if (tag.value.trim()) q.set("tag", tag.value.trim());
    navigate(`#/graph${q.size ? `?${q}` : ""}`);
  });

  const scope = new URLSearchParams();
  for (const name of ["user_id", "agent_id", "tag"]) if (params.get(name)) scope.set(name, params.get(name)!);
  // The graph comes as columns, edges naming their ends by rank: `idsByRank[r]` is the memory ranked r.
  const idsByRank: string[] = [];
  const fetchPage = (offset: number, limit: number) =>
    api<GraphColumns>("GET", `/graph/columns?${new URLSearchParams({ limit: String(limit), offset: String(offset), ...Object.fromEntries(scope) })}`);

  const graph = new Graph({ multi: true, type: "directed" });
  const nodes = new Map<string, GraphNode>();
  const groups = new Map<string, number>();
  const counts = new Map<string, number>();
  const edgeTypes: string[] = [];
  let apiEdges = 0;
  let loaded = 0;
  let truncated = false;
  let mode: ColourMode = "band";
  let communityRank = new Map<number, number>();
  let focus: { id: string; neighbours: Set<string> } | null = null;
  let filters = { band: "", type: "", community: "" }; // the selects' values, read once per change

  const communityColour = (c: number | null | undefined): string => {
    if (c === null || c === undefined) return OTHER;
    const rank = communityRank.get(c);
    return rank !== undefined && rank < COMMUNITY_COLOURS.length ? COMMUNITY_COLOURS[rank] : OTHER;
  };
  const types = () => [...new Set([...nodes.values()].map((n) => n.type))].sort();
  let typeIndex = new Map<string, number>();
  const colourOf = (node: GraphNode): string =>
    mode === "community" ? communityColour(node.community) : mode === "type" ? TYPE_COLOURS[(typeIndex.get(node.type) ?? 0) % TYPE_COLOURS.length] : BAND_COLOURS[node.band];

  const add = (page: MemoryGraph, hops = false) => {
    const total = nodes.size + page.nodes.length;
    for (const node of page.nodes) {
      if (nodes.has(node.id)) continue;
      nodes.set(node.id, node);
      const [x, y] = seedPosition(node, groups, counts, total);
      graph.addNode(node.id, { x, y, label: node.label, size: nodeSize(node.importance, total), color: BAND_COLOURS[node.band], ...NODE_DEFAULTS, importance: node.importance, band: node.band, memoryType: node.type, community: node.community });
    }
    if (!hops) loaded += page.nodes.length;
    for (const edge of page.edges as GraphEdge[]) {
      const key = `${edge.src}|${edge.dst}|${edge.type}`;
      if (graph.hasEdge(key) || !graph.hasNode(edge.src) || !graph.hasNode(edge.dst)) continue;
      if (!hops) apiEdges += 1;
      if (!edgeTypes.includes(edge.type)) edgeTypes.push(edge.type);
      graph.addEdgeWithKey(key, edge.src, edge.dst, { color: edgeColour(edge.type, edgeTypes), size: 0.5 + edge.weight, ...EDGE_DEFAULTS, edgeType: edge.type, weight: edge.weight });
    }
    // Earlier nodes shrink with the graph's growth (in place: no copy of every node's attributes).
    // No attribute hint: with one, sigma repaints without indexing, which throws for the nodes just
    // added (they are indexed at the next render).
    if (total !== graph.order || nodes.size !== page.nodes.length)
      graph.updateEachNodeAttributes((_, a) => ((a.size = nodeSize(a.importance, graph.order)), a));
  };

  const drawLegends = () => {
    const entry = (key: string, colour: string, text: string) => h("span", { "data-key": key, "data-colour": colour }, swatch(colour), text);
    legend.replaceChildren(h("strong", {}, `Colour: ${mode} `));
    if (mode === "band") {
      const present = new Map<string, number>();
      for (const n of nodes.values()) present.set(n.band, (present.get(n.band) ?? 0) + 1);
      for (const band of BANDS) legend.append(entry(band, BAND_COLOURS[band], `${band} (${present.get(band) ?? 0})`));
    } else if (mode === "type") {
      for (const [t, i] of typeIndex) legend.append(entry(t, TYPE_COLOURS[i % TYPE_COLOURS.length], t));
    } else {
      const ranked = [...communityRank.keys()];
      ranked.slice(0, COMMUNITY_COLOURS.length).forEach((c) => legend.append(entry(String(c), communityColour(c), `community ${c}`)));
      const rest = ranked.length - COMMUNITY_COLOURS.length;
      const none = [...nodes.values()].some((n) => n.community === null || n.community === undefined);
      if (rest > 0 || none) legend.append(entry("other", OTHER, rest > 0 ? `${rest} smaller communities${none ? " and unassigned" : ""}` : "no community yet"));
    }
    edgeLegend.replaceChildren(h("strong", {}, "Edges "), ...edgeTypes.map((t) => entry(t, edgeColour(t, edgeTypes), t)));
    if (!edgeTypes.length) edgeLegend.append(h("span", {}, "none among these memories"));
  };

  const refreshOptions = () => {
    const keep = [typeFilter.value, communityFilter.value];
    typeFilter.replaceChildren(h("option", { value: "" }, "any type"), ...types().map((t) => h("option", { value: t }, t)));
    communityFilter.replaceChildren(h("option", { value: "" }, "any community"), ...[...communityRank.keys()].map((c) => h("option", { value: String(c) }, `community ${c}`)));
    [typeFilter.value, communityFilter.value] = keep;
  };

  const showStatus = () => {
    status.textContent = `${graph.order} memories, ${graph.size} edges${truncated ? " (more available)" : ""}`;
    canvas.dataset.nodes = String(graph.order);
    canvas.dataset.edges = String(graph.size);
    window.contextosGraphEdgesApi = apiEdges;
    more.replaceChildren();
    if (truncated) more.append(button(`Load ${PAGE} more`, () => loadMore(), { id: "graph-load-more" }));
  };

  // ForceAtlas2 moves a copy of the graph in its worker; the drawn graph takes its positions once
  // a second and at the end, so the renderer redraws a few times instead of on every iteration.
  let layoutGraph: Graph | null = null;
  const publishLayout = () => {
    const from = layoutGraph;
    if (!from) return;
    graph.updateEachNodeAttributes((id, a) => (from.hasNode(id) && ((a.x = from.getNodeAttribute(id, "x")), (a.y = from.getNodeAttribute(id, "y"))), a), { attributes: ["x", "y"] });
  };
  const stopLayout = () => {
    if (!layout) return;
    layout.kill();
    layout = null;
    publishLayout();
    layoutGraph = null;
    window.contextosLayoutRunning = false;
    canvas.dataset.layout = "done";
  };
  // Every node where its community puts it (the first frame's layout and each reload's). Without
  // the API's communities, the first frame keeps the type spiral `add` placed the nodes on, and
  // the layout is seeded by a Louvain run here once that frame is on screen. True once seeded.
  const seedLayout = (louvainIfNone: boolean): boolean => {
    const groups = communitiesForLayout(graph, louvainIfNone);
    if (!groups) return false;
    const seed = groupedPositions(groups);
    graph.updateEachNodeAttributes((id, a) => (([a.x, a.y] = seed.get(id)!), a), { attributes: ["x", "y"] });
    return true;
  };
  // ForceAtlas2 refines the seeded positions in its worker.
  const runLayout = () => {
    layout?.kill();
    if (graph.order < 2) return;
    layoutGraph = graph.copy();
    const mine = new FA2Layout(layoutGraph, { settings: { ...forceAtlas2.inferSettings(graph), barnesHutOptimize: graph.order > 500, slowDown: 5 } });
    layout = mine;
    mine.start();
    window.contextosLayoutRunning = true;
    delete canvas.dataset.layout;
    const tick = window.setInterval(() => (layout === mine ? publishLayout() : window.clearInterval(tick)), LAYOUT_PUBLISH_MS);
    window.setTimeout(() => {
      window.clearInterval(tick);
      if (layout === mine) stopLayout();
    }, LAYOUT_MS);
  };
  // Community and type ranks (their colours), the node colours when they are not the bands' (set
  // as nodes are added), the legends and the filters' options.
  const regroup = (recolourNodes: boolean) => {
    const sizes = new Map<number, number>();
    for (const n of nodes.values()) if (n.community !== null && n.community !== undefined) sizes.set(n.community, (sizes.get(n.community) ?? 0) + 1);
    communityRank = new Map([...sizes.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]).map(([c], i) => [c, i]));
    typeIndex = new Map(types().map((t, i) => [t, i]));
    if (recolourNodes) graph.updateEachNodeAttributes((id, a) => ((a.color = colourOf(nodes.get(id)!)), a)); // no hint: as in add
    drawLegends();
    refreshOptions();
  };

  // Everything the first frame shows in one request per 5,000 memories (in parallel; a page's
  // edges reach back into the pages before it, so they are added in rank order).
  const marks: Record<string, number> = { started: performance.now() };
  window.contextosMarks = marks;
  const offsets = Array.from({ length: Math.ceil(want / COLUMNS_PAGE) }, (_, i) => i * COLUMNS_PAGE);
  const pages = await Promise.all(offsets.map((offset) => fetchPage(offset, Math.min(COLUMNS_PAGE, want - offset))));
  marks.received = performance.now();
  for (const page of pages) {
    add(fromColumns(page, idsByRank));
    truncated = page.truncated;
    if (!page.truncated) break;
  }
  showStatus();
  if (!graph.order) {
    canvas.hidden = true;
    status.textContent = "No memories yet. Ingest a document, import a workspace or end a session, and its memories appear here.";
    canvas.dataset.empty = "true";
    return;
  }
  const seeded = seedLayout(false);
  marks.built = performance.now();

  disposeGraph();
  const labels = labelsThatDoNotOverlap();
  renderer = new Sigma(graph, canvas, {
    ...(variant === "sigma" ? {} : CPU_PROGRAMS),
    renderEdgeLabels: false,
    labelRenderedSizeThreshold: 5,
    labelDensity: 0.5,
    labelGridCellSize: 160,
    defaultDrawNodeLabel: labels.draw,
    defaultEdgeType: "arrow",
    hideEdgesOnMove: false,
    zIndex: true,
    nodeReducer: (id, attrs) => {
      const node = nodes.get(id)!;
      const hidden =
        (filters.band && node.band !== filters.band) ||
        (filters.type && node.type !== filters.type) ||
        (filters.community && String(node.community) !== filters.community);
      if (hidden) return { ...attrs, hidden: true };
      if (focus && id !== focus.id && !focus.neighbours.has(id)) return { ...attrs, color: "#e5e7eb", label: "", zIndex: 0 };
      if (focus) return { ...attrs, highlighted: id === focus.id || attrs.highlighted, zIndex: 1, forceLabel: true };
      return attrs;
    },
    edgeReducer: (id, attrs) => {
      if (focus && !graph.extremities(id).includes(focus.id)) return { ...attrs, hidden: true };
      return attrs;
    },
  });
  marks.renderer = performance.now(); // sigma drew the first frame in its constructor
  moves = new CameraMoves(renderer);
  moves.enabled = variant !== "full" && variant !== "sigma";
  moves.onShown = (shown) => (window.contextosShown = shown);
  renderer.on("beforeRender", labels.reset);
  window.contextosRenderer = renderer;
  window.contextosGraph = graph;
  window.contextosLayoutRunning = true;
  // The frame with those pixels is committed before the second animation frame from now begins
  // (the commit reads the WebGL canvases back, waiting for the GPU process).
  const painted = renderer;
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      if (renderer !== painted) return; // the reader left the graph meanwhile
      window.contextosFirstPaintMs = performance.now() - started;
      window.contextosFirstPaintAt = performance.now(); // from navigation: the page's time origin
      canvas.dataset.painted = "true";
      // What the first frame does not need: legends, filter options, then the layout.
      window.setTimeout(() => {
        if (renderer !== painted) return;
        regroup(mode !== "band");
        if (!seeded) seedLayout(true);
        runLayout();
      });
    }),
  );

  const loadMore = async () => {
    more.replaceChildren("loading…");
    const page = await fetchPage(loaded, PAGE);
    add(fromColumns(page, idsByRank));
    truncated = page.truncated;
    regroup(mode !== "band");
    seedLayout(true);
    runLayout();
    showStatus();
  };
  const showSelected = (id: string) => {
    const node = nodes.get(id)!;
    const neighbours = new Set(graph.neighbors(id));
    focus = { id, neighbours };
    selected.replaceChildren(
      h("h3", {}, node.label),
      h("p", {}, `${node.type} · band ${node.band} · importance ${node.importance} · ${neighbours.size} neighbours shown`),
      h("a", { href: `#/memory/${id}`, id: "graph-open" }, "Open this memory"),
      " ",
      button("Expand neighbours", async () => {
        add(await api<MemoryGraph>("GET", `/memories/${id}/graph?hops=1&limit=200`), true);
        regroup(mode !== "band");
        showSelected(id);
        showStatus();
      }, { id: "graph-expand" }),
      " ",
      button("Clear selection", () => {
        focus = null;
        selected.replaceChildren();
        renderer?.refresh();
      }),
    );
    renderer?.refresh();
  };
  const centre = (id: string) => {
    // the reader asked for this memory: hold the layout still so it stays where the camera goes
    stopLayout();
    if (!renderer) return;
    const r = renderer;
    // Sigma frames positions against the graph's extent as of its last render; the layout may have
    // moved nodes since, and at this zoom a stale frame misses by a screen: render first, then aim.
    r.refresh();
    const aim = () => r.getNodeDisplayData(id);
    const first = aim();
    if (first)
      void r.getCamera().animate({ x: first.x, y: first.y, ratio: 0.15 }, { duration: 300 }).then(() => {
        const now = aim();
        if (renderer === r && now && (now.x !== first.x || now.y !== first.y)) r.getCamera().setState({ x: now.x, y: now.y });
      });
    showSelected(id);
  };

  renderer.on("clickNode", ({ node }) => showSelected(node));
  renderer.on("doubleClickNode", ({ node }) => navigate(`#/memory/${node}`));
  attachKeyboard(canvas, renderer, graph, (text) => (focusStatus.textContent = text), (id) => navigate(`#/memory/${id}`));
  colourBy.addEventListener("change", () => {
    mode = colourBy.value as ColourMode;
    regroup(true);
  });
  for (const filter of [bandFilter, typeFilter, communityFilter])
    filter.addEventListener("change", () => {
      filters = { band: bandFilter.value, type: typeFilter.value, community: communityFilter.value };
      renderer?.refresh();
    });
  search.addEventListener("input", () => {
    const needle = search.value.trim().toLowerCase();
    results.replaceChildren();
    if (!needle) return;
    const hits = [...nodes.values()].filter((n) => n.label.toLowerCase().includes(needle)).slice(0, 20);
    for (const hit of hits) {
      results.append(
        h("li", {}, h("a", { href: `#/memory/${hit.id}` }, hit.label), " ", button("Centre", () => centre(hit.id), { class: "centre", "data-id": hit.id, "aria-label": `Centre ${hit.label}` })),
      );
    }
  });
}
