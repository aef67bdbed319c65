"""Lifecycle events (S11): the bus memory decisions are published on, and a sample rule.

The relay function (every minute, infra/components/schedules.py) reads the audit log as its outbox
and puts events here; consumers add their own rules. The sample rule sends supersessions and held
candidates to a queue (encrypted, TLS only, with a DLQ), the shape a reviewer's tool would poll."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.components.queues import WorkQueue

BUS_NAME = "contextos-memory-events"
EVENT_SOURCE = "contextos"  # contextos.lifecycle_events.EVENT_SOURCE
SAMPLE_DETAIL_TYPES = ["Memory Superseded", "Memory Held For Review"]


class LifecycleEvents(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, key: kms.IKey):
        super().__init__(scope, construct_id)
        self.bus = events.EventBus(self, "Bus", event_bus_name=BUS_NAME)
        self.sample = WorkQueue(self, "SampleQueue", key=key, visibility_timeout=Duration.seconds(30))
        self.sample_rule = events.Rule(
            self,
            "SupersededAndHeld",
            description="Sample: memory supersessions and held candidates, to a queue",
            event_bus=self.bus,
            event_pattern=events.EventPattern(source=[EVENT_SOURCE], detail_type=SAMPLE_DETAIL_TYPES),
            targets=[targets.SqsQueue(self.sample.queue)],
        )
