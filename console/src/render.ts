// The graph's renderer on a CPU: sigma with programs that suit SwiftShader, and camera moves shown
// by moving the last full frame (a compositor transform) until the camera has been still for
// SETTLE_MS with no button or finger down, then one full redraw.
//
// Why: without a GPU, Chromium runs WebGL on SwiftShader and reads every changed WebGL canvas back
// for its software compositor, so a full frame of 5,000 nodes and 10,000 edges costs hundreds of
// milliseconds, and sigma redraws everything on each camera change. The moved frame puts every
// node and edge where the new camera puts it (exact for a pan or a zoom; strokes and labels are
// scaled with it, and the border a pan uncovers stays empty until the redraw).
import type Sigma from "sigma";
import { EdgeLineProgram, NodePointProgram } from "sigma/rendering";
import type { CameraState, Coordinates, CoordinateConversionOverride } from "sigma/types";

export const SETTLE_MS = 160;
const DRAWN_LAYERS = ["edges", "nodes", "labels"]; // what a frame draws
const HOVER_LAYERS = ["edgeLabels", "hovers", "hoverNodes"]; // drawn only for hovered and highlighted nodes

// What the benchmark and the tests read: which camera is on screen, and how it got there.
export interface Shown {
  camera: CameraState;
  kind: "full" | "moved";
  began: number; // performance.now() when drawing or moving it began
  at: number; // performance.now() once it was drawn or moved (the compositor comes next)
}

// Non-instanced programs: SwiftShader pays per instance for sigma's instanced defaults (circle
// nodes, arrow and rectangle edges), 5 to 6 times what points and lines cost here.
export const CPU_PROGRAMS = {
  nodeProgramClasses: { circle: NodePointProgram },
  edgeProgramClasses: { arrow: EdgeLineProgram, line: EdgeLineProgram },
};

// The sigma methods this replaces on one instance. `render` and `scheduleRender` are private in
// sigma's types but are what sigma itself calls on every camera update (sigma 3.0.3, pinned).
interface Internals {
  render(): Sigma;
  scheduleRender(): Sigma;
  refresh: Sigma["refresh"];
  framedGraphToViewport: Sigma["framedGraphToViewport"];
  viewportToFramedGraph: Sigma["viewportToFramedGraph"];
}

// What sigma draws on its hover layers between frames (private fields, read only).
interface Hovering {
  hoveredNode: string | null;
  highlightedNodes: Set<string>;
}

export class CameraMoves {
  enabled = true; // false: a full redraw on each camera change, as sigma does
  onShown: ((shown: Shown) => void) | null = null;
  private drawn: { camera: CameraState; width: number; height: number };
  private moved = false; // the layers show the drawn frame under a transform
  private contentChanged = false;
  private frame = 0;
  private settle = 0;
  private held = false; // a button or finger is down: a drag that pauses is not over
  private readonly base: Internals;

  // Sigma drew its first frame in its constructor: that is the drawn frame.
  constructor(private readonly sigma: Sigma) {
    this.drawn = { camera: sigma.getCamera().getState(), ...sigma.getDimensions() };
    const self = sigma as unknown as Internals;
    this.base = {
      render: self.render.bind(sigma),
      scheduleRender: self.scheduleRender.bind(sigma),
      refresh: self.refresh.bind(sigma),
      framedGraphToViewport: self.framedGraphToViewport.bind(sigma),
      viewportToFramedGraph: self.viewportToFramedGraph.bind(sigma),
    };
    // Anything but the camera (graph, reducers, settings) goes through refresh: drawn in full.
    self.refresh = (opts) => {
      this.contentChanged = true;
      return this.base.refresh(opts);
    };
    self.scheduleRender = () => {
      if (!this.frame)
        this.frame = requestAnimationFrame(() => {
          this.frame = 0;
          this.render();
        });
      return sigma;
    };
    self.render = () => this.render();
    // While moved, sigma's own matrix is the drawn frame's: conversions use the camera on screen.
    self.framedGraphToViewport = (c: Coordinates, o: CoordinateConversionOverride = {}) => this.base.framedGraphToViewport(c, this.onScreen(o));
    self.viewportToFramedGraph = (c: Coordinates, o: CoordinateConversionOverride = {}) => this.base.viewportToFramedGraph(c, this.onScreen(o));
    // A click during a move must hit what is on screen: draw the frame first (capture phase, so
    // before sigma reads its picking buffer).
    sigma.getContainer().addEventListener("click", this.flush, { capture: true });
    for (const down of ["mousedown", "touchstart"]) sigma.getContainer().addEventListener(down, this.press);
    for (const up of ["mouseup", "touchend", "touchcancel"]) document.addEventListener(up, this.release);
  }

