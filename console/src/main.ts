import { api, ApiError, getKey, setKey } from "./api";
import { bar, button, h, table } from "./dom";
import { graphView } from "./graph";

type Json = Record<string, any>;
const view = document.getElementById("view")!;

function navigate(hash: string): void {
  location.hash = hash;
}

function fail(error: unknown): void {
  const message = error instanceof ApiError ? `${error.status} ${error.code}: ${error.message}` : String(error);
  view.append(h("p", { class: "error", role: "alert" }, message));
}

// Strength past and projected: the exponential policy S(t) = S0·(1−λ)^days, λ read back from the
// memory's current strength since its last access (the API reports strength, not λ).
function strengthCurve(memory: Json): HTMLElement {
  const day = 86_400_000;
  const anchor = Date.parse(memory.last_accessed_at);
  const now = Date.now();
  const elapsed = Math.max((now - anchor) / day, 1e-6);
  const rate = Math.min(Math.max(1 - Math.pow(Math.max(memory.strength, 1e-9), 1 / elapsed), 0), 0.99);
  const start = Math.min(Date.parse(memory.created_at), anchor);
  const end = now + 60 * day;
  const points: string[] = [];
  const steps = 60;
  for (let i = 0; i <= steps; i++) {
    const t = start + ((end - start) * i) / steps;
    const s = t < anchor ? 1 : Math.pow(1 - rate, (t - anchor) / day);
    points.push(`${((i / steps) * 300).toFixed(1)},${(100 - s * 100).toFixed(1)}`);
  }
  const nowX = (((now - start) / (end - start)) * 300).toFixed(1);
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 300 100");
  svg.setAttribute("width", "450");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `Strength ${memory.strength.toFixed(3)} now, projected 60 days ahead`);
  svg.innerHTML = `<polyline fill="none" stroke="#1d4ed8" stroke-width="2" points="${points.join(" ")}"/><line x1="${nowX}" x2="${nowX}" y1="0" y2="100" stroke="#b45309" stroke-dasharray="3"/>`;
  return h("figure", {}, svg, h("figcaption", {}, "Strength: past to now (dashed line), then projected 60 days"));
}

async function memoryView(id: string): Promise<void> {
  const memory = await api<Json>("GET", `/memories/${id}`);
  const history = await api<Json>("GET", `/memories/${id}/history`).catch((): Json => ({}));
  const audit = await api<Json>("GET", `/audit?memory_id=${id}`).catch(() => ({ entries: [] }));
  const label = h("input", { id: "edit-label", value: memory.label }) as HTMLInputElement;
  const definition = h("textarea", { id: "edit-definition", rows: "4", cols: "70" }, memory.definition) as HTMLTextAreaElement;
  const importance = h("input", { id: "edit-importance", type: "number", min: "1", max: "10", value: String(memory.importance) }) as HTMLInputElement;
  const reason = h("input", { id: "forget-reason", value: "" }) as HTMLInputElement;
  const outcome = h("p", { id: "memory-outcome", role: "status" });
  const act = (fn: () => Promise<unknown>, done: string) => async () => {
    try {
      await fn();
      outcome.textContent = done;
    } catch (error) {
      outcome.textContent = error instanceof ApiError ? `${error.code}: ${error.message}` : String(error);
    }
  };
  view.append(
    h("h2", {}, memory.label),
    h("p", {}, `${memory.type} · importance ${memory.importance} · band ${memory.band} · ${memory.state} · strength `, h("span", { id: "memory-strength" }, memory.strength.toFixed(3))),
    strengthCurve(memory),
    h("h3", {}, "Edit"),
    h("label", { for: "edit-label" }, "Label "), label, h("br"),
    h("label", { for: "edit-definition" }, "Definition "), definition, h("br"),
    h("label", { for: "edit-importance" }, "Importance "), importance, " ",
    button("Save", act(() => api("PATCH", `/memories/${id}`, { label: label.value, definition: definition.value, importance: Number(importance.value) }), "saved")),
    h("h3", {}, "Forget or restore"),
    h("label", { for: "forget-reason" }, "Reason "), reason, " ",
    button("Forget", act(() => api("DELETE", `/memories/${id}${reason.value ? `?reason=${encodeURIComponent(reason.value)}` : ""}`), "forgotten"), { id: "forget" }),
    " ",
    button("Restore", act(() => api("POST", `/memories/${id}/restore`, {}), "restored"), { id: "restore" }),
    outcome,
    h("h3", {}, "Sources"),
    table(["source", "excerpt", "at"], (memory.sources ?? []).map((s: Json) => [s.filename ?? s.session_id ?? s.document_id ?? "", s.definition, s.created_at])),
    h("h3", {}, "History"),
    table(
      ["label", "state", "valid from", "superseded by"],
      (history.versions ?? []).map((v: Json) => [v.label, v.state, v.valid_from ?? "", v.superseded_by ?? ""]),
      { id: "history-table" },
    ),
    h("h3", {}, "Audit"),
    table(["#", "at", "actor", "action", "reason"], (audit.entries ?? []).map((e: Json) => [e.chain_seq, e.at, e.actor, e.action, e.reason ?? ""])),
  );
}

