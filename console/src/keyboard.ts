// Keyboard operation of the graph canvas: arrow keys move to the nearest memory in that direction
// on screen, Enter opens it, + and - zoom, Escape lets go. WebGL draws no focusable elements, so
// the canvas holds the focus and a live region says which memory is selected.
import type Graph from "graphology";
import type Sigma from "sigma";

export interface Point {
  id: string;
  x: number;
  y: number;
}

const DIRECTIONS: Record<string, [number, number]> = {
  ArrowRight: [1, 0],
  ArrowLeft: [-1, 0],
  ArrowDown: [0, 1],
  ArrowUp: [0, -1],
};

// The nearest candidate ahead of `from` in screen direction `dir`, preferring ones close to the
// axis: distance along it plus twice the distance across it. Null when nothing lies that way.
export function nextInDirection(from: Point, candidates: Point[], dir: [number, number]): string | null {
  let best: string | null = null;
  let bestScore = Infinity;
  for (const c of candidates) {
    if (c.id === from.id) continue;
    const vx = c.x - from.x;
    const vy = c.y - from.y;
    const along = vx * dir[0] + vy * dir[1];
    if (along <= 0) continue;
    const score = along + 2 * Math.abs(vx * dir[1] - vy * dir[0]);
    if (score < bestScore) {
      bestScore = score;
      best = c.id;
    }
  }
  return best;
}

export function attachKeyboard(
  canvas: HTMLElement,
  renderer: Sigma,
  graph: Graph,
  announce: (text: string) => void,
  open: (id: string) => void,
): void {
  let focused: string | null = null;
  const onScreen = (id: string): Point => ({ id, ...renderer.graphToViewport(graph.getNodeAttributes(id) as { x: number; y: number }) });
  const select = (id: string) => {
    if (focused && graph.hasNode(focused)) graph.setNodeAttribute(focused, "highlighted", false);
    focused = id;
    graph.setNodeAttribute(id, "highlighted", true);
    canvas.dataset.focused = id;
    const attrs = graph.getNodeAttributes(id);
    announce(`${attrs.label} (${attrs.band}). Enter opens it.`);
    const p = onScreen(id);
    const { width, height } = renderer.getDimensions();
    if (p.x < 0 || p.y < 0 || p.x > width || p.y > height) {
      const display = renderer.getNodeDisplayData(id);
      if (display) renderer.getCamera().animate({ x: display.x, y: display.y }, { duration: 200 });
    }
  };
  canvas.addEventListener("keydown", (event) => {
    if (!graph.order) return;
    const dir = DIRECTIONS[event.key];
    if (dir) {
      event.preventDefault();
      if (!focused || !graph.hasNode(focused)) {
        // The first key press starts at the most important memory.
        let start = graph.nodes()[0];
        graph.forEachNode((id, attrs) => {
          if (attrs.size > graph.getNodeAttribute(start, "size")) start = id;
        });
        select(start);
        return;
      }
      const next = nextInDirection(onScreen(focused), graph.nodes().map(onScreen), dir);
      if (next) select(next);
      else announce(`Nothing further that way from ${graph.getNodeAttribute(focused, "label")}.`);
    } else if (event.key === "Enter" && focused) {
      event.preventDefault();
      open(focused);
    } else if (event.key === "+" || event.key === "=") {
      event.preventDefault();
      renderer.getCamera().animatedZoom({ duration: 150 });
    } else if (event.key === "-") {
      event.preventDefault();
      renderer.getCamera().animatedUnzoom({ duration: 150 });
    } else if (event.key === "Escape" && focused) {
      graph.setNodeAttribute(focused, "highlighted", false);
      focused = null;
      delete canvas.dataset.focused;
      announce("No memory selected.");
    }
  });
}
