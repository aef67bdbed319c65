"""The project's pydantic base model: validators and serializers are built at first use.

A Lambda function imports every model its routes name, but one invocation validates only a
few of them; building each schema at class creation is most of the import time those
modules cost (the cold start). ``defer_build`` builds a model's schema the first time it
validates, serializes or emits a JSON schema; behaviour is otherwise the same. A model's own
``model_config`` merges with this one.
"""

from __future__ import annotations

from pydantic import BaseModel as _PydanticModel
from pydantic import BeforeValidator, ConfigDict


class BaseModel(_PydanticModel):
    model_config = ConfigDict(defer_build=True)


# What ``base64.b64decode(text, validate=True)`` accepts, as a JSON Schema pattern: request models
# declare it so a client (and the OpenAPI document's fuzzing) knows the form before sending.
BASE64_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
# A text the server reads as non-empty holds a byte other than ASCII whitespace (``bytes.strip``).
NOT_BLANK_PATTERN = r"[^\t\n\x0b\x0c\r ]"
# ... and a string holds a character ``str.strip`` keeps (Python's whitespace, spelled out: JSON
# Schema's ``\s`` differs from it by U+001C-U+001F, U+0085 and U+FEFF).
NOT_SPACES_PATTERN = r"[^\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


def _json_integer(value: object) -> object:
    """JSON's integers: 3 and 3.0 are one number to JSON Schema; true, false and "3" are no number
    (pydantic's lax mode would read them as 1, 0 and 3, accepting what the client did not say)."""
    if isinstance(value, bool | str):
        raise ValueError("expected a JSON integer, not a boolean or a string")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# A request's integer field: a JSON number with no fraction, nothing else. Put it after the field's
# constraints (``Annotated[int, Field(ge=1), JSON_INTEGER]``) so the schema keeps them. Booleans take
# StrictBool; numbers StrictFloat, which accepts integers and refuses booleans and strings.
JSON_INTEGER = BeforeValidator(_json_integer)
