"""CloudFormation custom resource (CDK Provider onEvent): apply the schema migrations at deploy."""

from aws_lambda_powertools.utilities.data_classes import CloudFormationCustomResourceEvent, event_source
from aws_lambda_powertools.utilities.typing import LambdaContext
from contextos.observability import logger
from contextos.store.bootstrap import migrate_from_settings


@logger.inject_lambda_context
@event_source(data_class=CloudFormationCustomResourceEvent)
def lambda_handler(event: CloudFormationCustomResourceEvent, context: LambdaContext) -> dict:
    physical_id = "contextos-schema"
    if event.request_type == "Delete":
        return {"PhysicalResourceId": event.physical_resource_id or physical_id}  # data outlives the stack
    applied = migrate_from_settings()
    return {"PhysicalResourceId": physical_id, "Data": {"Applied": ",".join(map(str, applied)) or "none"}}
