"""Synthetic, valid-looking secrets and personal data for the privacy benchmark and the tests.

Deterministic (one seed): every value passes its format's checks (Luhn for cards, mod-97 for
IBANs, the SSN and DNI rules, a JWT whose header and payload are JSON, phone numbers that
``phonenumbers`` calls valid), and none is real. ``planted(n, seed)`` yields (kind, value,
sentence) triples: the sentence is how the value is said in a document, a turn or a config file.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import quote

ALNUM = string.ascii_letters + string.digits
FIRST = ["ana", "bruno", "chen", "dara", "emeka", "farah", "goran", "hana", "ivo", "jules", "kemal", "lena"]
LAST = ["silva", "okafor", "novak", "tanaka", "moreau", "haddad", "lindqvist", "costa", "ferreira", "ivanova"]
DOMAINS = ["northwind.dev", "acme-logistics.io", "bluepeak.co.uk", "quillworks.net", "fabrikam.de", "contoso.fr"]
HOSTS = ["db.internal.northwind.dev", "pg-prod-2.acme-logistics.io", "mysql.bluepeak.co.uk"]


@dataclass(frozen=True)
class Planted:
    kind: str  # the kind the redactor should find: "secret:github_token", "pii:iban"
    value: str  # the needle searched verbatim afterwards
    sentence: str  # how it is said


def _s(r: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def _luhn_complete(r: random.Random, prefix: str, length: int) -> str:
    from stdnum import luhn

    body = prefix + _s(r, length - len(prefix) - 1, string.digits)
    return body + luhn.calc_check_digit(body)


def _iban(r: random.Random) -> str:
    from stdnum import iban

    country, bban = r.choice(
        [
            ("DE", lambda: _s(r, 18, string.digits)),
            ("GB", lambda: _s(r, 4, string.ascii_uppercase) + _s(r, 14, string.digits)),
            ("NL", lambda: _s(r, 4, string.ascii_uppercase) + _s(r, 10, string.digits)),
            ("AT", lambda: _s(r, 16, string.digits)),
            ("IE", lambda: _s(r, 4, string.ascii_uppercase) + _s(r, 14, string.digits)),
        ]
    )
    while True:  # a few countries check their account numbers too: draw until valid
        b = bban()
        number = country + iban.calc_check_digits(country + "00" + b) + b
        if iban.is_valid(number):
            break
    return number if r.random() < 0.5 else " ".join(number[i : i + 4] for i in range(0, len(number), 4))


def _phone(r: random.Random) -> str:
    import phonenumbers

    while True:
        region, code = r.choice([("US", 1), ("GB", 44), ("DE", 49), ("FR", 33)])
        if region == "US":
            national = f"{r.randint(201, 989)}{r.randint(200, 989)}{r.randint(0, 9999):04d}"
        elif region == "GB":
            national = f"7{r.randint(400, 999)}{r.randint(100000, 999999)}"
        elif region == "DE":
            national = f"15{r.randint(1, 9)}{r.randint(10000000, 99999999)}"
        else:
            national = f"6{r.randint(10000000, 99999999)}"
        number = phonenumbers.parse(f"+{code}{national}")
        if phonenumbers.is_valid_number(number):
            style = (
                phonenumbers.PhoneNumberFormat.NATIONAL
                if region == "US" and r.random() < 0.5
                else phonenumbers.PhoneNumberFormat.INTERNATIONAL
            )
            return phonenumbers.format_number(number, style)


def _ssn(r: random.Random) -> str:
    from stdnum.us import ssn

    while True:
        value = f"{r.randint(1, 899):03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"
        if ssn.is_valid(value):
            return value


def _dni(r: random.Random) -> str:
    from stdnum.es import dni

    digits = _s(r, 8, string.digits)
    return digits + dni.calc_check_digit(digits)


def _jwt(r: random.Random) -> str:
    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64(
        json.dumps(
            {"sub": _s(r, 10, string.digits), "name": r.choice(FIRST), "iat": 1700000000 + r.randint(0, 10**7)}
        ).encode()
    )
    return f"{header}.{payload}.{_s(r, 43, ALNUM + '-_')}"


def _password(r: random.Random) -> str:
    return (
        _s(r, 3, string.ascii_uppercase)
        + _s(r, 4, string.ascii_lowercase)
        + _s(r, 3, string.digits)
        + r.choice("!#%&*@")
        + _s(r, 2, ALNUM)
    )


def _private_key(r: random.Random) -> tuple[str, str]:
    body = [_s(r, 64, ALNUM + "+/") for _ in range(6)]
    block = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----"
    return block, body[1]  # the needle: a line of the key's body


def _email(r: random.Random) -> str:
    return f"{r.choice(FIRST)}.{r.choice(LAST)}{r.randint(1, 99)}@{r.choice(DOMAINS)}"


def _name(r: random.Random) -> str:
    return f"{r.choice(FIRST).title()} {r.choice(LAST).title()}"


# kind → a maker of (value, sentence)
def _makers(r: random.Random) -> dict[str, Callable[[], tuple[str, str]]]:
    def aws_key() -> tuple[str, str]:
        v = "AKIA" + _s(r, 16, string.ascii_uppercase + "234567")
        return v, f"The release bot signs in with the AWS access key {v}."

    def aws_secret() -> tuple[str, str]:
        v = _s(r, 40, ALNUM + "/+")
        return v, f'aws_secret_access_key = "{v}"'

    def github() -> tuple[str, str]:
        v = "ghp_" + _s(r, 36)
        return v, f"CI pushes tags with the GitHub token {v} from the deploy account."

    def gitlab() -> tuple[str, str]:
        v = "glpat-" + _s(r, 20, ALNUM + "_-")
        return v, f"Mirror jobs use GITLAB_TOKEN={v} for the read-only mirror."

    def slack() -> tuple[str, str]:
        v = f"xoxb-{_s(r, 12, string.digits)}-{_s(r, 13, string.digits)}-{_s(r, 24)}"
        return v, f"The alerts bot posts to #ops with {v}."

    def stripe() -> tuple[str, str]:
        v = "sk_live_" + _s(r, 24)
        return v, f"Billing charges cards through Stripe with key {v}."

    def openai() -> tuple[str, str]:
        v = "sk-" + _s(r, 20) + "T3BlbkFJ" + _s(r, 20)
        return v, f"The summariser calls the model API with {v} as its key."

    def sendgrid() -> tuple[str, str]:
        v = f"SG.{_s(r, 22, ALNUM + '_-')}.{_s(r, 43, ALNUM + '_-')}"
        return v, f"Password-reset mail goes out through SendGrid using {v}."

    def twilio() -> tuple[str, str]:
        v = "SK" + _s(r, 32, "0123456789abcdef")
        return v, f"SMS codes are sent with the Twilio API key {v}."

    def private_key() -> tuple[str, str]:
        block, needle = _private_key(r)
        return needle, f"The deploy host's key is below.\n{block}\n"

    def jwt() -> tuple[str, str]:
        v = _jwt(r)
        return v, f"A sample session token from staging: {v}"

    def password_prose() -> tuple[str, str]:
        v = _password(r)
        return v, f"The password for the staging admin console is {v} until the rotation on Friday."

    def password_config() -> tuple[str, str]:
        v = _password(r)
        return v, r.choice([f'DB_PASSWORD="{v}"', f"password: {v}", f"smtp_password = '{v}'"])

    def connection() -> tuple[str, str]:
        v = quote(_password(r), safe="")  # as a URL carries it
        user = r.choice(["app", "reporting", "svc_etl"])
        return v, f"DATABASE_URL=postgresql://{user}:{v}@{r.choice(HOSTS)}:5432/orders"

    def card() -> tuple[str, str]:
        v = _luhn_complete(r, r.choice(["4", "51", "55", "2221"]), 16)
        v = " ".join(v[i : i + 4] for i in range(0, 16, 4)) if r.random() < 0.5 else v
        return v, f"The team's travel card is {v}, kept by finance."

    def iban() -> tuple[str, str]:
        v = _iban(r)
        return v, f"Supplier refunds go to IBAN {v}."

    def email() -> tuple[str, str]:
        v = _email(r)
        return v, f"Escalations go to {_name(r)} at {v}."

    def phone() -> tuple[str, str]:
        v = _phone(r)
        return v, f"The on-call phone is {v} during the weekend."

    def national_id() -> tuple[str, str]:
        if r.random() < 0.5:
            v = _ssn(r)
            return v, f"Payroll has the contractor's SSN {v} on file."
        v = _dni(r)
        return v, f"The Madrid office registered her with DNI {v}."

    return {
        "secret:aws_access_key": aws_key,
        "secret:aws_secret_key": aws_secret,
        "secret:github_token": github,
        "secret:gitlab_token": gitlab,
        "secret:slack_token": slack,
        "secret:stripe_key": stripe,
        "secret:openai_key": openai,
        "secret:sendgrid_key": sendgrid,
        "secret:twilio_key": twilio,
        "secret:private_key": private_key,
        "secret:jwt": jwt,
        "secret:password_prose": password_prose,
        "secret:password_config": password_config,
        "secret:connection_string": connection,
        "pii:card": card,
        "pii:iban": iban,
        "pii:email": email,
        "pii:phone": phone,
        "pii:national_id": national_id,
    }


KINDS = tuple(_makers(random.Random(0)))


def planted(n: int, seed: int = 20261202) -> Iterator[Planted]:
    """``n`` values, the kinds in turn (so every kind has n / len(KINDS) of them)."""
    r = random.Random(seed)
    makers = _makers(r)
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        value, sentence = makers[kind]()
        yield Planted(kind, value, sentence)
