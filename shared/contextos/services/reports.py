"""S9: the health score and the governance report (decay, conflicts, consolidation, god nodes,
communities), computed per tenant by the daily job and served from the latest stored report."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

import networkx as nx

from contextos.errors import ContextOSError, TransientError
from contextos.judge import Judge, Verdict
from contextos.merge_plan import may_suggest_joining
from contextos.observability import logger, metrics
from contextos.ports.reports import ReportPort
from contextos.reports import (
    Community,
    CommunitySection,
    ConflictCandidate,
    ConflictSection,
    ConsolidationCluster,
    ConsolidationSection,
    ConversationCounts,
    DecayCandidate,
    DecaySection,
    GodNode,
    GodNodeSection,
    GovernanceReport,
    GovernanceRunReport,
    HealthInputs,
    HealthReport,
    MemoryCounts,
    MemoryRef,
    health_components,
    health_score,
)
from contextos.settings import Settings

Trigger = str  # "schedule" | "on_demand" | "cli"


@dataclass
class ReportService:
    settings: Settings
    store: ReportPort
    judge: Judge
    tenant_ids: Callable[[], list[str]]

    # -- health --------------------------------------------------------------------------------
    def health(self, tenant_id: str) -> HealthReport:
        """The 0-100 score with each component and its inputs, and the store's counts.

        Cleanliness is measured against the latest governance report; a tenant that has none
        yet gets one computed now (and stored), as ``GET /v1/governance`` would.
        """
        latest = self._latest_or_compute(tenant_id)
        raw = self.store.health_inputs(tenant_id, latest["flagged_ids"])
        inputs = HealthInputs(
            active_memories=raw["active_memories"],
            used_memories=raw["used_memories"],
            queries=raw["queries"],
            mean_utilization=_float(raw["mean_utilization"]),
            mean_strength=_float(raw["mean_strength"]),
            type_counts=raw["type_counts"],
            flagged_memories=raw["flagged_memories"],
        )
        components = health_components(inputs, self.settings.reports)
        return HealthReport(
            score=health_score(components),
            components=components,
            window_days=self.settings.reports.window_days,
            memories=MemoryCounts(
                active_hot=raw["active_memories"],
                active_cold=raw["active_cold"],
                superseded=raw["superseded"],
                archived=raw["archived"],
                bands=raw["band_counts"],
                types=raw["type_counts"],
                pending_reviews=raw["pending_reviews"],
                open_reminders=raw["open_reminders"],
            ),
            conversation=ConversationCounts(
                open_sessions=raw["open_sessions"], unflushed_messages=raw["unflushed_messages"]
            ),
            governance_report_at=latest["computed_at"],
            computed_at=datetime.now(UTC),
        )

    # -- governance ----------------------------------------------------------------------------
    def governance(self, tenant_id: str) -> GovernanceReport:
        """The latest stored report; computed now (and stored) when the tenant has none yet."""
        row = self._latest_or_compute(tenant_id)
        return GovernanceReport.model_validate(
            row["report"] | {"id": row["id"], "computed_at": row["computed_at"], "trigger": row["trigger"]}
        )

    def run_all(self) -> GovernanceRunReport:
        """The daily job: one report per tenant. A tenant that fails is logged and counted; the
        others still get their report (the next run retries it)."""
        started = time.perf_counter()
        summary = GovernanceRunReport()
        for tenant_id in self.tenant_ids():
            summary.tenants += 1
            try:
                self.run(tenant_id, trigger="schedule")
                summary.reports += 1
            except Exception:
                logger.exception("governance report failed", extra={"tenant_id": tenant_id})
                summary.failed.append(tenant_id)
        summary.elapsed_s = round(time.perf_counter() - started, 3)
        metrics.add_metric(name="GovernanceReports", unit="Count", value=summary.reports)
        metrics.add_metric(name="GovernanceFailures", unit="Count", value=len(summary.failed))
        logger.info("governance run finished", extra=summary.model_dump())
        return summary

    def run(self, tenant_id: str, *, trigger: Trigger = "cli") -> GovernanceReport:
        """Compute every section, replace the tenant's communities and store the report."""
        started = time.perf_counter()
        cfg = self.settings.reports
        near_duplicate = self.settings.merge.near_duplicate_cosine

        decay_ids, decay_rows = self.store.decay_candidates(tenant_id)
        pairs = self.store.similar_pairs(
            tenant_id, min_cosine=min(cfg.conflict_min_cosine, near_duplicate), limit=cfg.similar_pairs_max
        )
        conflicts, contradicting, cleared, judged, judge_failures = self._conflicts(tenant_id, pairs)
        clusters, duplicate_pairs = self._consolidation(
            pairs, contradicting, cleared, near_duplicate, same_type=cfg.consolidation_same_type
        )
        god_ids, god_rows = self.store.god_nodes(tenant_id)
        communities = self._communities(tenant_id)

        flagged: set[UUID] = set(decay_ids) | set(god_ids)
        flagged |= {ref.id for c in conflicts for ref in (c.a, c.b)}
        flagged |= {m.id for cl in clusters for m in cl.members if m.id != cl.keep}
        report = GovernanceReport(
            computed_at=datetime.now(UTC),
            trigger=trigger,  # type: ignore[arg-type]
            decay_candidates=DecaySection(
                total=len(decay_ids), items=[DecayCandidate.model_validate(r) for r in decay_rows]
            ),
            conflict_candidates=ConflictSection(
                total=len(conflicts),
                pairs_judged=judged,
                judge_failures=judge_failures,
                items=conflicts[: cfg.report_items],
            ),
            consolidation=ConsolidationSection(
                total=len(clusters), near_duplicate_pairs=duplicate_pairs, items=clusters[: cfg.report_items]
            ),
            god_nodes=GodNodeSection(total=len(god_ids), items=[GodNode.model_validate(r) for r in god_rows]),
            communities=communities,
            flagged_memories=len(flagged),
            thresholds={
                "decay_candidate_strength": cfg.decay_candidate_strength,
                "conflict_min_cosine": cfg.conflict_min_cosine,
                "near_duplicate_cosine": near_duplicate,
                "god_node_min_degree": cfg.god_node_min_degree,
                "god_node_max_importance": cfg.god_node_max_importance,
                "implicit_min_shared": cfg.implicit_min_shared,
                "community_max_edges": cfg.community_max_edges,
                "community_seed": cfg.community_seed,
            },
            elapsed_s=0.0,
        )
        report.elapsed_s = round(time.perf_counter() - started, 3)
        saved = self.store.save_governance(
            tenant_id, report.model_dump(mode="json", exclude={"id"}), trigger=trigger, flagged_ids=sorted(flagged)
        )
        report.id, report.computed_at = saved["id"], saved["computed_at"]
        logger.info(
            "governance report stored",
            extra={
                "tenant_id": tenant_id,
                "flagged": len(flagged),
                "communities": communities.total,
                "elapsed_s": report.elapsed_s,
            },
        )
        return report

    # -- sections ------------------------------------------------------------------------------
    def _conflicts(
        self, tenant_id: str, pairs: list[dict]
    ) -> tuple[list[ConflictCandidate], set[tuple[UUID, UUID]], set[tuple[UUID, UUID]], int, int]:
        """Recorded ``contradicts`` edges between active memories, then the most similar pairs the
        judge calls a contradiction (at most ``conflict_judge_max_pairs`` judge calls)."""
        cfg = self.settings.reports
        out: list[ConflictCandidate] = []
        seen: set[tuple[UUID, UUID]] = set()
        for e in self.store.contradiction_edges(tenant_id):
            key = _pair(e["a_id"], e["b_id"])
            if key in seen:
                continue
            seen.add(key)
            out.append(
                ConflictCandidate(
                    a=_ref(e, "a"), b=_ref(e, "b"), found_by="contradicts_edge", reason="recorded contradiction"
                )
            )
        contradicting: set[tuple[UUID, UUID]] = set()
        cleared: set[tuple[UUID, UUID]] = set()  # judged and not contradictory
        judged = failures = 0
        for p in pairs:
            if judged + failures >= cfg.conflict_judge_max_pairs:
                break
            key = _pair(p["a_id"], p["b_id"])
            if key in seen:
                contradicting.add(key)
                continue
            older, newer = ("a", "b") if p["a_created_at"] <= p["b_created_at"] else ("b", "a")
            try:
                judgement = self.judge.judge(
                    _statement(p, older), _statement(p, newer), similarity=float(p["similarity"])
                )
            except ContextOSError as exc:
                # The report still matters without every verdict: an unanswerable pair is skipped,
                # an outage or throttling ends judging for this run (the next run judges again).
                failures += 1
                logger.warning("judge failed on a pair", extra={"tenant_id": tenant_id, "code": exc.code})
                if isinstance(exc, TransientError):
                    break
                continue
            judged += 1
            if judgement.verdict is not Verdict.contradiction:
                cleared.add(key)
            else:
                contradicting.add(key)
                out.append(
                    ConflictCandidate(
                        a=_ref(p, older),
                        b=_ref(p, newer),
                        found_by="judge",
                        similarity=round(float(p["similarity"]), 4),
                        confidence=judgement.confidence,
                        reason=judgement.reason,
                    )
                )
        return out, contradicting, cleared, judged, failures

    @staticmethod
    def _consolidation(
        pairs: list[dict],
        contradicting: set[tuple[UUID, UUID]],
        cleared: set[tuple[UUID, UUID]],
        threshold: float,
        *,
        same_type: bool,
    ) -> tuple[list[ConsolidationCluster], int]:
        """Clusters (connected components) of near-duplicate pairs that do not contradict each other
        (and share a type when ``same_type``, as ingest merges do) and whose labels may name the same
        thing (``merge_plan.may_suggest_joining``)."""
        graph = nx.Graph()
        refs: dict[UUID, dict] = {}
        for p in pairs:
            if float(p["similarity"]) < threshold or _pair(p["a_id"], p["b_id"]) in contradicting:
                continue
            if same_type and p["a_type"] != p["b_type"]:
                continue
            if not may_suggest_joining(p["a_key"], p["b_key"], p["a_type"], p["b_type"]):
                continue
            graph.add_edge(p["a_id"], p["b_id"], similarity=float(p["similarity"]))
            for side in ("a", "b"):
                refs[p[f"{side}_id"]] = _ref(p, side).model_dump() | {
                    "access_count": p[f"{side}_access"],
                    "created_at": p[f"{side}_created_at"],
                }
        clusters = []
        for members in nx.connected_components(graph):
            ordered = sorted(members, key=lambda m: (-refs[m]["importance"], -refs[m]["access_count"], str(m)))
            keep = min(
                members, key=lambda m: (-refs[m]["importance"], -refs[m]["access_count"], refs[m]["created_at"], str(m))
            )
            edges = list(graph.subgraph(members).edges(data=True))
            similarities = [d["similarity"] for _, _, d in edges]
            clusters.append(
                ConsolidationCluster(
                    members=[MemoryRef.model_validate(refs[m]) for m in ordered],
                    keep=keep,
                    min_similarity=round(min(similarities), 4),
                    max_similarity=round(max(similarities), 4),
                    verified=all(_pair(a, b) in cleared for a, b, _ in edges),
                )
            )
        clusters.sort(key=lambda c: (-len(c.members), -c.max_similarity, str(c.keep)))
        return clusters, graph.number_of_edges()

    def _communities(self, tenant_id: str) -> CommunitySection:
        """Louvain (fixed seed) over explicit + implicit edges; the assignment replaces the stored one.

        Above ``community_max_edges`` edges only the heaviest (explicit first) are used and the
        section says ``truncated``; memories reached only by dropped edges get no community.
        """
        cfg = self.settings.reports
        rows, explicit, implicit = self.store.community_edges(tenant_id)
        truncated = len(rows) > cfg.community_max_edges
        graph = nx.Graph()
        graph.add_weighted_edges_from((r["a"], r["b"], float(r["weight"])) for r in rows[: cfg.community_max_edges])
        parts: list[set] = []
        modularity = None
        if graph.number_of_edges():
            parts = nx.community.louvain_communities(
                graph, weight="weight", resolution=cfg.community_resolution, seed=cfg.community_seed
            )
            modularity = round(nx.community.modularity(graph, parts, weight="weight"), 4)
        kept = sorted(
            (p for p in parts if len(p) >= cfg.community_min_size), key=lambda p: (-len(p), min(str(m) for m in p))
        )
        assignment = {memory: index for index, part in enumerate(kept) for memory in part}
        self.store.replace_communities(tenant_id, assignment)
        top = list(range(min(len(kept), cfg.report_items)))
        samples = self.store.community_samples(tenant_id, top, cfg.community_sample_labels)
        return CommunitySection(
            total=len(kept),
            memories_in_communities=len(assignment),
            explicit_edges=explicit,
            implicit_edges=implicit,
            edges_used=graph.number_of_edges(),
            truncated=truncated,
            modularity=modularity,
            items=[Community(id=i, size=len(kept[i]), sample_labels=samples.get(i, [])) for i in top],
        )

    def _latest_or_compute(self, tenant_id: str) -> dict:
        latest = self.store.latest_governance(tenant_id)
        if latest is None:
            self.run(tenant_id, trigger="on_demand")
            latest = self.store.latest_governance(tenant_id)
        assert latest is not None
        return latest


def _pair(a: UUID, b: UUID) -> tuple[UUID, UUID]:
    return (a, b) if str(a) < str(b) else (b, a)


def _ref(row: dict, side: str) -> MemoryRef:
    return MemoryRef(
        id=row[f"{side}_id"], label=row[f"{side}_label"], type=row[f"{side}_type"], importance=row[f"{side}_importance"]
    )


def _statement(row: dict, side: str) -> str:
    return row[f"{side}_definition"] or row[f"{side}_label"]


def _float(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]
