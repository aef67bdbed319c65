"""The project's pydantic base model: validators and serializers are built at first use.

A Lambda function imports every model its routes name, but one invocation validates only a
few of them; building each schema at class creation is most of the import time those
modules cost (the cold start). ``defer_build`` builds a model's schema the first time it
validates, serializes or emits a JSON schema; behaviour is otherwise the same. A model's own
``model_config`` merges with this one.
"""

from __future__ import annotations

from pydantic import BaseModel as _PydanticModel
from pydantic import ConfigDict


class BaseModel(_PydanticModel):
    model_config = ConfigDict(defer_build=True)
