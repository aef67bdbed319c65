"""The S7 gates: what they let in and keep out, and what they cost.

Quality, through the real ingestion path (parse, local extraction, validation, embeddings, the
trust gate and the contradiction gate, the store), in a fresh embedded PostgreSQL:

- **benign corpus**: documentation written by others that this machine's installed packages
  ship, picked by a fixed rule (``benign_corpus``): the long description (README) of every
  installed Python distribution, the ``.md``/``.rst`` files inside them, then up to three
  README/markdown/rst/text files per Debian package under ``/usr/share/doc``; 1-200 KB each,
  deduplicated, sorted, at most ``--max-docs``. Ingested as ``user_upload``.
  ``benign_held_rate`` = held candidates / candidates.
- **poisoning cases** (``benchmarks/data/poison_cases.jsonl``): MINJA-style instructions inside web
  pages, tool outputs, third-party messages and otherwise benign documents, each ingested at its
  own provenance into its own tenant. Kept out = the payload's marker is in no active memory and
  in no ``/v1/context`` block for the case's query (held or rejected, never in a context).
- **judge set** (``benchmarks/data/judge_pairs.jsonl``): labelled statement pairs; similarity from
  the local embedder, judged as the gate judges them (below the floor: not compared).

Each figure sits beside the previous gates (``benchmarks/s7_baselines.py``) measured in the same
run on the same candidates and pairs.

Cost (``--costs``, as before): the store path with and without the contradiction gate into a tenant
holding ``--existing`` memories, the audit chain's trigger, and ``audit verify``.

Run: ``.venv/bin/python -m benchmarks.admission_gates [--max-docs 400] [--costs]``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.metadata
import io
import json
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg
from contextos import container
from contextos.decay import decay_rate
from contextos.extraction.validation import validate
from contextos.judge import JudgePair, Verdict
from contextos.judge.local import LocalHeuristicJudge
from contextos.models import ContextRequest, DocumentJob, MemoryCandidate, Provenance
from contextos.parsing import parse_document
from contextos.services.contradiction import ContradictionGate
from contextos.services.document_pipeline import deduplicate
from contextos.services.firewall import Firewall
from contextos.services.governance import GovernanceService, TrustGate
from contextos.services.ingestion import IngestionService
from contextos.services.retrieval import RetrievalService
from contextos.settings import Settings
from contextos.store.db import Database
from contextos.store.governance import GovernanceStore
from contextos.store.privacy import PrivacyStore
from contextos.store.stores import Stores

from benchmarks.fixtures import embedded_database
from benchmarks.ingest import DIM, WORDS, local_ingestion, preload, unit_vectors
from benchmarks.report import write_report
from benchmarks.s7_baselines import PreviousRulesJudge, previous_gate_signals

DATA = Path(__file__).resolve().parent / "data"
DOC_SUFFIXES = (".md", ".rst", ".txt", ".markdown")
MIN_BYTES, MAX_BYTES = 1_000, 200_000


@dataclass(frozen=True)
class Doc:
    origin: str  # where it was found, for the report
    filename: str
    text: str


def _readable(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        data = path.read_bytes()
        if path.suffix == ".gz":
            with gzip.open(io.BytesIO(data)) as f:
                data = f.read(MAX_BYTES + 1)
        if not (MIN_BYTES <= len(data) <= MAX_BYTES):
            return None
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
        return None


def python_docs() -> list[Doc]:
    """Every installed distribution's long description, and the markdown/rst files it ships."""
    out = []
    for dist in sorted(importlib.metadata.distributions(), key=lambda d: (d.metadata["Name"] or "").lower()):
        name = (dist.metadata["Name"] or "").lower()
        body = dist.metadata.get_payload() or dist.metadata.get("Description") or ""  # type: ignore[attr-defined]
        kind = (dist.metadata.get("Description-Content-Type") or "").lower()
        if MIN_BYTES <= len(body.encode()) <= MAX_BYTES:
            suffix = ".md" if "markdown" in kind else ".rst" if "rst" in kind else ".txt"
            out.append(Doc(f"pypi:{name}:METADATA", f"README{suffix}", body))
        for file in sorted(dist.files or [], key=str):
            if file.suffix.lower() in (".md", ".rst") and (text := _readable(Path(dist.locate_file(file)))):
                out.append(Doc(f"pypi:{name}:{file}", Path(str(file)).name, text))
    return out


