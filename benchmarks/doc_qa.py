"""Extraction quality: do the distilled memories keep what third-party documents say?

Documents from ``benchmarks/data/doc_qa_manifest.json`` (descriptions of packages the project
installs, and PDF manuals that Debian packages ship: ``apt-get install -y libtasn1-doc
shared-mime-info``) go through the ingestion service as deployed (parse, local spaCy extraction,
validation, MiniLM embeddings, trust gate, contradiction gate, store) into one tenant. Each
question of ``benchmarks/data/doc_qa_questions.jsonl`` (written before any tuning) is asked of
the context endpoint's service (``POST /v1/context``, a dry run); it is a hit when every answer
term appears in the returned block. The baseline is classic RAG on the same documents in the same
run: BM25 (bm25s, stemmed) over ~600-character chunks, the top chunks filling the same number of
tokens the context block used.

Run: ``python -m benchmarks.doc_qa``. A fresh embedded PostgreSQL is started in a temp dir.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contextos.models import ContextRequest, DocumentJob
from contextos.normalization import estimate_tokens
from contextos.parsing import parse_document
from contextos.services.contradiction import ContradictionGate
from contextos.settings import Settings
from contextos.store.db import Database
from contextos.store.dialect import get_dialect
from contextos.store.embedded import embedded_database_url
from contextos.store.migrate import migrate
from contextos.store.stores import Stores

from benchmarks.report import write_report

DATA = Path(__file__).resolve().parent / "data"
CHUNK_CHARS = 600
TENANT = "doc-qa"


@dataclass(frozen=True)
class Document:
    id: str
    filename: str
    data: bytes


def load_documents(manifest: Path) -> list[Document]:
    """Each manifest entry read where its package installed it; a missing one stops the run."""
    docs = []
    for entry in json.loads(manifest.read_text())["documents"]:
        match entry["kind"]:
            case "pypi":
                dist = md.distribution(entry["dist"])
                kind = dist.metadata.get("Description-Content-Type") or ""
                body = dist.metadata.get_payload() or ""
                name = "README.md" if "markdown" in kind else "README.rst"
                docs.append(Document(entry["id"], name, body.encode()))
            case "apt":
                path = Path(entry["path"])
                if not path.exists():
                    raise SystemExit(f"{path} is missing: apt-get install -y {entry['package']}")
                docs.append(Document(entry["id"], path.name, path.read_bytes()))
    return docs


def chunks_of(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """~``size``-character chunks on paragraph, then sentence-ish, boundaries."""
    out: list[str] = []
    current = ""
    for para in (p.strip() for p in text.split("\n\n")):
        if not para:
            continue
        pieces = [para] if len(para) <= size else _split_long(para, size)
        for piece in pieces:
            if current and len(current) + len(piece) + 1 > size:
                out.append(current)
                current = ""
            current = f"{current}\n{piece}" if current else piece
    if current:
        out.append(current)
    return out


def _split_long(para: str, size: int) -> list[str]:
    words, out, current = para.split(), [], ""
    for word in words:
        if current and len(current) + len(word) + 1 > size:
            out.append(current)
            current = ""
        current = f"{current} {word}" if current else word
    return [*out, current] if current else out


class ChunkRag:
    """BM25 over chunks; the top chunks until the token count is filled (the last one cut)."""

    def __init__(self, chunks: list[str]) -> None:
        import bm25s
        import Stemmer

        self.chunks = chunks
        self.stemmer = Stemmer.Stemmer("english")
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenize(chunks, stopwords="en", stemmer=self.stemmer, show_progress=False))

    def block(self, query: str, tokens: int) -> str:
        import bm25s

        ids, _ = self.retriever.retrieve(
            bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, show_progress=False),
            k=min(50, len(self.chunks)),
            show_progress=False,
        )
        parts, used = [], 0
        for i in ids[0]:
            chunk = self.chunks[int(i)]
            cost = estimate_tokens(chunk)
            if used + cost > tokens:
                room = (tokens - used) * 4
                if room > 40:
                    parts.append(chunk[:room])
                break
            parts.append(chunk)
            used += cost
        return "\n\n".join(parts)


def hit(block: str, answer: list[str]) -> bool:
    lowered = block.lower()
    return all(term.lower() in lowered for term in answer)


def generic_label(label: str, source_text: str, generic: frozenset[str]) -> bool:
    """A label that names nothing: only generic words, or one common word (one the document
    itself writes in lower case more often than capitalized, and that is no acronym, version or
    mixed-case name)."""
    words = label.split()
    if all(w.lower().strip(".,") in generic for w in words):
        return True
    if len(words) != 1:
        return False
    word = words[0]
    if not word.isalpha() or any(ch.isupper() for ch in word[1:]):
        return False
    lower = source_text.count(f" {word.lower()} ")
    return lower > source_text.count(f" {word[:1].upper()}{word[1:].lower()} ") and lower > 0


GENERIC = frozenset(
    "system memory model text data thing way part example case use user value type number time file "
    "information result item list set option default function method object class feature support "
    "version library package tool code line name word document page point approach process".split()
)


def ingest_documents(
    settings: Settings, store: Stores, embedder, docs: list[Document], tenant: str = TENANT
) -> tuple[dict[str, str], dict[str, dict], float]:
    """Every document through the ingestion service as deployed (local extractor, the store's gates)
    into ``tenant``: (document id → parsed text, document id → its counts and labels, seconds)."""
    from benchmarks.ingest import local_ingestion

    service = local_ingestion(settings, store, embedder)
    texts: dict[str, str] = {}
    per_doc: dict[str, dict] = {}
    started = time.perf_counter()
    for doc in docs:
        parsed = parse_document(doc.data, filename=doc.filename, declared_type=None)
        texts[doc.id] = parsed.text
        record, _ = store.documents.create_document(
            tenant,
            content_hash=uuid.uuid4().hex,
            filename=doc.filename,
            content_type=None,
            provenance="user_upload",
            size_bytes=len(doc.data),
        )
        service.process(DocumentJob(tenant_id=tenant, document_id=record.id), data=doc.data)
        done = store.documents.get_document(tenant, record.id)
        counts = done.counts or {}
        per_doc[doc.id] = {
            "status": done.status,
            "text_chars": len(parsed.text),
            "extracted": counts.get("extracted"),
            "accepted": counts.get("accepted"),
            "held_for_review": counts.get("held_for_review"),
            "superseded": counts.get("superseded"),
            "memory_labels": [m["label"] for m in store.documents.memories_of_document(tenant, record.id)],
        }
        print(f"{doc.id}: {per_doc[doc.id]['accepted']} concepts from {len(parsed.text):,} chars ({done.status})")
    return texts, per_doc, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit-docs", type=int, default=0, help="only the first N documents (iterating)")
    args = parser.parse_args()

    from contextos.embedding.local import LocalMiniLMEmbedder
    from contextos.judge.local import LocalHeuristicJudge
    from contextos.services.retrieval import RetrievalService

    settings = Settings()
    docs = load_documents(DATA / "doc_qa_manifest.json")
    if args.limit_docs:
        docs = docs[: args.limit_docs]
    wanted = {d.id for d in docs}
    questions = [json.loads(line) for line in (DATA / "doc_qa_questions.jsonl").read_text().splitlines() if line]
    questions = [q for q in questions if q["doc"] in wanted]

    with tempfile.TemporaryDirectory(prefix="contextos-docqa-") as tmp:
        url = embedded_database_url(Path(tmp))
        embedder = LocalMiniLMEmbedder()
        migrate(url, get_dialect("postgres"), embedder.dimensions, embedder.model_id)
        db = Database(url, get_dialect("postgres"), max_size=4)
        # As deployed with the local judge: both gates on.
        gate = ContradictionGate(LocalHeuristicJudge(), settings.governance, prejudges=False)
        store = Stores.over(db, settings.decay, settings.merge, gate=gate)
        texts, per_doc, ingest_s = ingest_documents(settings, store, embedder, docs)

        with db.tenant_tx(TENANT) as conn:  # what the memories hold at all, ranking aside
            stored = "\n".join(
                f"{r['label']}: {r['definition']}\n{r['source_text']}"
                for r in conn.execute(
                    "SELECT label, definition, source_text FROM memories WHERE state = 'active'"
                ).fetchall()
            )
        retrieval = RetrievalService(settings=settings, store=store.reads, embedder=embedder)
        rag = ChunkRag([c for d in docs for c in chunks_of(texts[d.id])])
        rows = []
        for q in questions:
            result = retrieval.context(TENANT, ContextRequest(query=q["q"], dry_run=True))
            rag_block = rag.block(q["q"], result.tokens_used)
            rows.append(
                {
                    "doc": q["doc"],
                    "q": q["q"],
                    "answer": q["answer"],
                    "in_source": hit(texts[q["doc"]], q["answer"]),
                    "stored": hit(stored, q["answer"]),
                    "contextos": hit(result.context, q["answer"]),
                    "chunk_rag": hit(rag_block, q["answer"]),
                    "tokens": result.tokens_used,
                    "abstained": result.abstained,
                    "rag_tokens": estimate_tokens(rag_block),
                }
            )
        db.close()

    labels = [(doc_id, label) for doc_id, info in per_doc.items() for label in info["memory_labels"]]
    generic = [(d, lab) for d, lab in labels if generic_label(lab, texts[d], GENERIC)]
    concepts = [info["accepted"] or 0 for info in per_doc.values()]
    n = len(rows)
    figures = {
        "documents": len(docs),
        "pdf_documents": sum(1 for d in docs if d.filename.endswith(".pdf")),
        "questions": n,
        "answers_in_source": sum(r["in_source"] for r in rows),
        "answers_in_stored_memories": sum(r["stored"] for r in rows),
        "doc_qa_hit_rate": round(sum(r["contextos"] for r in rows) / n, 3),
        "chunk_rag_hit_rate": round(sum(r["chunk_rag"] for r in rows) / n, 3),
        # the same figure by the name: chunk RAG is given, per question, the tokens ContextOS used
        "chunk_rag_hit_rate_same_tokens": round(sum(r["chunk_rag"] for r in rows) / n, 3),
        "abstained": sum(r["abstained"] for r in rows),
        "mean_context_tokens": round(statistics.mean(r["tokens"] for r in rows), 1),
        "mean_chunk_rag_tokens": round(statistics.mean(r["rag_tokens"] for r in rows), 1),
        "generic_label_share": round(len(generic) / max(len(labels), 1), 4),
        "memory_labels": len(labels),
        "concepts_per_document_min": min(concepts),
        "concepts_per_document_median": statistics.median(concepts),
        "concepts_per_document_max": max(concepts),
        "ingest_s": round(ingest_s, 1),
        "concepts_per_document": {
            d: {"chars": i["text_chars"], "concepts": i["accepted"], "held": i["held_for_review"]}
            for d, i in per_doc.items()
        },
        "generic_labels": [lab for _, lab in generic],
        "misses": [
            {"q": r["q"], "answer": r["answer"], "stored": r["stored"], "chunk_rag": r["chunk_rag"]}
            for r in rows
            if not r["contextos"]
        ],
        "chunk_rag_misses": [r["q"] for r in rows if not r["chunk_rag"]],
    }
    print(json.dumps({k: v for k, v in figures.items() if not isinstance(v, dict | list)}, indent=2))
    path = write_report(
        "doc_qa",
        figures,
        title="Extraction quality: questions over third-party documents",
        notes=[
            "Documents: benchmarks/data/doc_qa_manifest.json (package descriptions the project installs,"
            " PDF manuals from Debian's libtasn1-doc and shared-mime-info), ingested as user_upload through the"
            " ingestion service with both gates on, into one tenant.",
            "Questions: benchmarks/data/doc_qa_questions.jsonl, committed before any tuning; a hit = every answer"
            " term appears (case-insensitive) in the block.",
            "ContextOS: the /v1/context service, dry run, default budget, recipe and relevance floor."
            " answers_in_stored_memories: questions whose answer terms appear in some active memory's label,"
            " definition and source excerpts (kept, whether or not ranked into the block).",
            "chunk_rag: BM25 (bm25s, English stopwords, Snowball stemmer) over ~600-character chunks of the same"
            " parsed texts; top chunks until the context block's token count, the last chunk cut to fit.",
            "generic_label_share: labels made only of generic words, or one common word the document writes in"
            " lower case (no acronym, version or mixed-case name).",
        ],
    )
    print(f"report: {path}")


if __name__ == "__main__":
    main()
