"""The write firewall at every way in (SPEC S7 "What never gets in"): one call that redacts a
text by the tenant's policy, records the kinds and counts in the audit log, and refuses it when
the tenant rejects texts that carry secrets. The services where text enters (documents, turns,
manual memories, imports) call it before they store anything, so REST, MCP and the CLI inherit it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from uuid import UUID

from contextos.errors import Forbidden, PermanentError
from contextos.governance_models import PrivacySettings
from contextos.observability import metrics
from contextos.ports.governance import PrivacyPort
from contextos.redaction import Redaction, RedactionPolicy, merge_counts, redact_together

HOLD_REASON = "contains_secret: held for review with the values masked"


class ContainsSecret(PermanentError):
    """The tenant's policy is ``reject`` and the text carries a secret or a personal datum."""

    code = "contains_secret"
    status = 422


@dataclass(frozen=True)
class Screened:
    """Texts after the firewall, in the order given, and what was found in all of them."""

    texts: list[str]
    counts: dict[str, int] = field(default_factory=dict)
    policy: RedactionPolicy = RedactionPolicy.redact

    @property
    def found(self) -> bool:
        return bool(self.counts)

    @property
    def hold(self) -> bool:
        """Under ``hold``, what carried a secret waits in the review queue (masked)."""
        return self.found and self.policy is RedactionPolicy.hold

    @property
    def hold_reason(self) -> str | None:
        return HOLD_REASON if self.hold else None


@dataclass
class Firewall:
    store: PrivacyPort

    def policy(self, tenant_id: str) -> RedactionPolicy:
        stored = self.store.policy(tenant_id)
        try:
            return RedactionPolicy(stored) if stored else RedactionPolicy.redact
        except ValueError:
            return RedactionPolicy.redact  # an unknown stored value never weakens the default

    def settings(self, tenant_id: str) -> PrivacySettings:
        return PrivacySettings(redaction_policy=self.policy(tenant_id))

    def set_settings(self, tenant_id: str, settings: PrivacySettings, *, actor: str, kind: str) -> PrivacySettings:
        """Only a person changes what the firewall does with secrets: an agent's key is refused."""
        if kind != "user":
            raise Forbidden("only a user credential can change the privacy policy")
        self.store.set_policy(tenant_id, settings.redaction_policy.value, actor=actor)
        return self.settings(tenant_id)

    def screen(
        self,
        tenant_id: str,
        texts: Sequence[str | None],
        *,
        what: str,
        actor: str = "system",
        document_id: UUID | None = None,
        session_id: str | None = None,
        reject: bool = True,
    ) -> Screened:
        """Redact every text; audit the counts when something was found; under ``reject`` raise
        ``ContainsSecret`` (``reject=False`` leaves that to the caller, e.g. a document that is
        recorded as failed rather than refused)."""
        results: list[Redaction] = redact_together([t or "" for t in texts])
        counts = merge_counts(*(r.counts for r in results))
        policy = self.policy(tenant_id) if counts else RedactionPolicy.redact
        screened = Screened([r.text for r in results], counts, policy)
        if not counts:
            return screened
        metrics.add_metric(name="ValuesRedacted", unit="Count", value=sum(counts.values()))
        action = {"redact": "redacted", "hold": "redacted_held", "reject": "rejected_secret"}[policy.value]
        self.store.record(
            tenant_id,
            actor=actor,
            action=action,
            what=what,
            counts=counts,
            document_id=document_id,
            session_id=session_id,
        )
        if policy is RedactionPolicy.reject and reject:
            raise ContainsSecret(secret_reason(counts, what))
        return screened


def secret_reason(counts: Mapping[str, int], what: str = "document") -> str:
    """The refusal's message and a failed document's reason: the code first, kinds and counts."""
    return f"contains_secret: the {what} carries {describe(counts)}; this tenant rejects such texts"


def describe(counts: Mapping[str, int]) -> str:
    """``2 secret:password, 1 pii:email`` — kinds and counts, safe to show and log."""
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