def _doc_name(name: str) -> str:
    """A Debian doc file's name without ``.gz``, the suffix the parser goes by ("README" → text)."""
    name = name.removesuffix(".gz")
    return name if Path(name).suffix.lower() in (".md", ".rst", ".markdown", ".txt") else f"{name}.txt"


def debian_docs(root: Path = Path("/usr/share/doc"), per_package: int = 3) -> list[Doc]:
    """Up to ``per_package`` README, markdown, rst or text files per Debian package (gzipped ones
    read as Debian ships them), the first by name; licences and changelogs are not documentation."""
    out = []
    for package in sorted(p for p in root.glob("*") if p.is_dir()) if root.is_dir() else []:
        found = 0
        for f in sorted(f for f in package.iterdir() if f.is_file()):
            low = f.name.lower().removesuffix(".gz")
            wanted = low.startswith("readme") or Path(low).suffix in (".md", ".rst", ".markdown", ".txt")
            if not wanted or "changelog" in low or "copyright" in low or "license" in low:
                continue
            if text := _readable(f):
                out.append(Doc(f"debian:{package.name}:{f.name}", _doc_name(f.name), text))
                found += 1
                if found == per_package:
                    break
    return out


def benign_corpus(max_docs: int) -> list[Doc]:
    seen: set[str] = set()
    out = []
    for doc in python_docs() + debian_docs():
        digest = hashlib.sha256(doc.text.encode()).hexdigest()
        if digest not in seen and doc.text.strip():
            seen.add(digest)
            out.append(doc)
    return out[:max_docs]


def ingest(service: IngestionService, store: Stores, tenant: str, doc: Doc, provenance: str) -> dict:
    data = doc.text.encode()
    record, _ = store.documents.create_document(
        tenant,
        content_hash=uuid.uuid4().hex,
        filename=doc.filename,
        content_type=None,
        provenance=provenance,
        size_bytes=len(data),
        raw_text=doc.text,
    )
    service.process(DocumentJob(tenant_id=tenant, document_id=record.id), data=data)
    return store.documents.get_document(tenant, record.id).model_dump()


def gate_candidates(settings: Settings, doc: Doc, provenance: Provenance) -> tuple[list[MemoryCandidate], str]:
    """The candidates the trust gate sees for a document (no embeddings: the gate reads text only)."""
    parsed = parse_document(doc.text.encode(), filename=doc.filename, declared_type=None)
    extractor = container.extractor()
    concepts = extractor.extract(parsed.text, domain=parsed.domain, known=[])
    concepts, _ = deduplicate(concepts, settings.extraction.generic_modifiers)
    cfg = settings.extraction
    report = validate(concepts, min_definition_chars=cfg.min_definition_chars, generic_modifiers=cfg.generic_modifiers)
    base = settings.governance.trust_of(provenance)
    return [
        MemoryCandidate(
            norm_key=c.label.lower(),
            label=c.label,
            definition=c.definition,
            type=c.type,
            importance=c.importance,
            embedding=[0.0],
            decay_rate=0.0,
            provenance=provenance,
            base_trust=base,
        )
        for c in report.accepted
    ], parsed.text


def previous_held(settings: Settings, candidates: list[MemoryCandidate], source_text: str) -> int:
    cfg = settings.governance
    return sum(
        c.base_trust - (cfg.injection_penalty if previous_gate_signals(c.label, c.definition, source_text) else 0.0)
        < cfg.trust_threshold
        for c in candidates
    )


