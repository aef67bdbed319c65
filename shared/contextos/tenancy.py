"""What a tenant id may look like: checked at every edge that receives one (authorizer, API, keys)."""

from __future__ import annotations

import re

_TENANT_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$")


def valid_tenant(tenant_id: str) -> bool:
    return bool(_TENANT_PATTERN.match(tenant_id or ""))
