"""The redaction step (S7 "What never gets in"): every planted kind is found and replaced by its
typed placeholder; the benign shapes of ordinary documents are left alone."""

import pytest
from contextos.redaction import clean_label, findings, redact

from benchmarks.privacy_fixtures import KINDS, planted

# what the fixture kind is redacted as
EXPECTED = {
    "secret:password_prose": "secret:password",
    "secret:password_config": "secret:password",
    "secret:connection_string": "secret:connection_credentials",
}


@pytest.mark.parametrize("kind", KINDS)
def test_each_planted_kind_is_found_and_never_survives(kind):
    values = [p for p in planted(len(KINDS) * 8) if p.kind == kind]
    assert len(values) == 8
    for p in values:
        result = redact(p.sentence)
        assert p.value.lower() not in result.text.lower(), p.sentence
        assert EXPECTED.get(kind, kind) in result.counts, (p.sentence, result.counts)
        assert f"[{EXPECTED.get(kind, kind)}]" in result.text


def test_the_fact_around_a_secret_stays_readable():
    result = redact("The release bot signs in with the AWS access key AKIAQWERTYUIOPASDFGH on Tuesdays.")
    assert result.text == "The release bot signs in with the AWS access key [secret:aws_access_key] on Tuesdays."
    assert result.counts == {"secret:aws_access_key": 1}


@pytest.mark.parametrize(
    "benign",
    [
        "commit 3f2a9c1d4e5b6a7f8091a2b3c4d5e6f708192a3b fixed the build",
        "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "request id 123e4567-e89b-12d3-a456-426614174000 failed",
        "upgrade to version 2.45.1 (released 2024-01-15), build 20240115.3",
        'api_key = "<your-token>"',
        "password: ${DB_PASSWORD}",
        "token: {{ vault_token }}",
        "export GITHUB_TOKEN=$GITHUB_TOKEN",
        "The password is stored in the vault and rotated monthly.",
        "password: required",
        "git fetch https://user:pass@host/repo",
        "c->password = xstrdup(value);",
        "mv: cannot remove `/etc/passwd': Not a directory",
        "write to bob@example.com or alice@mail.example.org for a sample",
        "the number 4111111111111112 fails its checksum",
        "port 5432, pid 123456789, inode 9876543210",
        "[secret:aws_access_key] and [pii:email] are placeholders already",
        "00000000  4d 49 4d 45 2d 4d 61 67  69 63 00 0a 5b 35 30 3a  |MIME-Magic..[50:|",
    ],
)
def test_benign_shapes_are_not_redacted(benign):
    assert findings(benign) == [], redact(benign).text


def test_redaction_is_idempotent_and_counts_each_value():
    text = "mail ana.silva7@northwind.dev and ana.silva7@northwind.dev, card 4111 1111 1111 1111"
    once = redact(text)
    assert once.counts == {"pii:card": 1, "pii:email": 2}
    assert redact(once.text).counts == {}


def test_a_private_key_block_is_redacted_whole():
    text = (
        "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAA\n"
        "-----END OPENSSH PRIVATE KEY-----\nafter"
    )
    assert redact(text).text == "key:\n[secret:private_key]\nafter"


def test_a_label_never_keeps_a_placeholder():
    assert clean_label("Deploy key [secret:aws_access_key]") == "Deploy key"
    assert clean_label("[pii:email]") is None
    assert clean_label("secret:github_token]") is None
    assert clean_label("Release cadence") == "Release cadence"


def test_a_password_in_html_markup_is_found_without_the_tags():
    result = redact("<p>fact</p><p>password: NXMehuu835*vY</p></body></html>")
    assert result.text == "<p>fact</p><p>password: [secret:password]</p></body></html>"


def test_a_value_found_in_one_field_is_redacted_bare_in_the_others():
    from contextos.redaction import redact_together

    label, definition = redact_together(
        ["Note Kx7mP2q!vAB and app", "DATABASE_URL=postgresql://app:Kx7mP2q!vAB@db.northwind.dev/orders"]
    )
    assert label.text == "Note [secret:connection_credentials] and app"
    assert "Kx7mP2q" not in definition.text
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7xyzQWERTY\nabc\n-----END RSA PRIVATE KEY-----"
    label, _ = redact_together(["Key line MIIEowIBAAKCAQEA7xyzQWERTY", f"deploy key:\n{key}"])
    assert label.text == "Key line [secret:private_key]"


def test_a_config_password_between_typographic_quotes_is_found():
    # what pypdf gives for a PDF's straight quotes
    assert redact("smtp_password = ’GZDlerc630!At’").text == "smtp_password = ’[secret:password]’"