def benign_part(settings: Settings, service: IngestionService, store: Stores, max_docs: int) -> tuple[dict, list]:
    corpus = benign_corpus(max_docs)
    tenant = "bench-benign"
    candidates = held = previous = failed = docs_with_held = 0
    held_examples: list[dict] = []
    pipeline_held = pipeline_accepted = 0
    gate = TrustGate(settings)
    started = time.perf_counter()
    for doc in corpus:
        try:
            cands, text = gate_candidates(settings, doc, Provenance.user_upload)
        except Exception:  # a document the parser refuses is the pipeline's 'failed', counted below
            cands, text = [], ""
        _, kept_back = gate.split(cands, source_text=text)
        candidates += len(cands)
        held += len(kept_back)
        previous += previous_held(settings, cands, text)
        docs_with_held += bool(kept_back)
        held_examples += [{"doc": doc.origin, "label": h.candidate.label, "signals": h.signals} for h in kept_back[:3]]
        record = ingest(service, store, tenant, doc, "user_upload")
        failed += record["status"] != "done"
        pipeline_held += int(record["counts"].get("held_for_review", 0))
        pipeline_accepted += int(record["counts"].get("accepted", 0))
    elapsed = time.perf_counter() - started
    origins = Counter(d.origin.split(":")[0] for d in corpus)
    figures = {
        "benign_documents": len(corpus),
        "benign_documents_python": origins.get("pypi", 0),
        "benign_documents_debian": origins.get("debian", 0),
        "benign_candidates": candidates,
        "benign_held": held,
        "benign_held_rate": round(held / max(candidates, 1), 4),
        "benign_docs_with_a_held_candidate": docs_with_held,
        "benign_held_rate_previous_gate": round(previous / max(candidates, 1), 4),
        "benign_held_previous_gate": previous,
        "benign_pipeline_accepted": pipeline_accepted,
        "benign_pipeline_held": pipeline_held,
        "benign_pipeline_failed_documents": failed,
        "benign_ingest_s": round(elapsed, 1),
    }
    return figures, held_examples


def marker_in_reads(retrieval: RetrievalService, store: Stores, tenant: str, marker: str, query: str) -> bool:
    with store.db.tenant_tx(tenant) as conn:
        rows = conn.execute("SELECT label, definition FROM memories WHERE state = 'active'").fetchall()
    if any(marker in f"{r['label']} {r['definition']}".lower() for r in rows):
        return True
    result = retrieval.context(tenant, ContextRequest(query=query, dry_run=True))
    return marker in result.context.lower()


def poison_part(settings: Settings, service: IngestionService, store: Stores, retrieval: RetrievalService) -> dict:
    cases = [json.loads(line) for line in (DATA / "poison_cases.jsonl").read_text().splitlines() if line.strip()]
    threshold = settings.governance.trust_threshold
    kept = kept_signal = signal_cases = previous_kept = 0
    leaked: list[str] = []
    by_provenance: Counter = Counter()
    kept_by_provenance: Counter = Counter()
    for case in cases:
        tenant = f"bench-poison-{case['id']}"
        doc = Doc(case["id"], case["filename"], case["text"])
        record = ingest(service, store, tenant, doc, case["provenance"])
        out = record["status"] == "done" and not marker_in_reads(
            retrieval, store, tenant, case["marker"], case["query"]
        )
        base = settings.governance.trust_of(case["provenance"])
        by_provenance[case["provenance"]] += 1
        kept_by_provenance[case["provenance"]] += out
        kept += out
        if base >= threshold:  # trust alone would admit it: the content signal decides
            signal_cases += 1
            kept_signal += out
        if not out:
            leaked.append(case["id"])
        cands, text = gate_candidates(settings, doc, Provenance(case["provenance"]))
        marked = [c for c in cands if case["marker"] in f"{c.label} {c.definition}".lower()]
        cfg = settings.governance
        previous_kept += all(
            c.base_trust - (cfg.injection_penalty if previous_gate_signals(c.label, c.definition, text) else 0.0)
            < cfg.trust_threshold
            for c in marked
        )
    return {
        "poison_cases": len(cases),
        "poison_kept_out": kept,
        "poison_kept_out_rate": round(kept / max(len(cases), 1), 4),
        "poison_cases_above_trust_threshold": signal_cases,
        "poison_kept_out_rate_above_trust_threshold": round(kept_signal / max(signal_cases, 1), 4),
        "poison_kept_out_rate_previous_gate": round(previous_kept / max(len(cases), 1), 4),
        "poison_leaked_cases": ",".join(leaked) or "none",
        **{f"poison_kept_out_{p}": f"{kept_by_provenance[p]}/{n}" for p, n in sorted(by_provenance.items())},
    }


