"""schemathesis hooks for tests/e2e/test_schemathesis.py: the failures that are not the API's, each
dropped by its exact shape — never a whole check or a whole operation.

- Rules no JSON Schema can state (they depend on the server's clock, the caller's identity, or a
  label's Unicode letters after NFKC): a schema-valid request may be refused with a 400, but only
  with the stable code that rule answers with, on the operation that has it.
- A form-exploded array of strings in the query (``?tag=a&tag=b``) takes any single value on the
  wire: schemathesis counts "a number instead of the array" as invalid, but ``?tag=-37.0`` is the
  same request as the one-item array ``["-37.0"]``. Such a case is dropped only when every
  negative part of it reads as valid once sent.
"""

from __future__ import annotations

import json
import os
from typing import Any

import schemathesis

# (method, path) → the stable codes of the rules there that no schema can state
UNSTATABLE = {
    # a label with no word character once NFKC-folded, or a label and definition that are only secrets
    ("POST", "/memories"): {"bad_request"},
    # a turn's occurred_at outside [now - 3650 days, now + the allowed clock skew]
    ("POST", "/sessions/{session_id}/messages"): {"occurred_at_out_of_range"},
    # `confirm` must repeat the caller's own tenant id
    ("POST", "/erasure/tenant"): {"bad_request"},
}


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    why = None
    if failure.code == "ST202" and _an_unstatable_rule(case, response):
        why = f"rule no schema states: {json.loads(response.content)['error']['code']}"
    elif failure.code == "ST201" and _a_list_sent_as_one_item(case):
        why = "a scalar for a list of strings (the same request on the wire)"
    if why and (log := os.environ.get("CONTEXTOS_SCHEMATHESIS_DROPPED")):
        with open(log, "a", encoding="utf-8") as out:
            out.write(json.dumps({"operation": f"{case.operation.method.upper()} {case.operation.path}", "why": why}))
            out.write("\n")
    return why is None


def _an_unstatable_rule(case: Any, response: Any) -> bool:
    codes = UNSTATABLE.get((case.operation.method.upper(), case.operation.path), set())
    if response.status_code != 400 or not codes:
        return False
    try:
        return json.loads(response.content)["error"]["code"] in codes
    except (ValueError, KeyError, TypeError):
        return False


def _a_list_sent_as_one_item(case: Any) -> bool:
    meta = case.meta
    if meta is None or not isinstance(case.query, dict):
        return False
    negative = {location.name for location, part in meta.components.items() if part.mode.is_negative}
    if negative != {"QUERY"}:
        return False
    for name, value in case.query.items():
        parameter = case.operation.query.get(name)
        if parameter is None:  # an undeclared parameter: a real negative
            return False
        items = value if isinstance(value, list) else [value]
        if any(isinstance(item, list | dict) for item in items):
            return False
        validator = parameter.get_validator()
        as_sent = [item if isinstance(item, str) else str(item) for item in items]
        if not (
            validator.is_valid(value) or (_declares_array(parameter.validation_schema) and validator.is_valid(as_sent))
        ):
            return False
    return True


def _declares_array(schema: dict[str, Any]) -> bool:
    return any(option.get("type") == "array" for option in schema.get("anyOf", [schema]))
