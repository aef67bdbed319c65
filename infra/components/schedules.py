"""Schedules: the EventBridge rules that drive lifecycle, session sweeping and governance.

Each handler is safe to run twice (STYLE 3), so EventBridge retries are allowed.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

SCHEDULES: tuple[tuple[str, str, Duration, str], ...] = (
    ("Lifecycle", "lifecycle", Duration.hours(4), "Lifecycle scan: decay, reminders, cold storage (S5)"),
    ("SessionSweeper", "sweeper", Duration.minutes(5), "Flush idle conversation sessions (S8)"),
    ("Governance", "governance", Duration.days(1), "Daily governance report (S9)"),
    ("LifecycleEvents", "events", Duration.minutes(1), "Relay new memory decisions onto the event bus (S11)"),
)


class Schedules(Construct):
    """One rule per scheduled function."""

    def __init__(self, scope: Construct, construct_id: str, *, functions: dict[str, lambda_.IFunction]):
        super().__init__(scope, construct_id)
        self.rules: dict[str, events.Rule] = {}
        for rule_id, function_name, every, description in SCHEDULES:
            self.rules[function_name] = events.Rule(
                self,
                rule_id,
                description=description,
                schedule=events.Schedule.rate(every),
                targets=[
                    targets.LambdaFunction(
                        functions[function_name],
                        retry_attempts=2,
                        max_event_age=Duration.hours(1),
                    )
                ],
            )
