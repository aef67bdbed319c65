// Where the graph's nodes start: grouped by community, each group a sunflower of its members and
// the groups a sunflower spaced by their size. ForceAtlas2 then refines it in its worker; at
// thousands of nodes on a CPU it manages only tens of iterations in a few seconds, so the seed is
// most of what a reader sees.
import type Graph from "graphology";
import louvain from "graphology-communities-louvain";

const GOLDEN_ANGLE = 2.399963;

// The API's communities when it has them for every node (the daily governance job), otherwise
// Louvain's here: for the layout only — the community colours and filters stay the API's.
export function communitiesForLayout(graph: Graph): Record<string, string> {
  const fromApi: Record<string, string> = {};
  let complete = true;
  graph.forEachNode((id, a) => {
    if (a.community === null || a.community === undefined) complete = false;
    else fromApi[id] = String(a.community);
  });
  if (complete || graph.size === 0) return complete ? fromApi : Object.fromEntries(graph.mapNodes((id, a) => [id, `t:${a.memoryType}`]));
  return Object.fromEntries(Object.entries(louvain(graph, { getEdgeWeight: null, rng: seeded(7) })).map(([id, c]) => [id, String(c)]));
}

export function groupedPositions(groupOf: Record<string, string>): Map<string, [number, number]> {
  const sizes = new Map<string, number>();
  for (const g of Object.values(groupOf)) sizes.set(g, (sizes.get(g) ?? 0) + 1);
  const centres = new Map<string, [number, number]>();
  let placed = 0;
  [...sizes.entries()]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .forEach(([g, size], k) => {
      const r = Math.sqrt(placed + size / 2) * 1.6;
      centres.set(g, [r * Math.cos(k * GOLDEN_ANGLE), r * Math.sin(k * GOLDEN_ANGLE)]);
      placed += size;
    });
  const seen = new Map<string, number>();
  const out = new Map<string, [number, number]>();
  for (const [id, g] of Object.entries(groupOf)) {
    const i = seen.get(g) ?? 0;
    seen.set(g, i + 1);
    const [cx, cy] = centres.get(g)!;
    const r = Math.sqrt(i + 0.5) * 0.8;
    out.set(id, [cx + r * Math.cos(i * GOLDEN_ANGLE), cy + r * Math.sin(i * GOLDEN_ANGLE)]);
  }
  return out;
}

// A fixed seed, so the same graph is laid out the same way on every visit.
function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}
