"""The write firewall's one redaction step (SPEC S7 "What never gets in").

Every text that enters passes ``redact`` before anything is stored: credentials, keys, tokens,
passwords, connection strings, private keys, card numbers, IBANs, national ids, emails and phone
numbers become typed placeholders (``[secret:aws_access_key]``, ``[pii:email]``) so the fact
around them stays useful, and the caller keeps the counts by kind, never the values.

Detection is the libraries' own: detect-secrets' plugins (their patterns and verifiers) for
provider tokens and keys, its keyword detector and heuristic filters for passwords in config;
python-stdnum's checksums for cards (Luhn), IBANs and national ids; phonenumbers for phones;
email-validator for emails. Only two things are ours: where a match ends (a token runs to the
end of its characters) and passwords said in prose ("the password is …"), which no library
reads. Entropy alone never redacts: a bare high-entropy string is a commit hash, a checksum or
a UUID far more often than a secret in ordinary documents, so entropy is only a gate on a value
that a keyword already names.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from typing import Any

PLACEHOLDER = re.compile(r"\[(?:secret|pii):[a-z_]+\]")
# How a token continues past a pattern's end (Slack's pattern stops at the first capital).
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-+/=]*")


class RedactionPolicy(StrEnum):
    """What a tenant does with a text that carries a secret or a personal datum."""

    redact = "redact"  # store it with typed placeholders (the default)
    hold = "hold"  # placeholders, and the candidates wait in the review queue
    reject = "reject"  # refuse it: ``contains_secret``


@dataclass(frozen=True)
class Finding:
    start: int
    end: int
    kind: str  # "secret:github_token", "pii:email"

    @property
    def placeholder(self) -> str:
        return f"[{self.kind}]"


@dataclass(frozen=True)
class Redaction:
    """The text with every finding replaced, and how many of each kind there were."""

    text: str
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def found(self) -> bool:
        return bool(self.counts)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


# ------------------------------------------------------------------ secrets (detect-secrets)

# detect-secrets plugin class name → our kind. Left out on purpose: the IBM/SoftLayer/Cloudant
# keyword plugins (the keyword detector covers them), Artifactory's ``AP…`` pattern and the
# public-IP plugin (both fire on ordinary words and addresses in documentation).
_PLUGINS = {
    "AWSKeyDetector": "aws_access_key",
    "AzureStorageKeyDetector": "azure_storage_key",
    "DiscordBotTokenDetector": "discord_token",
    "GitHubTokenDetector": "github_token",
    "GitLabTokenDetector": "gitlab_token",
    "JwtTokenDetector": "jwt",
    "MailchimpDetector": "mailchimp_key",
    "NpmDetector": "npm_token",
    "OpenAIDetector": "openai_key",
    "PypiTokenDetector": "pypi_token",
    "SendGridDetector": "sendgrid_key",
    "SlackDetector": "slack_token",
    "SquareOAuthDetector": "square_secret",
    "StripeDetector": "stripe_key",
    "TelegramBotTokenDetector": "telegram_token",
    "TwilioKeyDetector": "twilio_key",
}
_PRIVATE_KEY = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY((?: BLOCK)?)-----.*?(?:-----END \1PRIVATE KEY\2-----|\Z)", re.DOTALL
)
_PUTTY_KEY = re.compile(r"PuTTY-User-Key-File-\d:.*?(?:Private-MAC: \S+|\Z)", re.DOTALL)
_USERINFO = re.compile(r"://([^:/?#\[\]@!$&'()*+,;=\s]+):([^:/?\[\]@\s]+)@(?=[\w.-]+)")
# "https://user:pass@host" in documentation shows the shape, not a password
_URL_PLACEHOLDER = re.compile(
    r"pass|passwd|password|pwd|pw|secret|token|user|username|x+|\*+|\.+|<[^>]*>|\$\w+|\$\{[^}]*\}|\{\{[^}]*\}\}|%s",
    re.IGNORECASE,
)
_JWT_TAIL = re.compile(r"[A-Za-z0-9_\-=.+/]*")
_ASCII_QUOTES = str.maketrans("‘’‚‛“”„‟«»", '\'\'\'\'""""""')  # one for one: offsets hold
_KEYWORD_HINT = re.compile(r"pass|pwd|secret|token|api.?key|auth|cred|private.?key", re.IGNORECASE)
# Passwords said in prose: "the password for staging is Tr0ub4dor&3".
_PROSE_SECRET = re.compile(
    r"\b(password|passphrase|passcode|passwd|pwd|api[ _-]?key|secret(?: key)?|access token|auth token|token)"
    r"(?:\s+(?:for|of|to|on)\s+[\w .@/-]{1,40}?)?"
    r"\s*(?:\bis\b|\bwas\b|=|:|\bset to\b|\bchanged to\b|\bbecomes\b)\s*[\"'`]?"
    r"(?P<value>[^\s\"'`<]{6,128}?)[\"'`]?(?=[\s,;)<]|[.!?](?:\s|$)|$)",
    re.IGNORECASE,
)
_PLACEHOLDER_VALUE = re.compile(
    r"^(?:[<{\[$%(]|.*[>}\]]$|\*{3,}|x{4,}|\.{3}|"
    r"(?:your|my|the|some|example|sample|dummy|fake|placeholder|changeme|redacted|none|null|empty|required|"
    r"optional|secret|password|token|string|value|default|xxx)\b)",
    re.IGNORECASE,
)


@cache
def _plugins() -> tuple[tuple[str, Any], ...]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    out: list[tuple[str, Any]] = []
    cls: Any
    for cls in get_mapping_from_secret_type_to_class().values():
        if cls.__name__ in _PLUGINS:
            out.append((_PLUGINS[cls.__name__], cls()))
    return tuple(out)


@cache
def _keyword_detector() -> Any:
    from detect_secrets.plugins.keyword import KeywordDetector

    return KeywordDetector()


def _strong(value: str) -> bool:
    """A value that a keyword names is a secret when it is not a word, a placeholder or a reference:
    at least two kinds of character (lower, upper, digit, symbol), or long."""
    from detect_secrets.filters.heuristic import (
        is_potential_uuid,
        is_prefixed_with_dollar_sign,
        is_sequential_string,
        is_templated_secret,
    )

    if len(value) < 6 or PLACEHOLDER.search(value) or _PLACEHOLDER_VALUE.match(value):
        return False
    if re.search(r"\s|\(|->", value):
        return False  # prose ("Not a directory") or code (``xstrdup(v)``, ``c->password``), not a value
    if is_templated_secret(value) or is_prefixed_with_dollar_sign(value) or is_sequential_string(value):
        return False
    if is_potential_uuid(value):
        return False
    classes = sum(bool(re.search(p, value)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]", r"[^A-Za-z0-9]"))
    if re.fullmatch(r"[a-z]+(?:[-_][a-z]+)*", value) and len(value) < 20:
        return False  # a word or an identifier (``required``, ``read-only``)
    return classes >= 2 or len(value) >= 16


def _secret_kind_for(keyword: str) -> str:
    k = keyword.lower()
    if "pass" in k or "pwd" in k:
        return "secret:password"
    if "token" in k:
        return "secret:token"
    if "key" in k:
        return "secret:api_key"
    return "secret:credential"


def _secrets(text: str) -> Iterator[Finding]:
    for m in _PRIVATE_KEY.finditer(text):
        yield Finding(m.start(), m.end(), "secret:private_key")
    for m in _PUTTY_KEY.finditer(text):
        yield Finding(m.start(), m.end(), "secret:private_key")
    for kind, plugin in _plugins():
        for pattern in plugin.denylist:
            for m in pattern.finditer(text):
                yield from _plugin_match(kind, plugin, m, text)
    for m in _USERINFO.finditer(text):
        # detect-secrets' basic-auth pattern, with RFC 3986's sub-delims allowed in the password
        if not _URL_PLACEHOLDER.fullmatch(m.group(2)) and not PLACEHOLDER.search(m.group(0)):
            yield Finding(m.start(1), m.end(2), "secret:connection_credentials")
    yield from _keyword_secrets(text)
    for m in _PROSE_SECRET.finditer(text):
        value = m.group("value").rstrip(".,;:!?")
        if _strong(value):
            start = m.start("value")
            yield Finding(start, start + len(value), _secret_kind_for(m.group(1)))


def _plugin_match(kind: str, plugin: Any, m: re.Match[str], text: str) -> Iterator[Finding]:
    start, end = m.span()
    if kind == "aws_access_key" and m.groups():
        start, end, kind = m.start(1), m.end(1), "aws_secret_key"
    elif kind == "jwt":
        end = m.end() + len(_JWT_TAIL.match(text, m.end()).group(0))  # type: ignore[union-attr]
        while end > start and text[end - 1] in ".=":
            end -= 1
        if not plugin.is_formally_valid(text[start:end]):
            return
    elif kind == "npm_token":
        start, end = (m.start(1), m.end(1)) if m.groups() and m.group(1) else (start, end)
        end = start + len(text[start:end].split()[0]) if text[start:end].split() else end
    else:
        end += len(_TOKEN_TAIL.match(text, end).group(0))  # type: ignore[union-attr]
    if start > 0 and (text[start - 1].isalnum() and kind not in ("aws_secret_key", "npm_token")):
        return  # the pattern matched inside a longer word or hash
    yield Finding(start, end, f"secret:{kind}")


def _keyword_secrets(text: str) -> Iterator[Finding]:
    """Values assigned to password/secret/token keys in config and code (detect-secrets' keyword
    detector, read as YAML/ini and as code), kept only when strong and not a reference."""
    from detect_secrets.filters.heuristic import is_indirect_reference

    detector = _keyword_detector()
    offset = 0
    for raw in text.splitlines(keepends=True):
        # PDF extraction and word processors give typographic quotes: the detector reads ASCII ones
        line = raw.rstrip("\r\n").translate(_ASCII_QUOTES)
        if _KEYWORD_HINT.search(line) and not is_indirect_reference(line):
            values: set[str] = set()
            for filename in ("config.yaml", "code.py"):
                values.update(
                    s.secret_value for s in detector.analyze_line(filename=filename, line=line) if s.secret_value
                )
            for value in {re.split(r"</?[A-Za-z]", v, maxsplit=1)[0] for v in values}:  # HTML: a tag ends it
                if not _strong(value):
                    continue
                i = line.find(value)
                if i >= 0:
                    key = _KEYWORD_HINT.search(line[:i])
                    yield Finding(offset + i, offset + i + len(value), _secret_kind_for(key.group(0) if key else ""))
        offset += len(raw)


# ------------------------------------------------------------------ personal data (validators)

_CARD = re.compile(r"(?<![\w.-])(?:\d[ -]?){12,18}\d(?![\w-]|\.\d)")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[A-Z0-9]{11,30}|(?: [A-Z0-9]{4}){2,7}(?: [A-Z0-9]{1,4})?)\b")
_SSN = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])")
_ES_DNI = re.compile(r"\b\d{8}-?[A-Z]\b")
_IT_CF = re.compile(r"\b[A-Z]{6}\d{2}[A-EHLMPR-T]\d{2}[A-Z]\d{3}[A-Z]\b")
_FR_NIR = re.compile(r"\b[12] ?\d{2} ?(?:0[1-9]|1[0-2]) ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}\b")
_EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}\.)+[A-Za-z]{2,24}\b"
)
# Reserved for examples (RFC 2606/6761): an address there is a placeholder, not a person's.
_EXAMPLE_DOMAIN = re.compile(r"(?:^|\.)(?:example\.(?:com|org|net)|example|test|invalid|localhost|local)$", re.I)
_CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2[2-7]|3[47]|6(?:011|5|4[4-9])|35|3(?:0[0-5]|[68]))")


def _cards(text: str) -> Iterator[Finding]:
    from stdnum import luhn

    for m in _CARD.finditer(text):
        raw = m.group(0)
        digits = re.sub(r"\D", "", raw)
        separators = set(re.findall(r"[ -]", raw))
        if not 13 <= len(digits) <= 19 or len(separators) > 1 or len(set(digits)) < 2:
            continue
        if _CARD_PREFIX.match(digits) and luhn.is_valid(digits):
            yield Finding(m.start(), m.end(), "pii:card")


def _ibans(text: str) -> Iterator[Finding]:
    from stdnum import iban

    for m in _IBAN.finditer(text):
        raw = m.group(0)
        # the last group may have swallowed a following word's start: shrink until valid
        for cut in range(len(raw), 14, -1):
            if iban.is_valid(raw[:cut]):
                yield Finding(m.start(), m.start() + cut, "pii:iban")
                break


def _national_ids(text: str) -> Iterator[Finding]:
    from stdnum.es import dni
    from stdnum.fr import nir
    from stdnum.it import codicefiscale
    from stdnum.us import ssn

    for pattern, module in ((_SSN, ssn), (_ES_DNI, dni), (_IT_CF, codicefiscale), (_FR_NIR, nir)):
        for m in pattern.finditer(text):
            if module.is_valid(m.group(0)):
                yield Finding(m.start(), m.end(), "pii:national_id")


def _emails(text: str) -> Iterator[Finding]:
    from email_validator import EmailNotValidError, validate_email

    for m in _EMAIL.finditer(text):
        address = m.group(0)
        domain = address.rsplit("@", 1)[1]
        if _EXAMPLE_DOMAIN.search(domain):
            continue
        try:
            validate_email(address, check_deliverability=False, allow_smtputf8=False)
        except EmailNotValidError:
            continue
        yield Finding(m.start(), m.end(), "pii:email")


_PHONE_WINDOW = re.compile(r"(?<![\w+])\+?\(?\d[\d \t().\-/]{7,22}\d(?!\w)")


def _phones(text: str) -> Iterator[Finding]:
    import phonenumbers

    # The matcher only where a run of ten digits or more could be a number: over a whole long
    # document it costs seconds, over these windows milliseconds.
    for window in _PHONE_WINDOW.finditer(text):
        if len(re.sub(r"\D", "", window.group(0))) < 10:
            continue
        # with some text either side: the matcher rejects a number that runs into letters
        offset = max(0, window.start() - 24)
        part = text[offset : window.end() + 24]
        for match in phonenumbers.PhoneNumberMatcher(part, "US", leniency=phonenumbers.Leniency.VALID):
            raw = match.raw_string
            digits = re.sub(r"\D", "", raw)
            # written as a phone number: an international "+", or grouped with separators
            if len(digits) < 10 or not (raw.startswith("+") or re.search(r"\d[ .\-)(]+\d", raw)):
                continue
            if re.fullmatch(r"\d{4}[-.]\d{2}[-.]\d{2}.*", raw) or re.search(r"\d+\.\d+\.\d+", raw):
                continue  # a date or a version, not a number to call
            yield Finding(offset + match.start, offset + match.end, "pii:phone")


# ------------------------------------------------------------------ the step


def findings(text: str) -> list[Finding]:
    """Every finding, overlaps resolved: the earliest, then the longest, wins."""
    if not text:
        return []
    found = [*_secrets(text), *_cards(text), *_ibans(text), *_national_ids(text), *_emails(text), *_phones(text)]
    return _resolved(text, found)


def _resolved(text: str, found: list[Finding]) -> list[Finding]:
    # a placeholder already in the text is never redacted again
    kept = [f for f in found if not any(p.start() <= f.start < p.end() for p in PLACEHOLDER.finditer(text))]
    kept.sort(key=lambda f: (f.start, -(f.end - f.start), not f.kind.startswith("secret:")))
    out: list[Finding] = []
    for f in kept:
        if out and f.start < out[-1].end:
            continue
        out.append(f)
    return out


def redact(text: str) -> Redaction:
    """The text with typed placeholders for every secret and personal datum, and counts by kind."""
    return _apply(text, findings(text))


def redact_together(texts: Sequence[str]) -> list[Redaction]:
    """The texts of one write (a label and its definition, a file's fields): a value found in one
    is redacted wherever it appears in the others too — a password named in the definition and
    repeated bare in the label has no keyword beside it there. A private key's body lines count
    and a connection string's password count as values on their own."""
    spans = [findings(t) for t in texts]
    known: dict[str, str] = {}
    for text, found in zip(texts, spans, strict=True):
        for f in found:
            value = text[f.start : f.end]
            if f.kind == "secret:private_key":
                lines = [line.strip() for line in value.splitlines()]
            elif f.kind == "secret:connection_credentials":
                lines = [value, value.partition(":")[2]]  # the password alone, too
            else:
                lines = [value]
            known.update({v: f.kind for v in lines if len(v) >= 6 and not v.startswith("-----")})
    if not known:
        return [Redaction(t) for t in texts]
    pattern = re.compile("|".join(re.escape(v) for v in sorted(known, key=len, reverse=True)))
    out = []
    for text, found in zip(texts, spans, strict=True):
        repeated = [Finding(m.start(), m.end(), known[m.group(0)]) for m in pattern.finditer(text)]
        out.append(_apply(text, _resolved(text, found + repeated)))
    return out


def _apply(text: str, spans: list[Finding]) -> Redaction:
    if not spans:
        return Redaction(text)
    parts: list[str] = []
    at = 0
    for f in spans:
        parts.append(text[at : f.start])
        parts.append(f.placeholder)
        at = f.end
    parts.append(text[at:])
    return Redaction("".join(parts), dict(sorted(Counter(f.kind for f in spans).items())))


def merge_counts(*counts: dict[str, int]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for c in counts:
        total.update(c)
    return dict(sorted(total.items()))


def clean_label(label: str) -> str | None:
    """A memory label without placeholders (a memory is never labelled with one); None when
    nothing worth a label is left."""
    cleaned = re.sub(r"\s+", " ", PLACEHOLDER.sub(" ", label)).strip(" -:,;()[]")
    if re.search(r"\b(?:secret|pii):", cleaned, re.IGNORECASE) or len(re.sub(r"\W", "", cleaned)) < 3:
        return None
    return cleaned
