import { api, ApiError, getKey, setKey } from "./api";
import { bar, button, h, table } from "./dom";
import { disposeGraph, graphView } from "./graph";
import { documentView, forecastView, healthView, memoriesView, memoryView } from "./pages";

type Json = Record<string, any>;
const view = document.getElementById("view")!;

function navigate(hash: string): void {
  location.hash = hash;
}

function fail(error: unknown): void {
  const message = error instanceof ApiError ? `${error.status} ${error.code}: ${error.message}` : String(error);
  view.append(h("p", { class: "error", role: "alert" }, message));
}

async function reviewView(): Promise<void> {
  const page = await api<Json>("GET", "/review");
  view.append(h("h2", {}, "Review queue"));
  if (!page.items.length) view.append(h("p", {}, "Nothing is held for review."));
  for (const item of page.items) {
    const reason = h("input", { id: `reason-${item.id}`, value: "" }) as HTMLInputElement;
    const status = h("span", { role: "status" });
    const done: Record<string, string> = { promote: "promoted", reject: "rejected" };
    const decide = (verb: string) => async () => {
      try {
        const outcome = await api<Json>("POST", `/review/${item.id}/${verb}`, { reason: reason.value || `${done[verb]} in the console` });
        status.textContent = outcome.status;
        // decided: the buttons follow the item's state, so a second decision cannot be tried
        for (const control of section.querySelectorAll<HTMLButtonElement | HTMLInputElement>("button, input")) control.disabled = true;
      } catch (error) {
        status.textContent = error instanceof ApiError ? error.code : String(error);
      }
    };
    const section = h(
        "section",
        { class: "review-item", "data-id": item.id, "aria-label": item.label },
        h("h3", {}, item.label),
        h("p", {}, item.definition),
        h("p", {}, `${item.provenance} · trust ${item.trust} · ${item.reason}`),
        item.document_id
          ? h("p", {}, h("a", { href: `#/documents/${item.document_id}`, class: "review-source" }, "Source document"))
          : item.session_id
            ? h("p", {}, h("a", { href: `#/sessions/${encodeURIComponent(item.session_id)}`, class: "review-source" }, `Source session ${item.session_id}`))
            : "",
        h("label", { for: `reason-${item.id}` }, "Reason "),
        reason,
        " ",
        button("Promote", decide("promote"), { class: "promote" }),
        " ",
        button("Reject", decide("reject"), { class: "reject" }),
        " ",
        status,
      );
    view.append(section);
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
      // One table: a row per memory, grouped by the tier that chose it, a column per score
      // component any of them has; then what was left out and why.
      const memories: Json[] = result.memories;
      const components = COMPONENTS.filter((c) => memories.some((m) => typeof m.score[c] === "number"));
      const tiers = [...new Set<string>(memories.map((m) => m.tier_used))];
      const rows = tiers.flatMap((tier) =>
        memories
          .filter((m) => m.tier_used === tier)
          .map((m) =>
            h("tr", { class: "sim-memory", "data-id": m.id, "data-tier": tier },
              h("td", {}, tier),
              h("th", { scope: "row" }, m.label),
              ...components.map((c) => h("td", {}, typeof m.score[c] === "number" ? bar(m.score[c], c, 40) : "—")),
            ),
          ),
      );
      out.append(
        h("table", { id: "sim-scores", class: "compact" },
          h("thead", {}, h("tr", {}, ...["tier", "memory", ...components].map((name) => h("th", { scope: "col" }, name)))),
          h("tbody", {}, ...rows),
        ),
      );
      const nearMisses: Json[] = result.left_out ?? [];
      out.append(h("h3", {}, "Left out (near misses)"));
      if (!nearMisses.length) out.append(h("p", { id: "sim-near-misses" }, "Nothing close was left out."));
      else
        out.append(
          h("table", { id: "sim-near-misses", class: "compact" },
            h("thead", {}, h("tr", {}, ...["memory", "why", "relevance", "score"].map((name) => h("th", { scope: "col" }, name)))),
            h("tbody", {},
              ...nearMisses.map((m) =>
                h("tr", { class: "sim-near-miss", "data-id": m.id },
                  h("th", { scope: "row" }, m.label),
                  h("td", { "data-field": "reason" }, m.reason.replaceAll("_", " ")),
                  h("td", { "data-field": "relevance" }, m.relevance.toFixed(3)),
                  h("td", { "data-field": "score" }, typeof m.score === "number" ? m.score.toFixed(3) : "—"),
                ),
              ),
            ),
          ),
        );
      out.append(h("h3", {}, "What would be injected"), h("pre", { id: "sim-context" }, result.context));
    } catch (error) {
      out.append(h("p", { class: "error", role: "alert" }, error instanceof ApiError ? `${error.code}: ${error.message}` : String(error)));
    }
  });
  view.append(h("h2", {}, "Simulation (dry run)"), form, out);
}

async function documentsView(): Promise<void> {
  const page = await api<Json>("GET", "/documents");
  const rows = await Promise.all(
    page.documents.map(async (d: Json) => {
      const detail = await api<Json>("GET", `/documents/${d.id}`).catch(() => ({ counts: {} }));
      return [h("a", { href: `#/documents/${d.id}` }, d.filename ?? d.id), d.status, d.error ?? "", detail.counts?.memories_created ?? "", detail.counts?.held_for_review ?? "", d.created_at];
    }),
  );
  view.append(
    h("h2", {}, "Documents"),
    h("div", { class: "scroll" }, table(["document", "status", "error", "memories created", "held", "created"], rows, { id: "documents-table" })),
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
    h("div", { class: "scroll" }, h("table", { id: "sessions-table" }, h("thead", {}, h("tr", {}, ...headers.map((name) => h("th", { scope: "col" }, name)))), body)),
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
  disposeGraph();
  view.replaceChildren();
  for (const link of document.querySelectorAll("nav a")) {
    if (link.getAttribute("href") === `#/${name}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (!getKey()) {
    view.append(h("p", { role: "alert", id: "key-prompt" }, "Enter your API key above to begin."));
    return;
  }
  view.dataset.view = name;
  view.dataset.ready = "false";
  try {
    if (name === "memory" && arg) await memoryView(view, arg, route);
    else if (name === "memories") await memoriesView(view, navigate, route);
    else if (name === "review") await reviewView();
    else if (name === "simulate") await simulateView();
    else if (name === "forecast") await forecastView(view, navigate);
    else if (name === "health") await healthView(view, route);
    else if (name === "documents" && arg) await documentView(view, arg);
    else if (name === "documents") await documentsView();
    else if (name === "sessions") await sessionsView(arg ? decodeURIComponent(arg) : undefined);
    else if (name === "reminders") await remindersView();
    else await graphView(view, navigate);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      // A wrong or expired key: only the prompt, not a broken view.
      disposeGraph();
      view.replaceChildren(h("p", { role: "alert", id: "key-prompt" }, "That API key was not accepted. Enter a valid key above."));
    } else fail(error);
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