async function reviewView(): Promise<void> {
  const page = await api<Json>("GET", "/review");
  view.append(h("h2", {}, "Review queue"));
  if (!page.items.length) view.append(h("p", {}, "Nothing is held for review."));
  for (const item of page.items) {
    const reason = h("input", { id: `reason-${item.id}`, value: "" }) as HTMLInputElement;
    const status = h("span", { role: "status" });
    const decide = (verb: string) => async () => {
      try {
        const outcome = await api<Json>("POST", `/review/${item.id}/${verb}`, { reason: reason.value || `${verb}d in the console` });
        status.textContent = outcome.status;
      } catch (error) {
        status.textContent = error instanceof ApiError ? error.code : String(error);
      }
    };
    view.append(
      h(
        "section",
        { class: "review-item", "data-id": item.id, "aria-label": item.label },
        h("h3", {}, item.label),
        h("p", {}, item.definition),
        h("p", {}, `${item.provenance} · trust ${item.trust} · ${item.reason}`),
        h("label", { for: `reason-${item.id}` }, "Reason "),
        reason,
        " ",
        button("Promote", decide("promote"), { class: "promote" }),
        " ",
        button("Reject", decide("reject"), { class: "reject" }),
        " ",
        status,
      ),
    );
  }
}

const COMPONENTS = ["vector", "text", "graph", "semantic", "strength", "recency", "importance", "frequency", "bonus", "relevance", "probability"];

async function simulateView(): Promise<void> {
  const query = h("input", { id: "sim-query", size: "60" }) as HTMLInputElement;
  const recipe = h("input", { id: "sim-recipe", placeholder: "standard" }) as HTMLInputElement;
  const budget = h("input", { id: "sim-budget", type: "number", min: "1", value: "1500" }) as HTMLInputElement;
  const out = h("div", { id: "sim-result" });
  const form = h("form", { id: "sim-form" },
    h("label", { for: "sim-query" }, "Query "), query, " ",
    h("label", { for: "sim-recipe" }, "Recipe "), recipe, " ",
    h("label", { for: "sim-budget" }, "Token budget "), budget, " ",
    h("button", { type: "submit" }, "Dry run"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    out.replaceChildren();
    try {
      const body: Json = { query: query.value, dry_run: true, token_budget: Number(budget.value) };
      if (recipe.value) body.recipe = recipe.value;
      const result = await api<Json>("POST", "/context", body);
      out.append(h("p", { id: "sim-tokens" }, `${result.tokens_used} / ${result.token_budget} tokens · intent ${result.intent}`));
      for (const tier of [...new Set<string>(result.memories.map((m: Json) => m.tier_used))]) {
        out.append(h("h3", {}, `Tier ${tier}`));
        for (const memory of result.memories.filter((m: Json) => m.tier_used === tier)) {
          out.append(
            h("section", { class: "sim-memory", "data-id": memory.id, "aria-label": memory.label },
              h("h4", {}, memory.label),
              table(["component", "score"], COMPONENTS.filter((c) => typeof memory.score[c] === "number").map((c) => [c, bar(memory.score[c], c)])),
            ),
          );
        }
      }
      out.append(h("h3", {}, "What would be injected"), h("pre", { id: "sim-context" }, result.context));
    } catch (error) {
      out.append(h("p", { class: "error", role: "alert" }, error instanceof ApiError ? `${error.code}: ${error.message}` : String(error)));
    }
  });
  view.append(h("h2", {}, "Simulation (dry run)"), form, out);
}

async function healthView(): Promise<void> {
  const health = await api<Json>("GET", "/health");
  const gov = await api<Json>("GET", "/governance");
  view.append(
    h("h2", {}, "Health"),
    h("p", { class: "badge", id: "health-score", "aria-label": "health score" }, String(health.score)),
    table(["component", "weight", "score", "definition"], health.components.map((c: Json) => [c.name, c.weight, c.score === null ? "n/a" : bar(c.score, c.name), c.definition])),
    h("h2", {}, "Governance"),
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
  );
}

async function documentsView(): Promise<void> {
  const page = await api<Json>("GET", "/documents");
  const rows = await Promise.all(
    page.documents.map(async (d: Json) => {
      const detail = await api<Json>("GET", `/documents/${d.id}`).catch(() => ({ counts: {} }));
      return [d.filename ?? d.id, d.status, d.error ?? "", detail.counts?.memories_created ?? "", detail.counts?.held_for_review ?? "", d.created_at];
    }),
  );
  view.append(
    h("h2", {}, "Documents"),
    table(["document", "status", "error", "memories created", "held", "created"], rows, { id: "documents-table" }),
  );
}

function sessionDetail(session: Json): HTMLElement {
  return h(
    "section",
    { id: "session-detail", "aria-label": `Session ${session.id}` },
    h("h3", {}, `Session ${session.id}`),
    h("p", {}, `${session.status} · ${session.message_count} messages · flushed through ${session.flushed_through}`),
    table(
      ["messages", "trigger", "status", "memories created", "held", "error"],
      session.flushes.map((f: Json) => [`${f.message_from}–${f.message_to}`, f.trigger, f.status, f.counts?.memories_created ?? "", f.counts?.held_for_review ?? "", f.error ?? ""]),
      { id: "session-flushes" },
    ),
  );
}

