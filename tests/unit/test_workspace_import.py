"""A workspace import's own decisions on in-memory fakes of its ports: which files are edits, which
are new memories and which stop before admission, what each edit changes, what a new file keeps
(its id, its state), and how admission's outcome becomes each file's report. The transaction
itself (the lock, the gates, the writes) is the integration tests' (tests/integration/test_workspace.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

from contextos.models import Provenance
from contextos.ports.admission import FileOutcome, WorkspaceBatch
from contextos.services.firewall import Firewall
from contextos.services.workspace_export import memory_of_row
from contextos.services.workspace_import import WorkspaceImporter
from contextos.settings import Settings
from contextos.workspace.format import render_file

from tests.unit.test_service_ports import DefaultPrivacy, FakeEmbedder

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def stored_row(label: str = "Deploy day", **over: Any) -> dict[str, Any]:
    """A memory as the export reads it (``contextos.store.workspace``'s columns)."""
    row = {
        "id": uuid4(),
        "label": label,
        "definition": "We deploy on Tuesdays.",
        "type": "fact",
        "importance": 5,
        "tags": [],
        "metadata": {},
        "user_id": None,
        "agent_id": None,
        "run_id": None,
        "created_at": NOW,
        "updated_at": NOW,
        "version": 1,
        "always_load": False,
        "protected": False,
        "strength_anchor": 1.0,
        "strength_anchor_at": NOW,
        "decay_policy": "exponential",
        "decay_rate": 0.02,
        "decay_scale": None,
        "decay_shape": None,
        "last_accessed_at": NOW,
        "access_count": 0,
        "provenance": "user_upload",
        "base_trust": 0.9,
        "state": "active",
        "tier": "hot",
        "superseded_by": None,
        "superseded_at": None,
        "valid_from": NOW,
        "valid_to": None,
        "recorded_at": NOW,
        "expires_at": None,
        "norm_key": label.lower(),
        "cold_object_key": None,
        "cold_byte_start": None,
        "cold_byte_end": None,
        "edges": [],
        "sources": [],
    }
    return row | over


def file_of(row: dict[str, Any], edits: dict[str, str] | None = None) -> tuple[str, bytes]:
    """The row's workspace file as exported, then edited by hand: each old text replaced by the new."""
    text = render_file(memory_of_row(row))
    for old, new in (edits or {}).items():
        assert old in text
        text = text.replace(old, new)
    return f"05-resources/{row['label'].lower().replace(' ', '-')}.md", text.encode()


@dataclass
class FakeAdmissions:
    """Admission as a fake: records each batch, answers with the outcomes it is told (else each
    edit updated to the next version and each memory created)."""

    answers: dict[UUID, FileOutcome] = field(default_factory=dict)
    batches: list[WorkspaceBatch] = field(default_factory=list)
    settled: int = 0

    def admit_workspace(
        self, tenant_id: str, batch: WorkspaceBatch, *, embedder_id: str, actor: str
    ) -> tuple[list[FileOutcome], list[FileOutcome]]:
        self.batches.append(batch)
        edited = [
            self.answers.get(e.memory_id, FileOutcome("updated", e.memory_id, version=e.version + 1))
            for e in batch.edits
        ]
        created = [self.answers.get(g.id, FileOutcome("created", g.id)) for g in batch.memories]
        return edited, created

    def settle_vectors(self, tenant_id: str, *, limit: int) -> int:
        self.settled += 1
        return 0


@dataclass
class FakeReads:
    rows: dict[UUID, dict[str, Any]] = field(default_factory=dict)

    def rows_by_id(self, tenant_id: str, ids: Sequence[UUID]) -> dict[UUID, dict[str, Any]]:
        return {i: self.rows[i] for i in ids if i in self.rows}


def importer(stored: list[dict[str, Any]], admissions: FakeAdmissions) -> WorkspaceImporter:
    return WorkspaceImporter(
        settings=Settings(),
        admissions=admissions,  # type: ignore[arg-type]
        reads=FakeReads({r["id"]: r for r in stored}),  # type: ignore[arg-type]
        embedders=FakeEmbedder,  # type: ignore[arg-type]
        firewall=Firewall(DefaultPrivacy()),  # type: ignore[arg-type]
    )


def run(stored: list[dict[str, Any]], files: list[tuple[str, bytes]], admissions: FakeAdmissions, **kw: Any):
    plans = importer(stored, admissions).plans(
        "t1", files, actor="tests", ceiling=kw.pop("ceiling", Provenance.user_upload), unlock=kw.pop("unlock", set())
    )
    return [p.report for p in plans]


def test_a_new_file_goes_to_admission_keeping_its_id_and_state_and_is_reported_created():
    row = stored_row(state="superseded")
    admissions = FakeAdmissions()
    (report,) = run([], [file_of(row)], admissions)
    (batch,) = admissions.batches
    (given,) = batch.memories
    assert given.id == row["id"] and given.state == "superseded" and not given.live and batch.edits == []
    assert given.candidate.label == "Deploy day" and given.held is None
    assert report.status == "created" and report.memory_id == row["id"] and admissions.settled == 1


def test_an_unchanged_file_and_a_refused_edit_never_reach_admission():
    same = stored_row("Deploy day")
    locked = stored_row("Release train", protected=True)
    admissions = FakeAdmissions()
    reports = run(
        [same, locked], [file_of(same), file_of(locked, {"We deploy on Tuesdays.": "Trains leave hourly."})], admissions
    )
    assert [r.status for r in reports] == ["unchanged", "refused"] and reports[1].code == "protected"
    (batch,) = admissions.batches
    assert batch.edits == [] and batch.memories == []


def test_an_edited_file_is_an_edit_over_the_version_it_was_made_on_with_its_new_vector():
    row = stored_row(version=3)
    admissions = FakeAdmissions()
    (report,) = run([row], [file_of(row, {"We deploy on Tuesdays.": "We deploy on Wednesdays."})], admissions)
    (edit,) = admissions.batches[0].edits
    assert (
        edit.memory_id == row["id"] and edit.version == 3 and edit.changes == {"definition": "We deploy on Wednesdays."}
    )
    assert edit.embedding == [1.0, 0.0] and not edit.key_must_be_free  # the label kept: its key too
    assert report.status == "updated" and report.reason == "changed definition; now version 4"


def test_a_relabelled_active_memory_must_find_its_new_key_free():
    row, holder = stored_row(), uuid4()
    admissions = FakeAdmissions(answers={row["id"]: FileOutcome("duplicate_key", row["id"], holder=holder)})
    (report,) = run([row], [file_of(row, {"l0: Deploy day": "l0: Release day"})], admissions)
    (edit,) = admissions.batches[0].edits
    assert edit.key_must_be_free and edit.label == "Release day"
    assert report.status == "failed" and report.code == "duplicate_key" and str(holder) in report.reason


def test_another_tenant_s_cold_pointer_is_refused_before_admission():
    row = stored_row(
        tier="cold",
        state="archived",
        cold_object_key="cold/other-tenant/x.jsonl.gz",
        cold_byte_start=0,
        cold_byte_end=9,
    )
    admissions = FakeAdmissions()
    (report,) = run([], [file_of(row)], admissions)
    assert report.code == "foreign_cold_object" and admissions.batches[0].memories == []


def test_a_file_below_the_trust_threshold_is_held_and_reported_with_its_review_item():
    row = stored_row(provenance="web_content")
    review = uuid4()
    admissions = FakeAdmissions(answers={row["id"]: FileOutcome("held", row["id"], review_id=review)})
    (report,) = run([], [file_of(row)], admissions, ceiling=Provenance.web_content)
    (given,) = admissions.batches[0].memories
    assert given.held is not None and given.candidate.provenance is Provenance.web_content
    assert report.status == "held" and report.code == "held_for_review" and str(review) in report.reason