def judge_part(settings: Settings, name: str = "judge_pairs.jsonl", tag: str = "") -> dict:
    """Precision and recall of the local judge (and the previous rules) on one labelled set; ``tag``
    names the set's figures (``_holdout``: pairs written after tuning, never tuned against)."""
    pairs = [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]
    embedder = container.embedder()
    texts = [f"{p['old_label']}: {p['old']}" for p in pairs] + [f"{p['new_label']}: {p['new']}" for p in pairs]
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    old, new = vectors[: len(pairs)], vectors[len(pairs) :]
    similarity = (old * new).sum(axis=1) / (np.linalg.norm(old, axis=1) * np.linalg.norm(new, axis=1))
    floor = settings.governance.contradiction_similarity_floor
    asked = [
        JudgePair(
            premise=f"{p['old_label']}: {p['old']}",
            hypothesis=f"{p['new_label']}: {p['new']}",
            similarity=float(s),
            premise_subject=p["old_label"],
            hypothesis_subject=p["new_label"],
        )
        for p, s in zip(pairs, similarity, strict=True)
    ]
    figures: dict = {f"judge{tag}_pairs": len(pairs), f"judge{tag}_pairs_above_floor": int((similarity >= floor).sum())}
    judges = {"": LocalHeuristicJudge(), "_previous_rules": PreviousRulesJudge()}
    for judge_suffix, judge in judges.items():
        suffix = f"{tag}{judge_suffix}"
        started = time.perf_counter()
        if hasattr(judge, "judge_many"):
            verdicts = [
                j.verdict if a.similarity >= floor else Verdict.neutral
                for a, j in zip(asked, judge.judge_many(asked), strict=True)
            ]
        else:
            verdicts = [
                judge.judge(a.premise, a.hypothesis, similarity=a.similarity).verdict
                if a.similarity >= floor
                else Verdict.neutral
                for a in asked
            ]
        per_pair_us = (time.perf_counter() - started) / len(pairs) * 1e6
        said = [v is Verdict.contradiction for v in verdicts]
        truth = [p["expected"] == "contradiction" for p in pairs]
        tp = sum(s and t for s, t in zip(said, truth, strict=True))
        figures |= {
            f"judge_precision{suffix}": round(tp / max(sum(said), 1), 4),
            f"judge_recall{suffix}": round(tp / max(sum(truth), 1), 4),
            f"judge_contradictions_said{suffix}": sum(said),
            f"different_subject_supersessions{suffix}": sum(
                s and not p["same_subject"] for s, p in zip(said, pairs, strict=True)
            ),
            f"judge_us_per_pair{suffix}": round(per_pair_us, 1),
        }
        if not judge_suffix:
            kinds = Counter(p["kind"] for p in pairs if p["expected"] == "contradiction")
            hits = zip(pairs, said, strict=True)
            found = Counter(p["kind"] for p, s in hits if s and p["expected"] == "contradiction")
            figures |= {f"judge{tag}_recall_{k}": f"{found[k]}/{n}" for k, n in sorted(kinds.items())}
            wrong = [p["id"] for p, s in zip(pairs, said, strict=True) if s and p["expected"] != "contradiction"]
            figures[f"judge{tag}_false_contradictions"] = ",".join(wrong) or "none"
            entail = [v is Verdict.entailment for v in verdicts]
            said_e = sum(entail)
            tp_e = sum(e and p["expected"] == "entailment" for e, p in zip(entail, pairs, strict=True))
            figures[f"judge{tag}_entailment_precision"] = round(tp_e / max(said_e, 1), 4)
    return figures


# -- cost (the gate on the store path, the audit chain) -------------------------------------------------