async function sessionsView(selected?: string): Promise<void> {
  const params = new URLSearchParams(location.hash.split("?")[1] ?? "");
  const status = h("select", { id: "session-status" },
    ...["", "open", "ended"].map((value) => h("option", { value }, value || "any")),
  ) as HTMLSelectElement;
  status.value = params.get("status") ?? "";
  status.addEventListener("change", () => navigate(`#/sessions${status.value ? `?status=${status.value}` : ""}`));
  const body = h("tbody");
  const more = h("p");
  const detail = h("div", { id: "session-out", role: "region", "aria-label": "Selected session" });
  const show = async (id: string) => {
    detail.replaceChildren();
    try {
      detail.append(sessionDetail(await api<Json>("GET", `/sessions/${encodeURIComponent(id)}`)));
    } catch (error) {
      detail.append(h("p", { class: "error", role: "alert" }, error instanceof ApiError ? `${error.code}: ${error.message}` : String(error)));
    }
  };
  const load = async (cursor?: string) => {
    const query = new URLSearchParams({ limit: "50" });
    if (status.value) query.set("status", status.value);
    if (cursor) query.set("cursor", cursor);
    const page = await api<Json>("GET", `/sessions?${query}`);
    for (const s of page.sessions) {
      const c = s.counts;
      body.append(
        h("tr", { "data-id": s.id },
          ...[
            button(s.id, () => show(s.id), { class: "session-link", "aria-label": `Show session ${s.id}` }),
            s.status, s.message_count, s.flushed_through, `${c.flushes_done} / ${c.flushes}`, c.flushes_pending, c.flushes_failed,
            c.memories_created, c.held_for_review, s.last_message_at ?? "",
          ].map((cell) => h("td", {}, cell)),
        ),
      );
    }
    more.replaceChildren();
    if (page.next_cursor) more.append(button("More sessions", () => load(page.next_cursor), { id: "sessions-more" }));
  };
  const sessionId = h("input", { id: "session-id" }) as HTMLInputElement;
  const form = h("form", {}, h("label", { for: "session-id" }, "Session id "), sessionId, " ", h("button", { type: "submit" }, "Show session"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    show(sessionId.value);
  });
  const headers = ["session", "status", "messages", "flushed", "flushes done", "pending", "failed", "memories created", "held", "last message"];
  view.append(
    h("h2", {}, "Sessions"),
    h("label", { for: "session-status" }, "Status "), status,
    h("table", { id: "sessions-table" }, h("thead", {}, h("tr", {}, ...headers.map((name) => h("th", { scope: "col" }, name)))), body),
    more,
    form,
    detail,
  );
  await load();
  if (!body.children.length) body.append(h("tr", {}, h("td", { colspan: String(headers.length) }, "No sessions yet.")));
  if (selected) await show(selected);
}

async function remindersView(): Promise<void> {
  const page = await api<Json>("GET", "/reminders");
  view.append(
    h("h2", {}, "Reminders"),
    page.reminders.length
      ? table(["reminder", "due", ""], page.reminders.map((r: Json) => [r.text ?? r.label ?? r.id, r.due_at ?? "", button("Acknowledge", async () => { await api("POST", `/reminders/${r.id}/acknowledge`, {}); route(); })]))
      : h("p", {}, "No reminders due."),
  );
}

// One view renders at a time: a key submit and a hash change in quick succession must not interleave.
let rendering: Promise<void> = Promise.resolve();
function route(): Promise<void> {
  rendering = rendering.then(render, render);
  return rendering;
}

async function render(): Promise<void> {
  const hash = location.hash || "#/graph";
  const [, name, arg] = hash.split("?")[0].split("/");
  view.replaceChildren();
  for (const link of document.querySelectorAll("nav a")) {
    if (link.getAttribute("href") === `#/${name}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (!getKey()) {
    view.append(h("p", { role: "alert" }, "Enter your API key above to begin."));
    return;
  }
  view.dataset.view = name;
  view.dataset.ready = "false";
  try {
    if (name === "memory" && arg) await memoryView(arg);
    else if (name === "review") await reviewView();
    else if (name === "simulate") await simulateView();
    else if (name === "health") await healthView();
    else if (name === "documents") await documentsView();
    else if (name === "sessions") await sessionsView(arg ? decodeURIComponent(arg) : undefined);
    else if (name === "reminders") await remindersView();
    else await graphView(view, navigate);
  } catch (error) {
    fail(error);
  }
  view.dataset.ready = "true";
}

const keyInput = document.getElementById("api-key") as HTMLInputElement;
keyInput.value = getKey();
document.getElementById("key-form")!.addEventListener("submit", (event) => {
  event.preventDefault();
  setKey(keyInput.value.trim());
  route();
});
window.addEventListener("hashchange", route);
route();
