"""API: a REST API in front of `functions/api`, with two doors into the same routes.

Agents authenticate with an API key checked by `functions/authorizer` (a REQUEST authorizer on
the `Authorization` header) under `/v1/{proxy+}`; people authenticate with a Cognito JWT under
the parallel `/v1/user/{proxy+}`. One method cannot carry two authorizers in API Gateway, and
one Lambda authorizer that also validated JWTs would re-implement Cognito, so two paths it is.
The api function strips either prefix (Powertools `strip_prefixes=["/v1/user", "/v1"]`) and
reads the tenant only from the authorizer context (S11).
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.nag import acknowledge

# The error shape the api function uses for its own errors (stable code, human message).
_ERROR_TEMPLATE = '{"code":"%s","message":$context.error.messageString}'


class Api(Construct):
    """REST API, both authorizers, the user pool, throttling, access logs and tracing."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handler: lambda_.IFunction,
        authorizer: lambda_.IFunction,
        rate_limit: int,
        burst_limit: int,
        log_retention: logs.RetentionDays,
    ):
        super().__init__(scope, construct_id)
        self.user_pool = cognito.UserPool(
            self,
            "Users",
            self_sign_up_enabled=False,  # people are invited into a tenant, not self-registered
            sign_in_aliases=cognito.SignInAliases(email=True),
            standard_attributes=cognito.StandardAttributes(
                email=cognito.StandardAttribute(required=True, mutable=True)
            ),
            custom_attributes={"tenant_id": cognito.StringAttribute(min_len=1, max_len=64, mutable=False)},
            password_policy=cognito.PasswordPolicy(
                min_length=12,
                require_lowercase=True,
                require_uppercase=True,
                require_digits=True,
                require_symbols=True,
                temp_password_validity=Duration.days(3),
            ),
            mfa=cognito.Mfa.REQUIRED,
            mfa_second_factor=cognito.MfaSecondFactor(sms=False, otp=True),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            feature_plan=cognito.FeaturePlan.PLUS,
            standard_threat_protection_mode=cognito.StandardThreatProtectionMode.FULL_FUNCTION,
            deletion_protection=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.user_pool_client = self.user_pool.add_client(
            "WebClient",
            auth_flows=cognito.AuthFlow(user_srp=True),
            generate_secret=False,
            prevent_user_existence_errors=True,
            access_token_validity=Duration.hours(1),
            id_token_validity=Duration.hours(1),
            refresh_token_validity=Duration.days(30),
        )

        access_logs = logs.LogGroup(self, "AccessLogs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY)
        self.rest_api = apigw.RestApi(
            self,
            "RestApi",
            rest_api_name="contextos",
            description="ContextOS memory API",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            cloud_watch_role=True,  # execution logging needs the account-level CloudWatch role
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN,
            deploy_options=apigw.StageOptions(
                stage_name="prod",
                tracing_enabled=True,
                metrics_enabled=True,
                logging_level=apigw.MethodLoggingLevel.INFO,
                data_trace_enabled=False,  # bodies carry user content: never log them
                throttling_rate_limit=rate_limit,
                throttling_burst_limit=burst_limit,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=False,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
            ),
        )
        for response_type, status, code in (
            (apigw.ResponseType.UNAUTHORIZED, "401", "unauthorized"),
            (apigw.ResponseType.ACCESS_DENIED, "403", "forbidden"),
            (apigw.ResponseType.THROTTLED, "429", "throttled"),
            (apigw.ResponseType.DEFAULT_4_XX, None, "bad_request"),
            (apigw.ResponseType.DEFAULT_5_XX, None, "gateway_error"),
        ):
            self.rest_api.add_gateway_response(
                f"{code.title().replace('_', '')}Response",
                type=response_type,
                status_code=status,
                templates={"application/json": _ERROR_TEMPLATE % code},
            )

        self.api_key_authorizer = apigw.RequestAuthorizer(
            self,
            "ApiKeyAuthorizer",
            handler=authorizer,
            identity_sources=[apigw.IdentitySource.header("Authorization")],
            # Cached per Authorization header: the policy it returns must cover every route.
            results_cache_ttl=Duration.minutes(5),
        )
        self.user_authorizer = apigw.CognitoUserPoolsAuthorizer(
            self, "UserAuthorizer", cognito_user_pools=[self.user_pool]
        )

        integration = apigw.LambdaIntegration(handler, proxy=True)
        v1 = self.rest_api.root.add_resource("v1")
        agent_proxy = v1.add_resource("{proxy+}")
        agent_method = agent_proxy.add_method(
            "ANY",
            integration,
            authorization_type=apigw.AuthorizationType.CUSTOM,
            authorizer=self.api_key_authorizer,
        )
        user_proxy = v1.add_resource("user").add_resource("{proxy+}")
        user_proxy.add_method(
            "ANY",
            integration,
            authorization_type=apigw.AuthorizationType.COGNITO,
            authorizer=self.user_authorizer,
        )

        acknowledge(
            agent_method,
            "COG4",
            "Agents call /v1/{proxy+} with hashed API keys checked by the Lambda authorizer; people "
            "use the Cognito-authorized /v1/user/{proxy+}.",
        )
        acknowledge(
            self.rest_api,
            "APIG2",
            "Requests are validated by the api function's Powertools resolver against pydantic "
            "models (422 with field details); a proxy resource has no model for API Gateway to check.",
        )
        acknowledge(
            self.rest_api,
            "APIG3",
            "No WAF web ACL yet: every route needs an authorizer, the stage is throttled, and WAF "
            "rules belong to the account's edge policy rather than to this app.",
        )
        cw_role = self.rest_api.node.try_find_child("CloudWatchRole")
        if cw_role is not None:
            acknowledge(
                cw_role,
                "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]",
                "API Gateway's account-level logging role; this AWS policy is the documented way to "
                "let API Gateway write execution logs.",
            )