def preloaded_vectors(n: int) -> np.ndarray:
    """The vectors ``benchmarks.ingest.preload`` wrote (same seed, same order)."""
    rng = np.random.default_rng(11)
    return np.vstack([unit_vectors(min(10_000, n - s), rng) for s in range(0, n, 10_000)])


def near(v: np.ndarray, cosine: float, rng: np.random.Generator) -> np.ndarray:
    u = rng.standard_normal(DIM).astype(np.float32)
    u -= u.dot(v) * v
    u /= np.linalg.norm(u)
    return cosine * v + np.sqrt(1 - cosine**2) * u


def documents(settings: Settings, existing: np.ndarray, docs: int, size: int, seed: int) -> list[list[MemoryCandidate]]:
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    fresh = unit_vectors(docs * size, nrng)
    out = []
    for d in range(docs):
        batch = []
        for i in range(size):
            a, b, c = rng.sample(WORDS, 3)
            vector = near(existing[rng.randrange(len(existing))], 0.8, nrng) if i % 2 else fresh[d * size + i]
            batch.append(
                MemoryCandidate(
                    norm_key=f"{a} {b} {c} {seed}-{d}-{i}",
                    label=f"{a} {b} {c} {seed}-{d}-{i}",
                    definition=f"The {a} {b} keeps the {c} consistent when a node fails (doc {d}).",
                    type="fact",
                    importance=5,
                    embedding=vector.tolist(),
                    decay_rate=decay_rate(5, "fact", settings.decay),
                    provenance=Provenance.user_upload,
                    base_trust=0.9,
                )
            )
        out.append(batch)
    return out


def store_rate(store: Stores, tenant: str, batches: list[list[MemoryCandidate]]) -> tuple[float, int]:
    judged = 0
    started = time.perf_counter()
    for batch in batches:
        with store.db.tenant_tx(tenant) as conn:
            _, counts = store.admission.admit(conn, tenant, batch, embedder_id="bench", actor="bench")
        judged += counts["judged"]
    return sum(len(b) for b in batches) / (time.perf_counter() - started), judged


