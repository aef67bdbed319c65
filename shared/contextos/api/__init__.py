"""The HTTP API (S11): one Powertools resolver, one router per resource, one error shape."""

from contextos.api.deferred import defer_package_init

# Before any Powertools event-handler import: only the resolver, the event and the OpenAPI parts
# the API uses are imported, not every resolver and event class these packages re-export.
for _package in (
    "aws_lambda_powertools.event_handler",
    "aws_lambda_powertools.event_handler.openapi",
    "aws_lambda_powertools.utilities.data_classes",
):
    defer_package_init(_package)
