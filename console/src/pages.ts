// The linked pages: memory list, memory page (curve from the API), documents, forecast, health and governance.
import { api, ApiError } from "./api";
import { bar, button, h, table } from "./dom";
import {
  BAND_COLOURS,
  BANDS,
  type AuditPage,
  type DocumentMemories,
  type DocumentRecord,
  type Forecast,
  type ForecastSeries,
  type GovernanceReport,
  type HealthReport,
  type MemoryDetail,
  type MemoryHistory,
  type MemoryPage,
  type StrengthCurve,
} from "./types";

export type Rerender = () => Promise<void>;
const MEMORY_TYPES = ["problem", "decision", "fact", "entity", "event", "preference", "code", "rule", "skill", "task", "context", "scratch"];

function message(error: unknown): string {
  return error instanceof ApiError ? `${error.code}: ${error.message}` : String(error);
}

function scroll(child: HTMLElement): HTMLElement {
  return h("div", { class: "scroll" }, child); // wide tables scroll inside their card on a phone
}

function link(href: string, text: string, attrs: Record<string, string> = {}): HTMLElement {
  return h("a", { href, ...attrs }, text);
}

function svgEl(tag: string, attrs: Record<string, string | number>, text?: string): SVGElement {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

const day = (iso: string) => iso.slice(0, 10);

// The strength curve the API computed: y 0–1 with the band thresholds, x dated from creation to
// the horizon, "now" and every band crossing marked.
function curveChart(curve: StrengthCurve): HTMLElement {
  const W = 640, H = 240, L = 48, R = 16, T = 12, B = 40;
  const t0 = Date.parse(curve.points[0].at), t1 = Date.parse(curve.points[curve.points.length - 1].at);
  const x = (iso: string) => L + ((Date.parse(iso) - t0) / Math.max(t1 - t0, 1)) * (W - L - R);
  const y = (s: number) => T + (1 - s) * (H - T - B);
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, width: W, role: "img", id: "strength-curve", "aria-label": `Strength ${curve.strength_now.toFixed(3)} now (${curve.band_now}); ${curve.policy} decay` });
  svg.append(svgEl("line", { x1: L, x2: L, y1: T, y2: H - B, stroke: "#111" }), svgEl("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: "#111" }));
  for (const s of [0, 0.25, 0.5, 0.75, 1]) svg.append(svgEl("text", { x: L - 6, y: y(s) + 4, "text-anchor": "end", "font-size": 11, fill: "#111" }, s.toFixed(2)));
  const thresholds: [string, number][] = [
    ["strong", curve.thresholds.strong],
    ["fading", curve.thresholds.fading],
    ["forgotten", curve.policy === "weibull" ? curve.thresholds.weibull_forgotten : curve.thresholds.forgotten],
  ];
  for (const [name, s] of thresholds) {
    svg.append(svgEl("line", { x1: L, x2: W - R, y1: y(s), y2: y(s), stroke: BAND_COLOURS[name as keyof typeof BAND_COLOURS], "stroke-dasharray": "4 3", class: "threshold", "data-band": name, "data-value": s }));
    svg.append(svgEl("text", { x: W - R - 2, y: y(s) - 3, "text-anchor": "end", "font-size": 11, fill: "#111" }, `${name} ${s}`));
  }
  const ticks = 4;
  for (let i = 0; i <= ticks; i++) {
    const at = new Date(t0 + ((t1 - t0) * i) / ticks).toISOString();
    svg.append(svgEl("text", { x: x(at), y: H - B + 16, "text-anchor": i === 0 ? "start" : i === ticks ? "end" : "middle", "font-size": 11, fill: "#111", class: "x-tick" }, day(at)));
  }
  svg.append(svgEl("text", { x: (W + L) / 2, y: H - 6, "text-anchor": "middle", "font-size": 11, fill: "#111" }, "date"));
  svg.append(svgEl("polyline", { fill: "none", stroke: "#1d4ed8", "stroke-width": 2, points: curve.points.map((p) => `${x(p.at).toFixed(1)},${y(p.strength).toFixed(1)}`).join(" ") }));
  svg.append(svgEl("line", { x1: x(curve.now), x2: x(curve.now), y1: T, y2: H - B, stroke: "#111", "stroke-dasharray": "2 2" }));
  svg.append(svgEl("text", { x: x(curve.now) + 3, y: T + 10, "font-size": 11, fill: "#111" }, "now"));
  return h(
    "figure",
    {},
    svg,
    h("figcaption", {}, `Strength by the API's ${curve.policy} decay${curve.rate ? ` (λ ${curve.rate} a day)` : ""}, anchored ${day(curve.anchored_at)} at ${curve.anchor.toFixed(2)}; no further access assumed.`),
    table(["enters band", "on"], curve.crossings.map((c) => [c.band, day(c.at)]), { id: "curve-crossings" }),
  );
}

export async function memoryView(view: HTMLElement, id: string, rerender: Rerender): Promise<void> {
  const outcome = h("p", { id: "memory-outcome", role: "status" });
  const act = (fn: () => Promise<unknown>, done: string) => async () => {
    try {
      await fn();
      sessionStorage.setItem("contextos.outcome", done);
      await rerender(); // the page shows what the API now says, as a reload would
    } catch (error) {
      outcome.textContent = message(error);
    }
  };
  const said = sessionStorage.getItem("contextos.outcome");
  sessionStorage.removeItem("contextos.outcome");
  if (said) outcome.textContent = said;
  // The curve route also answers for a forgotten memory (its owner may restore it), so a
  // forgotten memory's page needs no request that would 404.
  const curve = await api<StrengthCurve>("GET", `/forecast/memories/${id}`);
  if (curve.forgotten_at) {
    view.append(
      h("h2", {}, "Forgotten memory"),
      h("p", { class: "banner", id: "forgotten-banner", role: "note" }, `This memory was forgotten on ${day(curve.forgotten_at)}: no read returns it. Restore brings it back.`),
      button("Restore", act(() => api("POST", `/memories/${id}/restore`, {}), "restored"), { id: "restore" }),
      outcome,
      h("p", {}, link("#/memories?state=forgotten", "All forgotten memories")),
    );
    return;
  }
  const [memory, history, audit] = await Promise.all([
    api<MemoryDetail>("GET", `/memories/${id}`),
    api<MemoryHistory>("GET", `/memories/${id}/history`).catch(() => null),
    api<AuditPage>("GET", `/audit?memory_id=${id}`).catch(() => ({ entries: [] }) as unknown as AuditPage),
  ]);
  const superseded = memory.state === "superseded";
  const versionNames = new Map((history?.versions ?? []).map((v) => [v.id, `${v.label}: ${v.definition.slice(0, 60)}`]));
  view.append(
    h("h2", {}, memory.label),
    superseded
      ? h("p", { class: "banner", id: "superseded-banner", role: "note" }, "Superseded: a newer version replaced this memory; it is kept for history and cannot be edited. ", memory.superseded_by ? link(`#/memory/${memory.superseded_by}`, "Open the current version", { id: "superseded-by" }) : "")
      : "",
    h("p", {}, `${memory.type} · importance ${memory.importance} · band ${memory.band} · ${memory.state} · ${memory.tier} · strength `, h("span", { id: "memory-strength" }, memory.strength.toFixed(3))),
    h("p", {}, memory.definition),
    superseded ? "" : curveChart(curve), // a superseded version no longer decays toward anything a read uses
  );
  if (!superseded) {
    const label = h("input", { id: "edit-label", value: memory.label }) as HTMLInputElement;
    const definition = h("textarea", { id: "edit-definition", rows: "4", cols: "60" }, memory.definition) as HTMLTextAreaElement;
    const importance = h("input", { id: "edit-importance", type: "number", min: "1", max: "10", value: String(memory.importance) }) as HTMLInputElement;
    view.append(
      h("h3", {}, "Edit"),
      h("label", { for: "edit-label" }, "Label "), label, h("br"),
      h("label", { for: "edit-definition" }, "Definition "), definition, h("br"),
      h("label", { for: "edit-importance" }, "Importance "), importance, " ",
      button("Save", act(() => api("PATCH", `/memories/${id}`, { label: label.value, definition: definition.value, importance: Number(importance.value) }), "saved"), { id: "save" }),
    );
  }
  const reason = h("input", { id: "forget-reason", value: "" }) as HTMLInputElement;
  view.append(
    h("h3", {}, superseded ? "Restore" : "Forget or restore"),
    ...(superseded
      ? []
      : [
          h("label", { for: "forget-reason" }, "Reason "), reason, " ",
          button("Forget", act(() => api("DELETE", `/memories/${id}${reason.value ? `?reason=${encodeURIComponent(reason.value)}` : ""}`), "forgotten"), { id: "forget" }),
          " ",
        ]),
    memory.state !== "active" && !superseded ? button("Restore", act(() => api("POST", `/memories/${id}/restore`, {}), "restored"), { id: "restore" }) : "",
    superseded ? restoreChoice(id, act) : "",
    outcome,
    h("h3", {}, "Sources"),
    scroll(
      table(
        ["source", "excerpt", "at"],
        memory.sources.map((s) => [
          s.document_id
            ? link(`#/documents/${s.document_id}`, s.filename ?? s.document_id, { class: "source-link" })
            : s.session_id
              ? link(`#/sessions/${encodeURIComponent(s.session_id)}`, `session ${s.session_id}${s.message_from ? ` · messages ${s.message_from}–${s.message_to}` : ""}`, { class: "source-link" })
              : "",
          s.definition,
          s.created_at,
        ]),
        { id: "sources-table" },
      ),
    ),
    h("h3", {}, "History"),
    scroll(
      table(
        ["version", "state", "text", "valid from", "valid to", "superseded by"],
        (history?.versions ?? []).map((v) => [
          v.id === id ? `${v.label} (this)` : link(`#/memory/${v.id}`, v.label),
          v.state,
          v.definition,
          v.valid_from.slice(0, 19),
          v.valid_to ? v.valid_to.slice(0, 19) : "still holds",
          v.superseded_by
            ? link(`#/memory/${v.superseded_by}`, versionNames.get(v.superseded_by) ?? v.superseded_by, { class: "superseded-link" })
            : "",
        ]),
        { id: "history-table" },
      ),
    ),
    h("h3", {}, "Audit"),
    scroll(table(["#", "at", "actor", "action", "reason"], audit.entries.map((e) => [e.chain_seq, e.at, e.actor, e.action, e.reason ?? ""]), { id: "audit-table" })),
  );
}

export async function memoriesView(view: HTMLElement, navigate: (hash: string) => void, rerender: Rerender): Promise<void> {
  const params = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const choose = (id: string, values: string[], any: string) => {
    const el = h("select", { id }, h("option", { value: "" }, any), ...values.map((v) => h("option", { value: v }, v))) as HTMLSelectElement;
    el.value = params.get(id.replace("list-", "")) ?? "";
    return el;
  };
  const band = choose("list-band", BANDS, "any band");
  const type = choose("list-type", MEMORY_TYPES, "any type");
  const state = choose("list-state", ["active", "superseded", "archived", "forgotten"], "any live state");
  const prefix = h("input", { id: "list-prefix", value: params.get("prefix") ?? "" }) as HTMLInputElement;
  const form = h("form", { id: "list-filters", class: "controls" },
    h("label", { for: "list-band" }, "Band "), band, " ",
    h("label", { for: "list-type" }, "Type "), type, " ",
    h("label", { for: "list-state" }, "State "), state, " ",
    h("label", { for: "list-prefix" }, "Label starts with "), prefix, " ",
    h("button", { type: "submit" }, "Filter"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const q = new URLSearchParams();
    for (const [k, el] of [["band", band], ["type", type], ["state", state], ["prefix", prefix]] as const) if (el.value) q.set(k, el.value);
    navigate(`#/memories${q.size ? `?${q}` : ""}`);
  });
  const body = h("tbody");
  const more = h("p");
  const outcome = h("p", { id: "list-outcome", role: "status" });
  const headers = ["memory", "type", "band", "state", "strength", "created", ""];
  view.append(
    h("h2", {}, "Memories"),
    form,
    outcome,
    scroll(h("table", { id: "memories-table" }, h("thead", {}, h("tr", {}, ...headers.map((n) => h("th", { scope: "col" }, n)))), body)),
    more,
  );
  const load = async (cursor?: string) => {
    const q = new URLSearchParams({ limit: "100" });
    for (const k of ["band", "type", "state", "prefix"]) if (params.get(k)) q.set(k, params.get(k)!);
    if (cursor) q.set("cursor", cursor);
    const page = await api<MemoryPage>("GET", `/memories?${q}`);
    for (const m of page.memories) {
      const shownState = m.forgotten_at ? "forgotten" : m.state;
      const restorable = shownState !== "active";
      body.append(
        h("tr", { "data-id": m.id },
          ...[
            m.forgotten_at ? m.label : link(`#/memory/${m.id}`, m.label),
            m.type,
            h("span", {}, h("span", { class: "swatch", "data-band": m.band }), m.band),
            m.superseded_by ? h("span", {}, "superseded by ", link(`#/memory/${m.superseded_by}`, "current")) : shownState,
            m.strength.toFixed(3),
            m.created_at.slice(0, 19),
            restorable && m.superseded_by
              ? link(`#/memory/${m.id}`, "Restore…", { class: "restore-choice", "aria-label": `Restore ${m.label}: choose how` })
              : restorable
              ? button("Restore", async () => {
                  try {
                    await api("POST", `/memories/${m.id}/restore`, {});
                    await rerender();
                  } catch (error) {
                    outcome.textContent = message(error);
                  }
                }, { class: "restore", "aria-label": `Restore ${m.label}` })
              : "",
          ].map((cell) => h("td", {}, cell)),
        ),
      );
    }
    for (const sw of body.querySelectorAll<HTMLElement>(".swatch[data-band]")) sw.style.background = BAND_COLOURS[sw.dataset.band as keyof typeof BAND_COLOURS];
    more.replaceChildren();
    if (page.next_cursor) more.append(button("More memories", () => load(page.next_cursor!), { id: "memories-more" }));
  };
  await load();
  if (!body.children.length) body.append(h("tr", {}, h("td", { colspan: String(headers.length) }, "No memories match.")));
}

export async function documentView(view: HTMLElement, id: string): Promise<void> {
  const [doc, taught] = await Promise.all([api<DocumentRecord>("GET", `/documents/${id}`), api<DocumentMemories>("GET", `/documents/${id}/memories`)]);
  view.append(
    h("h2", { id: "document-title" }, doc.filename ?? doc.id),
    h("p", {}, `${doc.status} · ${doc.source_type ?? "text"} · ${doc.provenance} · created ${doc.created_at}${doc.error ? ` · error: ${doc.error}` : ""}`),
    scroll(table(["count", "value"], Object.entries(doc.counts ?? {}).map(([k, v]) => [k, typeof v === "object" ? JSON.stringify(v) : String(v)]), { id: "document-counts" })),
    h("h3", {}, "Memories from this document"),
    scroll(table(["memory", "type", "importance", "state"], taught.memories.map((m) => [link(`#/memory/${m.id}`, m.label), m.type, m.importance, m.state]), { id: "document-memories" })),
  );
}

function bandBar(point: Record<string, unknown>, total: number): HTMLElement {
  const out = h("span", { class: "stack", role: "img", "aria-label": BANDS.map((b) => `${b} ${point[b]}`).join(", ") });
  for (const band of BANDS) {
    const part = h("span", { class: "bar" });
    part.style.background = BAND_COLOURS[band];
    part.style.width = `${total ? ((point[band] as number) / total) * 240 : 0}px`;
    out.append(part);
  }
  return out;
}

function seriesTable(series: ForecastSeries, total: number, id: string): HTMLElement {
  return scroll(
    table(
      ["day", "date", ...BANDS, "total", ""],
      series.points.map((p) => [p.day, day(p.at), ...BANDS.map((b) => p[b] ?? 0), p.total ?? 0, bandBar(p as unknown as Record<string, unknown>, total)]),
      { id, class: "forecast-table" },
    ),
  );
}

export async function forecastView(view: HTMLElement, navigate: (hash: string) => void): Promise<void> {
  const params = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const days = h("input", { id: "fc-days", type: "number", min: "1", max: "365", value: params.get("days") ?? "90" }) as HTMLInputElement;
  const policy = h("select", { id: "fc-policy" }, h("option", { value: "weibull" }, "Weibull"), h("option", { value: "exponential" }, "exponential (λ)")) as HTMLSelectElement;
  policy.value = params.get("policy") ?? "weibull";
  const rate = h("input", { id: "fc-rate", type: "number", step: "any", min: "0.001", max: "0.999", value: params.get("rate") ?? "0.05" }) as HTMLInputElement;
  const form = h("form", { id: "fc-form", class: "controls" },
    h("label", { for: "fc-days" }, "Days ahead "), days, " ",
    h("label", { for: "fc-policy" }, "Compare with "), policy, " ",
    h("label", { for: "fc-rate" }, "λ a day (exponential) "), rate, " ",
    h("button", { type: "submit" }, "Forecast"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const q = new URLSearchParams({ days: days.value, policy: policy.value });
    if (policy.value === "exponential") q.set("rate", rate.value);
    navigate(`#/forecast?${q}`);
  });
  const q = new URLSearchParams({ days: params.get("days") ?? "90", step: String(Math.max(1, Math.round(Number(params.get("days") ?? "90") / 12))), policy: policy.value });
  if (policy.value === "exponential") q.set("rate", params.get("rate") ?? rate.value);
  view.append(h("h2", {}, "Forgetting forecast"), form);
  const forecast = await api<Forecast>("GET", `/forecast?${q}`);
  view.append(
    h("p", { id: "fc-total" }, `${forecast.memories} active memories, banded by the API's decay code from ${day(forecast.now)}; no further access assumed.`),
    h("p", { class: "legend" }, ...BANDS.map((b) => { const s = h("span", { class: "swatch" }); s.style.background = BAND_COLOURS[b]; return h("span", {}, s, b); })),
    h("h3", {}, "Current policy"),
    h("p", { class: "hint" }, forecast.current.description),
    seriesTable(forecast.current, forecast.memories, "fc-current"),
    h("h3", {}, `Alternative: ${forecast.alternative.policy}`),
    h("p", { class: "hint" }, forecast.alternative.description),
    seriesTable(forecast.alternative, forecast.memories, "fc-alternative"),
  );
}

const SHOWN = 25; // the weakest first; acting on them brings the next ones up
const shown = (n: number) => (n > SHOWN ? ` (the first ${SHOWN} of ${n})` : "");

export async function healthView(view: HTMLElement, rerender: Rerender): Promise<void> {
  const [health, gov] = await Promise.all([api<HealthReport>("GET", "/health"), api<GovernanceReport>("GET", "/governance")]);
  const outcome = h("p", { id: "gov-outcome", role: "status" });
  const act = (fn: () => Promise<unknown>) => async () => {
    try {
      await fn();
      await rerender();
    } catch (error) {
      outcome.textContent = message(error);
    }
  };
  const forget = (id: string, reason: string) => api("DELETE", `/memories/${id}?reason=${encodeURIComponent(reason)}`);
  const ref = (m: { id: string; label: string }) => link(`#/memory/${m.id}`, m.label);
  view.append(
    h("h2", {}, "Health"),
    h("p", { class: "badge", id: "health-score", "aria-label": "health score" }, health.score === null ? "n/a" : `${Math.round(health.score)} / 100`),
    scroll(table(["component", "weight", "score", "definition"], health.components.map((c) => [c.name, c.weight, c.score === null ? "n/a" : bar(c.score, c.name), c.definition]), { id: "health-components" })),
    h("h2", {}, "Governance"),
    h("p", { class: "hint" }, `Report of ${gov.computed_at} (${gov.trigger}).`),
    outcome,
    scroll(
      table(
        ["finding", "total"],
        [
          ["decay candidates", gov.decay_candidates.total],
          ["conflict candidates", gov.conflict_candidates.total],
          ["consolidation candidates", gov.consolidation.total],
          ["god nodes", gov.god_nodes.total],
          ["communities", gov.communities.total],
        ],
        { id: "governance-table" },
      ),
    ),
    h("h3", {}, `Decay candidates${shown(gov.decay_candidates.total)}`),
    scroll(
      table(
        ["memory", "type", "strength", "last access", "action"],
        gov.decay_candidates.items.slice(0, SHOWN).map((m) => [ref(m), m.type, m.strength.toFixed(3), m.last_accessed_at.slice(0, 10), button("Forget", act(() => forget(m.id, "decay candidate")), { class: "gov-forget" })]),
        { id: "decay-candidates" },
      ),
    ),
    h("h3", {}, `Conflict candidates${shown(gov.conflict_candidates.total)}`),
    scroll(
      table(
        ["memory A", "memory B", "found by", "reason", "action"],
        gov.conflict_candidates.items.slice(0, SHOWN).map((c) => [
          ref(c.a),
          ref(c.b),
          c.found_by,
          c.reason,
          h("span", {}, button("Keep A", act(() => forget(c.b.id, `conflicts with ${c.a.id}; kept that one`))), " ", button("Keep B", act(() => forget(c.a.id, `conflicts with ${c.b.id}; kept that one`)))),
        ]),
        { id: "conflict-candidates" },
      ),
    ),
    h("h3", {}, `Consolidation candidates${shown(gov.consolidation.total)}`),
    scroll(
      table(
        ["keep", "members", "similarity", "action"],
        gov.consolidation.items.slice(0, SHOWN).map((c) => {
          const keep = c.members.find((m) => m.id === c.keep);
          const others = c.members.filter((m) => m.id !== c.keep);
          return [
            keep ? ref(keep) : c.keep,
            h("span", {}, ...others.slice(0, 10).flatMap((m) => [ref(m), " "]), others.length > 10 ? `and ${others.length - 10} more` : ""),
            `${c.min_similarity.toFixed(2)}–${c.max_similarity.toFixed(2)}`,
            button("Merge into the kept one", act(async () => { for (const m of others) await forget(m.id, `merged into ${c.keep}`); })),
          ];
        }),
        { id: "consolidation-candidates" },
      ),
    ),
  );
}

// Undoing a supersession is a choice, asked before anything changes: this version current again
// (the newer one is superseded by it), or both kept as a conflict governance lists.
function restoreChoice(id: string, act: (fn: () => Promise<unknown>, done: string) => () => Promise<void>): HTMLElement {
  const panel = h("div", { id: "restore-choice", hidden: "" },
    h("p", {}, "Restoring a superseded memory changes what is current. Choose one:"),
    button("Make this the current version", act(() => api("POST", `/memories/${id}/restore?mode=current`, {}), "restored as the current version; the newer one is superseded by it"), { id: "restore-current" }),
    " ",
    button("Keep both, as a conflict", act(() => api("POST", `/memories/${id}/restore?mode=both`, {}), "restored beside the newer version, as a conflict governance lists"), { id: "restore-both" }),
    " ",
    button("Cancel", () => { panel.hidden = true; }, { id: "restore-cancel" }),
  );
  return h("span", {}, button("Restore…", () => { panel.hidden = false; }, { id: "restore" }), panel);
}