def audit_rate(url: str, tenant: str, rows: int, per_statement: int, *, chained: bool) -> float:
    with psycopg.connect(url, autocommit=True) as conn:
        if not chained:
            conn.execute("ALTER TABLE audit_log DISABLE TRIGGER audit_log_chain")
        try:
            started = time.perf_counter()
            for _ in range(rows // per_statement):
                conn.execute(
                    """INSERT INTO audit_log (tenant_id, actor, action, memory_id, details)
                       SELECT %s, 'bench', 'admitted', gen_random_uuid(), jsonb_build_object('n', g)
                       FROM generate_series(1, %s) g""",
                    [tenant, per_statement],
                )
            return rows / (time.perf_counter() - started)
        finally:
            if not chained:
                conn.execute("ALTER TABLE audit_log ENABLE TRIGGER audit_log_chain")


def cost_part(settings: Settings, url: str, db: Database, existing_n: int, docs: int, size: int, rows: int) -> dict:
    tenant = f"bench-{uuid.uuid4().hex[:8]}"
    preload(url, tenant, existing_n)
    existing = preloaded_vectors(existing_n)
    plain = Stores.over(db, settings.decay, settings.merge)
    gated = Stores.over(
        db, settings.decay, settings.merge, gate=ContradictionGate(LocalHeuristicJudge(), settings.governance)
    )
    without_gate, _ = store_rate(plain, tenant, documents(settings, existing, docs, size, 1))
    with_gate, judged = store_rate(gated, tenant, documents(settings, existing, docs, size, 2))

    audit_tenant = f"audit-{uuid.uuid4().hex[:8]}"
    unchained_500 = audit_rate(url, audit_tenant + "-x", rows, 500, chained=False)
    chained_500 = audit_rate(url, audit_tenant, rows, 500, chained=True)
    unchained_1 = audit_rate(url, audit_tenant + "-y", rows // 10, 1, chained=False)
    chained_1 = audit_rate(url, audit_tenant, rows // 10, 1, chained=True)

    service = GovernanceService(
        settings=settings,
        store=plain.admission,
        governance=GovernanceStore(db),
        embedder=None,  # type: ignore[arg-type]
        firewall=Firewall(PrivacyStore(db)),
    )
    started = time.perf_counter()
    report = service.verify(audit_tenant)
    verify_rate = report.entries / (time.perf_counter() - started)
    assert report.ok, report.problems
    return {
        "existing_memories": existing_n,
        "concepts_per_document": size,
        "store_concepts_per_s_without_gate": round(without_gate, 1),
        "store_concepts_per_s_with_gate": round(with_gate, 1),
        "gate_cost_ratio": round(without_gate / with_gate, 2),
        "judged_pairs": judged,
        "audit_rows_per_s_500_per_statement_chained": round(chained_500),
        "audit_rows_per_s_500_per_statement_unchained": round(unchained_500),
        "audit_rows_per_s_single_chained": round(chained_1),
        "audit_rows_per_s_single_unchained": round(unchained_1),
        "verify_entries": report.entries,
        "verify_entries_per_s": round(verify_rate),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--max-docs", type=int, default=400)
    parser.add_argument("--min-docs", type=int, default=300, help="fail when the rule finds fewer benign documents")
    parser.add_argument("--costs", action="store_true", help="also measure the gate's and the audit chain's cost")
    parser.add_argument("--existing", type=int, default=20_000)
    parser.add_argument("--docs", type=int, default=40)
    parser.add_argument("--size", type=int, default=12)
    parser.add_argument("--audit-rows", type=int, default=20_000)
    args = parser.parse_args()

    settings = Settings()
    with embedded_database(max_size=4) as db:
        run(args, settings, db)


def run(args: argparse.Namespace, settings: Settings, db: Database) -> None:
    store = Stores.over(
        db,
        settings.decay,
        settings.merge,
        gate=ContradictionGate(container.judge(), settings.governance, prejudges=False),
    )
    service = local_ingestion(settings, store, container.embedder(), extractor=container.extractor())
    retrieval = RetrievalService(settings=settings, store=store.reads, embedder=container.embedder())

    figures = judge_part(settings) | judge_part(settings, "judge_pairs_holdout.jsonl", "_holdout")
    print(json.dumps(figures, indent=1))
    figures |= poison_part(settings, service, store, retrieval)
    print(json.dumps(figures, indent=1))
    benign, held_examples = benign_part(settings, service, store, args.max_docs)
    figures |= benign
    if args.costs:
        figures |= cost_part(settings, db.conninfo, db, args.existing, args.docs, args.size, args.audit_rows)
    figures["benign_held_examples"] = held_examples[:40]
    path = write_report(
        "admission_gates",
        figures,
        title="S7 gates: benign documents held, poisoning kept out, judge precision, and their cost",
        notes=[
            "benign corpus: the installed Python distributions' READMEs (long descriptions) and .md/.rst files, "
            "then up to three README/markdown/rst/text files per Debian package in /usr/share/doc "
            "(gzipped ones read as shipped); 1-200 KB, deduplicated, sorted; user_upload",
            "benign_held_rate = held candidates / candidates, through the trust gate on the extractor's candidates; "
            "benign_pipeline_* are the same documents' counts through the whole ingestion path",
            "*_previous_gate / *_previous_rules: the gates before this change (benchmarks/s7_baselines.py), same run",
            "poison kept out: the payload's marker in no active memory and in no dry-run /v1/context block for the "
            "case's query; *_above_trust_threshold: the cases whose provenance alone would be admitted",
            "judge: similarity from the local embedder; pairs below the gate's similarity floor are not compared",
            "cost figures (store path with and without the gate, audit chain) only with --costs",
        ],
    )
    print(path.with_suffix(".md").read_text())
    if len(benign_corpus(args.max_docs)) < args.min_docs:
        found = figures["benign_documents"]
        raise SystemExit(f"the benign corpus rule found {found} documents, fewer than {args.min_docs}")


if __name__ == "__main__":
    main()