  dispose(): void {
    window.clearTimeout(this.settle);
    if (this.frame) cancelAnimationFrame(this.frame);
    this.onShown = null;
    this.sigma.getContainer().removeEventListener("click", this.flush, { capture: true });
    for (const down of ["mousedown", "touchstart"]) this.sigma.getContainer().removeEventListener(down, this.press);
    for (const up of ["mouseup", "touchend", "touchcancel"]) document.removeEventListener(up, this.release);
  }

  private readonly flush = () => {
    if (this.moved) this.drawFull();
  };

  private readonly press = () => {
    this.held = true;
  };

  private readonly release = () => {
    this.held = false;
    if (this.moved) this.armSettle();
  };

  private armSettle(): void {
    window.clearTimeout(this.settle);
    this.settle = window.setTimeout(() => (this.held ? this.armSettle() : this.drawFull()), SETTLE_MS);
  }

  private render(): Sigma {
    const began = performance.now();
    const camera = this.sigma.getCamera().getState();
    if (!this.canMove(camera)) return this.drawFull();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    window.clearTimeout(this.settle);
    if (sameCamera(camera, this.drawn.camera)) this.clearMove();
    else {
      this.moveLayers(this.drawn.camera, camera);
      this.armSettle();
    }
    this.onShown?.({ camera, kind: "moved", began, at: performance.now() });
    return this.sigma;
  }

  private drawFull(): Sigma {
    const began = performance.now();
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    window.clearTimeout(this.settle);
    this.contentChanged = false;
    this.clearMove(); // in the same task as the redraw, so both reach the screen in one frame
    this.base.render();
    const camera = this.sigma.getCamera().getState();
    const { width, height } = this.sigma.getDimensions();
    this.drawn = { camera, width, height };
    this.onShown?.({ camera, kind: "full", began, at: performance.now() });
    return this.sigma;
  }

  // A moved frame is exact only for a pan or a zoom of the same graph in the same container.
  private canMove(camera: CameraState): boolean {
    const drawn = this.drawn;
    if (!this.enabled || this.contentChanged || camera.angle !== drawn.camera.angle) return false;
    const container = this.sigma.getContainer();
    return container.offsetWidth === drawn.width && container.offsetHeight === drawn.height;
  }

  private onScreen(override: CoordinateConversionOverride): CoordinateConversionOverride {
    if (!this.moved || override.matrix || override.cameraState) return override;
    return { ...override, cameraState: this.sigma.getCamera().getState() };
  }

  private moveLayers(from: CameraState, to: CameraState): void {
    // Two framed-graph points under both cameras give the scale and the offset between the frames.
    const at = (x: number, cameraState: CameraState) => this.base.framedGraphToViewport({ x, y: x }, { cameraState });
    const [a0, a1, b0, b1] = [at(0, from), at(1, from), at(0, to), at(1, to)];
    const scale = (b1.x - b0.x) / (a1.x - a0.x);
    const transform = `translate(${b0.x - scale * a0.x}px, ${b0.y - scale * a0.y}px) scale(${scale})`;
    // The software compositor draws every moved layer again on each frame: the hover layers are
    // empty unless something is hovered or highlighted, so they are hidden instead of moved. The
    // mouse layer stays put: sigma reads pointer positions against it.
    const hovering = this.hovering();
    const canvases = this.sigma.getCanvases();
    for (const id of [...DRAWN_LAYERS, ...HOVER_LAYERS]) {
      const layer = canvases[id];
      if (!layer) continue;
      if (hovering || DRAWN_LAYERS.includes(id)) {
        layer.style.transformOrigin = "0 0";
        layer.style.transform = transform;
        layer.style.visibility = "";
      } else layer.style.visibility = "hidden";
    }
    this.moved = true;
  }

  private clearMove(): void {
    if (!this.moved) return;
    const canvases = this.sigma.getCanvases();
    for (const id of [...DRAWN_LAYERS, ...HOVER_LAYERS]) {
      if (!canvases[id]) continue;
      canvases[id].style.transform = "";
      canvases[id].style.visibility = "";
    }
    this.moved = false;
  }

  private hovering(): boolean {
    const { hoveredNode, highlightedNodes } = this.sigma as unknown as Hovering;
    return hoveredNode !== null || highlightedNodes.size > 0;
  }
}

function sameCamera(a: CameraState, b: CameraState): boolean {
  return a.x === b.x && a.y === b.y && a.ratio === b.ratio && a.angle === b.angle;
}
