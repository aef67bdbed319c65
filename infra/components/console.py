"""Console: the built web console in a private bucket, served by CloudFront with the API beside it.

One distribution, two behaviours: `/v1/*` goes to the REST API's stage uncached with every viewer
header but Host, everything else to the console's bucket through Origin Access Control. The
console and the API therefore share one origin, so the API needs no CORS and the CSP allows
`connect-src 'self'` only. The console reads the API's base URL from `config.json`, which the
deployment writes beside `index.html`, so one build serves every stage.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct, IConstruct

from infra.components.buckets import private_bucket
from infra.config import InfraConfigError
from infra.nag import acknowledge

# The key prefix matches the build's base (`vite.config.ts`) and the local stack's `/console`.
CONSOLE_PREFIX = "console"
CONFIG_FILE = "config.json"
API_PATH = "/v1/*"

# Everything the console loads comes from its own origin; the API is on that origin (`/v1/*`).
# No 'unsafe-inline': the console sets styles through the CSSOM, which style-src does not govern.
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        # ForceAtlas2 runs in a worker its library starts from a blob: URL
        "worker-src blob:",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)

# Hash routes need no rewrite, but a deep link or a reload of `/console` or `/console/x` must still
# get the app. A viewer-request function, not distribution error responses: those would also turn
# the API's own 403/404 answers into index.html.
_SPA_FALLBACK = f"""
function handler(event) {{
  var request = event.request;
  var last = request.uri.split('/').pop();
  if (last.indexOf('.') === -1) {{
    request.uri = '/{CONSOLE_PREFIX}/index.html';
  }}
  return request;
}}
"""


def check_console_build(dist: Path) -> None:
    """Stop synthesis with the fix when the console was not built (its assets are deployed)."""
    if not (dist / "index.html").is_file():
        raise InfraConfigError(
            f"the console is not built: {dist / 'index.html'} does not exist. "
            "Run `make console` first (make synth does), or pass -c console_dir=<dir>."
        )


class Console(Construct):
    """Bucket, edge log bucket, distribution (console + API behaviours) and the asset deployment."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        dist: Path,
        rest_api: apigw.RestApi,
        access_logs: s3.IBucket,
        log_retention: logs.RetentionDays,
    ):
        super().__init__(scope, construct_id)
        check_console_build(dist)

        # Public web assets: S3-managed keys, because OAC reads need no extra KMS key policy.
        self.bucket = private_bucket(
            self,
            "Assets",
            access_logs=access_logs,
            log_prefix="console",
            versioned=True,
            lifecycle_rules=[s3.LifecycleRule(id="expire-old-builds", noncurrent_version_expiration=Duration.days(30))],
        )
        # CloudFront standard logs are delivered with an ACL grant, so this bucket keeps ACLs on
        # (object writer) where every other bucket enforces bucket-owner ownership.
        self.edge_logs = private_bucket(
            self,
            "EdgeLogs",
            access_logs=access_logs,
            log_prefix="edge-logs",
            lifecycle_rules=[s3.LifecycleRule(id="expire-edge-logs", expiration=Duration.days(365))],
            object_ownership=s3.ObjectOwnership.OBJECT_WRITER,
        )

        self.headers = cloudfront.ResponseHeadersPolicy(
            self,
            "SecurityHeaders",
            comment="ContextOS console: CSP (same-origin API), HSTS, frame deny, nosniff",
            security_headers_behavior=cloudfront.ResponseSecurityHeadersBehavior(
                content_security_policy=cloudfront.ResponseHeadersContentSecurityPolicy(
                    content_security_policy=CONTENT_SECURITY_POLICY, override=True
                ),
                strict_transport_security=cloudfront.ResponseHeadersStrictTransportSecurity(
                    access_control_max_age=Duration.days(365), include_subdomains=True, override=True
                ),
                frame_options=cloudfront.ResponseHeadersFrameOptions(
                    frame_option=cloudfront.HeadersFrameOption.DENY, override=True
                ),
                content_type_options=cloudfront.ResponseHeadersContentTypeOptions(override=True),
                referrer_policy=cloudfront.ResponseHeadersReferrerPolicy(
                    referrer_policy=cloudfront.HeadersReferrerPolicy.NO_REFERRER, override=True
                ),
            ),
        )
        fallback = cloudfront.Function(
            self,
            "SpaFallback",
            comment="Serve the console's index.html for paths that name no file",
            code=cloudfront.FunctionCode.from_inline(_SPA_FALLBACK),
            runtime=cloudfront.FunctionRuntime.JS_2_0,
        )

        self.distribution = cloudfront.Distribution(
            self,
            "Distribution",
            comment="ContextOS console and API",
            default_root_object=f"{CONSOLE_PREFIX}/index.html",
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
            price_class=cloudfront.PriceClass.PRICE_CLASS_100,
            enable_logging=True,
            log_bucket=self.edge_logs,
            log_file_prefix="cloudfront/",
            default_behavior=cloudfront.BehaviorOptions(
                origin=origins.S3BucketOrigin.with_origin_access_control(self.bucket),
                viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
                allowed_methods=cloudfront.AllowedMethods.ALLOW_GET_HEAD,
                cache_policy=cloudfront.CachePolicy.CACHING_OPTIMIZED,
                response_headers_policy=self.headers,
                compress=True,
                function_associations=[
                    cloudfront.FunctionAssociation(
                        function=fallback, event_type=cloudfront.FunctionEventType.VIEWER_REQUEST
                    )
                ],
            ),
            additional_behaviors={
                API_PATH: cloudfront.BehaviorOptions(
                    origin=origins.RestApiOrigin(rest_api),
                    # HTTPS only, no redirect: a redirected POST would lose its body.
                    viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
                    allowed_methods=cloudfront.AllowedMethods.ALLOW_ALL,
                    # Never cached: every answer is per key. With caching disabled, this managed
                    # policy forwards Authorization too; Host must stay the API's own.
                    cache_policy=cloudfront.CachePolicy.CACHING_DISABLED,
                    origin_request_policy=cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
                    response_headers_policy=self.headers,
                    compress=True,
                )
            },
        )
        self.url = f"https://{self.distribution.distribution_domain_name}"

        # Hashed assets are immutable; index.html and config.json must be re-read after a deploy.
        deploy_logs = logs.LogGroup(self, "DeployLogs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY)
        assets = dist / "assets"
        if assets.is_dir():
            s3deploy.BucketDeployment(
                self,
                "DeployAssets",
                destination_bucket=self.bucket,
                destination_key_prefix=f"{CONSOLE_PREFIX}/assets/",
                sources=[s3deploy.Source.asset(str(assets))],
                cache_control=[s3deploy.CacheControl.from_string("public, max-age=31536000, immutable")],
                prune=False,  # a tab still open on the previous build keeps loading its chunks
                log_group=deploy_logs,
            )
        s3deploy.BucketDeployment(
            self,
            "DeployApp",
            destination_bucket=self.bucket,
            destination_key_prefix=f"{CONSOLE_PREFIX}/",
            sources=[
                s3deploy.Source.asset(str(dist), exclude=["assets", "assets/*"]),
                s3deploy.Source.json_data(CONFIG_FILE, {"apiBaseUrl": self.url}),
            ],
            exclude=["assets/*"],  # the other deployment owns them; keep prune away from them
            cache_control=[s3deploy.CacheControl.no_cache()],
            distribution=self.distribution,
            distribution_paths=[f"/{CONSOLE_PREFIX}/index.html", f"/{CONSOLE_PREFIX}/{CONFIG_FILE}", "/"],
            log_group=deploy_logs,
        )
        self._acknowledge()

    def _acknowledge(self) -> None:
        acknowledge(
            self.distribution,
            "CFR1",
            "The console and API serve invited tenants wherever they are; access is by API key, "
            "so a geographic block would protect nothing.",
        )
        acknowledge(
            self.distribution,
            "CFR2",
            "No WAF web ACL yet, as on the REST API: every /v1 route needs an authorizer, the stage "
            "is throttled, and WAF rules belong to the account's edge policy rather than to this app.",
        )
        acknowledge(
            self.distribution,
            "CFR4",
            "The distribution uses the default *.cloudfront.net certificate, whose minimum viewer "
            "TLS version CloudFront fixes; a custom domain with an ACM certificate lifts it.",
        )
        stack = Stack.of(self)
        bucket_resource = self.bucket.node.default_child
        assert bucket_resource is not None
        bucket_ref = stack.get_logical_id(bucket_resource)  # type: ignore[arg-type]
        asset_objects = "arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*"
        for provider in _bucket_deployment_providers(stack):
            acknowledge(
                provider,
                "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
                "aws-cdk-lib's BucketDeployment provider creates this role; it only writes its own logs.",
            )
            acknowledge(
                provider,
                f"IAM5[Resource::{asset_objects}]",
                "BucketDeployment's provider reads the console build's zip from the CDK asset bucket; "
                "asset object keys are content hashes that are only known at deploy time.",
            )
            acknowledge(
                provider,
                f"IAM5[Resource::<{bucket_ref}.Arn>/*]",
                "BucketDeployment's provider writes and prunes the console's files; the grant covers "
                "objects of the console bucket only, which holds nothing else.",
            )
            acknowledge(
                provider,
                "IAM5[Resource::*]",
                "cloudfront:CreateInvalidation/GetInvalidation, which aws-cdk-lib grants on * for the "
                "provider to invalidate index.html and config.json after a deploy.",
            )
            for action, what in (
                ("s3:GetBucket*", "reads bucket metadata while syncing"),
                ("s3:GetObject*", "reads the build's zip and the console's current files"),
                ("s3:List*", "lists the console prefix to sync and prune it"),
                ("s3:DeleteObject*", "prunes the files of an older build"),
                ("s3:Abort*", "aborts a multipart upload it started"),
            ):
                acknowledge(
                    provider,
                    f"IAM5[Action::{action}]",
                    f"BucketDeployment's provider {what}; aws-cdk-lib writes this action group, "
                    "scoped to the CDK asset bucket and the console bucket.",
                )
            acknowledge(
                provider,
                "L1",
                "BucketDeployment's provider runtime is chosen by aws-cdk-lib, not by this app.",
            )


def _bucket_deployment_providers(stack: Stack) -> list[IConstruct]:
    """The singleton Lambda that aws-cdk-lib adds to the stack for every BucketDeployment."""
    return [child for child in stack.node.children if child.node.id.startswith("Custom::CDKBucketDeployment")]
