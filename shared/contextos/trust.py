"""Trust (S7), pure: provenance ceilings, injection signals, gate trust and composite trust.

No database and no AWS here: the services decide with these functions, the store records it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

from contextos.config import GovernanceSettings
from contextos.models import Provenance

# Characters that render as nothing: used to split trigger words so a pattern does not see them.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad"))
_SPACES = re.compile(r"\s+")


def cap_provenance(claimed: Provenance, ceiling: Provenance, settings: GovernanceSettings) -> Provenance:
    """What a credential may claim: the claimed provenance when it is not more trusted than the
    credential's ceiling, else the ceiling itself (an agent's key cannot claim ``user_turn``)."""
    if settings.trust_of(claimed) <= settings.trust_of(ceiling):
        return claimed
    return ceiling


def normalized_for_scan(text: str) -> str:
    """Fold the usual disguises of an injected instruction: compatibility forms (full-width,
    ligatures), invisible characters, case and runs of whitespace."""
    folded = unicodedata.normalize("NFKC", text).translate(_INVISIBLE)
    return _SPACES.sub(" ", folded).lower()


@lru_cache(maxsize=8)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE | re.DOTALL) for p in patterns)


def injection_signals(texts: Iterable[str], patterns: Iterable[str]) -> list[str]:
    """The configured instruction patterns found in any of the texts (their indexes, as names),
    so a held candidate can say why without repeating the text."""
    compiled = _compiled(tuple(patterns))
    found: list[str] = []
    for text in texts:
        if not text:
            continue
        scanned = normalized_for_scan(text)
        found += [f"pattern_{i}" for i, p in enumerate(compiled) if p.search(scanned) and f"pattern_{i}" not in found]
    return found


def gate_trust(base_trust: float, signals: list[str], settings: GovernanceSettings) -> float:
    """The trust the gate compares with its threshold: base trust less the injection penalty."""
    penalty = settings.injection_penalty if signals else 0.0
    return min(max(base_trust - penalty, 0.0), 1.0)


def composite_trust(
    base_trust: float, corroborations: int, access_count: int, freshness: float, settings: GovernanceSettings
) -> float:
    """S7 at read time: clamp(base + min(0.05·corroborations, 0.15) − 0.10·[access_count ≥ 3 and
    freshness < 0.3], 0, 1). Freshness is the memory's current strength."""
    bonus = min(settings.corroboration_step * max(corroborations, 0), settings.corroboration_cap)
    stale = access_count >= settings.overuse_access_count and freshness < settings.overuse_freshness
    value = base_trust + bonus - (settings.overuse_penalty if stale else 0.0)
    return min(max(value, 0.0), 1.0)
