"""Lifecycle events on the running local stack: its scheduler relays every kind of decision onto the
local bus (moto's EventBridge), where a rule's queue observes each one."""

from __future__ import annotations

import time

from tests.e2e.test_local_stack import http, stack  # noqa: F401  (the module's stack fixture)
from tests.integration.test_lifecycle_events import KINDS, SCENARIO_LABELS, check_events, every_kind, observer


def test_every_lifecycle_kind_is_observed_on_the_local_bus(stack):  # noqa: F811
    received = observer(stack.aws.endpoint, "local")
    ids = every_kind(lambda method, path, body: http(stack, method, path, body), "local")
    events: list[dict] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        # the dev tenant is shared by the suite's stacks: only this scenario's memories count
        events += [e for e in received() if e["detail"]["label"] in SCENARIO_LABELS]
        if {e["detail"]["kind"] for e in events} >= KINDS:
            break
        time.sleep(0.5)
    check_events(events, "local", ids)
