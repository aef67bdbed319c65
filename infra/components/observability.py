"""Observability: alarms that page on lost work (DLQ depth) and broken functions, plus a dashboard.

Alarms publish to one encrypted SNS topic; whoever operates the stack subscribes to it.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

FIVE_MINUTES = Duration.minutes(5)


class Observability(Construct):
    """DLQ, error and throttle alarms for every queue and function; one dashboard."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        key: kms.Key,
        functions: dict[str, lambda_.IFunction],
        queues: dict[str, tuple[sqs.IQueue, sqs.IQueue]],
        rest_api: apigw.RestApi,
    ):
        super().__init__(scope, construct_id)
        # CloudWatch must be able to use the key to publish to the encrypted topic.
        key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey"],
                resources=["*"],
            )
        )
        self.topic = sns.Topic(self, "Alarms", display_name="ContextOS alarms", master_key=key, enforce_ssl=True)
        action = actions.SnsAction(self.topic)
        self.alarms: list[cloudwatch.Alarm] = []

        for name, (_queue, dlq) in queues.items():
            self._alarm(
                f"{name}DlqDepth",
                dlq.metric_approximate_number_of_messages_visible(period=FIVE_MINUTES, statistic="Maximum"),
                f"Messages in the {name} dead-letter queue: work failed three times and needs a look.",
                action,
            )
        for name, function in functions.items():
            title = name.capitalize()
            self._alarm(
                f"{title}Errors",
                function.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
                f"The {name} function raised errors.",
                action,
            )
            self._alarm(
                f"{title}Throttles",
                function.metric_throttles(period=FIVE_MINUTES, statistic="Sum"),
                f"The {name} function was throttled.",
                action,
            )

        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.hours(12))
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="API requests and errors",
                left=[rest_api.metric_count(period=FIVE_MINUTES)],
                right=[
                    rest_api.metric_client_error(period=FIVE_MINUTES),
                    rest_api.metric_server_error(period=FIVE_MINUTES),
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="API latency (p50, p95)",
                left=[
                    rest_api.metric_latency(period=FIVE_MINUTES, statistic="p50"),
                    rest_api.metric_latency(period=FIVE_MINUTES, statistic="p95"),
                ],
                width=12,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Queue backlog",
                left=[q.metric_approximate_number_of_messages_visible(period=FIVE_MINUTES) for q, _ in queues.values()],
                right=[
                    d.metric_approximate_number_of_messages_visible(period=FIVE_MINUTES) for _, d in queues.values()
                ],
                width=12,
            ),
            cloudwatch.GraphWidget(
                title="Oldest message age",
                left=[q.metric_approximate_age_of_oldest_message(period=FIVE_MINUTES) for q, _ in queues.values()],
                width=12,
            ),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title="Function errors",
                left=[f.metric_errors(period=FIVE_MINUTES, label=n) for n, f in functions.items()],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Function duration p95",
                left=[f.metric_duration(period=FIVE_MINUTES, statistic="p95", label=n) for n, f in functions.items()],
                width=8,
            ),
            cloudwatch.GraphWidget(
                title="Function throttles",
                left=[f.metric_throttles(period=FIVE_MINUTES, label=n) for n, f in functions.items()],
                width=8,
            ),
        )

    def _alarm(self, construct_id: str, metric: cloudwatch.Metric, description: str, action: actions.SnsAction) -> None:
        """Alarm as soon as one datapoint is at or above 1; missing data means all is well."""
        alarm = metric.create_alarm(
            self,
            construct_id,
            alarm_description=description,
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(action)
        self.alarms.append(alarm)
