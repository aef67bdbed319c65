// Where the graph's nodes start: grouped by community, each group a sunflower of its members and
// the groups a sunflower spaced by their size. ForceAtlas2 then refines it in its worker; at
// thousands of nodes on a CPU it manages only tens of iterations in a few seconds, so the seed is
// most of what a reader sees.
import type Graph from "graphology";
import louvain from "graphology-communities-louvain";

const GOLDEN_ANGLE = 2.399963;

// The API's communities (the governance job's Louvain over the whole tenant). A memory the job has
// not reached yet joins the community most of its neighbours are in, or else its type's group.
// A tenant with no communities at all yet is grouped by a Louvain run here when `louvainIfNone`
// (null otherwise) — for the layout only: the community colours and filters stay the API's.
export function communitiesForLayout(graph: Graph, louvainIfNone: boolean): Record<string, string> | null {
  const group: Record<string, string> = {};
  const missing: string[] = [];
  graph.forEachNode((id, a) => {
    if (a.community === null || a.community === undefined) missing.push(id);
    else group[id] = `c:${a.community}`;
  });
  if (missing.length === graph.order && graph.size > 0) {
    if (!louvainIfNone) return null;
    return Object.fromEntries(Object.entries(louvain(graph, { getEdgeWeight: null, rng: seeded(7) })).map(([id, c]) => [id, `l:${c}`]));
  }
  for (const id of missing) {
    const votes = new Map<string, number>();
    graph.forEachNeighbor(id, (neighbour) => {
      const g = group[neighbour];
      if (g !== undefined && !g.startsWith("t:")) votes.set(g, (votes.get(g) ?? 0) + 1);
    });
    let best = `t:${graph.getNodeAttribute(id, "memoryType")}`;
    let most = 0;
    for (const [g, count] of votes) if (count > most) [best, most] = [g, count];
    group[id] = best;
  }
  return group;
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
