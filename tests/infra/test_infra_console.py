"""The console's deployment: a private bucket behind CloudFront (OAC), HTTPS, security headers, the
SPA fallback, the API on the same origin, and a config.json that tells the console where the API is."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from infra.app import build_app
from infra.components.console import _SPA_FALLBACK, API_PATH, CONFIG_FILE
from infra.config import InfraConfigError

if TYPE_CHECKING:
    from tests.infra.conftest import Synth

# AWS-managed policy ids (the same in every account and region).
CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
ALL_VIEWER_EXCEPT_HOST_HEADER = "b689b0a8-53d0-40ab-baf2-68738e2966ac"


def _one(synth: Synth, type_: str, prefix: str = "") -> tuple[str, dict[str, Any]]:
    (found,) = ((k, v["Properties"]) for k, v in synth.resources(type_).items() if k.startswith(prefix))
    return found


def _distribution(synth: Synth) -> dict[str, Any]:
    return _one(synth, "AWS::CloudFront::Distribution")[1]["DistributionConfig"]


def _origin(config: dict[str, Any], origin_id: str) -> dict[str, Any]:
    (origin,) = (o for o in config["Origins"] if o["Id"] == origin_id)
    return origin


def test_the_console_bucket_is_private_and_only_cloudfront_of_this_distribution_reads_it(synth: Synth) -> None:
    bucket_id, bucket = _one(synth, "AWS::S3::Bucket", "ConsoleAssets")
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert bucket["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    assert "WebsiteConfiguration" not in bucket  # served through CloudFront, not as an S3 website
    (policy,) = (
        p["Properties"]
        for p in synth.resources("AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": bucket_id}
    )
    statements = policy["PolicyDocument"]["Statement"]
    allows = [s for s in statements if s["Effect"] == "Allow"]
    assert allows, "CloudFront needs a grant to read the console"
    distribution_id = _one(synth, "AWS::CloudFront::Distribution")[0]
    for statement in allows:
        assert statement["Principal"] == {"Service": "cloudfront.amazonaws.com"}
        assert statement["Action"] == "s3:GetObject"
        assert distribution_id in json.dumps(statement["Condition"]["StringEquals"]["AWS:SourceArn"])
    assert any(s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}} for s in statements)


def test_the_bucket_is_reached_through_origin_access_control_not_an_identity(synth: Synth) -> None:
    oac_id, oac = _one(synth, "AWS::CloudFront::OriginAccessControl")
    assert oac["OriginAccessControlConfig"]["OriginAccessControlOriginType"] == "s3"
    assert oac["OriginAccessControlConfig"]["SigningBehavior"] == "always"
    config = _distribution(synth)
    s3_origin = _origin(config, config["DefaultCacheBehavior"]["TargetOriginId"])
    assert s3_origin["OriginAccessControlId"] == {"Fn::GetAtt": [oac_id, "Id"]}
    assert s3_origin["S3OriginConfig"] == {"OriginAccessIdentity": ""}
    assert "ConsoleAssets" in json.dumps(s3_origin["DomainName"])
    synth.template.resource_count_is("AWS::CloudFront::CloudFrontOriginAccessIdentity", 0)


def test_viewers_use_https_and_the_console_has_a_root_object_and_access_logs(synth: Synth) -> None:
    config = _distribution(synth)
    assert config["DefaultCacheBehavior"]["ViewerProtocolPolicy"] == "redirect-to-https"
    assert {b["PathPattern"]: b["ViewerProtocolPolicy"] for b in config["CacheBehaviors"]} == {API_PATH: "https-only"}
    assert config["DefaultRootObject"] == "console/index.html"
    assert "ConsoleEdgeLogs" in json.dumps(config["Logging"]["Bucket"])
    # Distribution-wide error pages would also rewrite the API's own 403/404 answers.
    assert "CustomErrorResponses" not in config


def test_both_behaviours_send_the_security_headers(synth: Synth) -> None:
    policy_id, policy = _one(synth, "AWS::CloudFront::ResponseHeadersPolicy")
    headers = policy["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"]
    text = headers["ContentSecurityPolicy"]["ContentSecurityPolicy"]
    csp = dict(directive.strip().split(" ", 1) for directive in text.split(";"))
    assert csp["default-src"] == "'none'"
    assert csp["connect-src"] == "'self'"  # the API is this origin's /v1/*
    assert csp["script-src"] == "'self'" and "unsafe" not in csp["style-src"]
    assert csp["frame-ancestors"] == "'none'"
    assert headers["StrictTransportSecurity"]["AccessControlMaxAgeSec"] >= 31_536_000
    assert headers["FrameOptions"]["FrameOption"] == "DENY"
    assert headers["ContentTypeOptions"] == {"Override": True}
    config = _distribution(synth)
    for behaviour in [config["DefaultCacheBehavior"], *config["CacheBehaviors"]]:
        assert behaviour["ResponseHeadersPolicyId"] == {"Ref": policy_id}


def test_the_api_behaviour_reaches_the_rest_api_uncached_with_the_viewers_headers(synth: Synth) -> None:
    config = _distribution(synth)
    (api,) = config["CacheBehaviors"]
    assert api["PathPattern"] == API_PATH
    assert api["CachePolicyId"] == CACHING_DISABLED
    # Authorization (the API key) and Idempotency-Key reach the API; Host stays the API's own.
    assert api["OriginRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST_HEADER
    assert set(api["AllowedMethods"]) == {"GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST", "DELETE"}
    origin = _origin(config, api["TargetOriginId"])
    rest_api_id = next(iter(synth.resources("AWS::ApiGateway::RestApi")))
    assert rest_api_id in json.dumps(origin["DomainName"]) and ".execute-api." in json.dumps(origin["DomainName"])
    assert origin["CustomOriginConfig"]["OriginProtocolPolicy"] == "https-only"
    assert origin["CustomOriginConfig"]["OriginSSLProtocols"] == ["TLSv1.2"]
    assert "Stage" in json.dumps(origin["OriginPath"])  # /prod, so /v1/x reaches the stage's /v1/x


def test_the_fallback_function_is_attached_to_the_console_behaviour_only(synth: Synth) -> None:
    function_id, function = _one(synth, "AWS::CloudFront::Function")
    assert function["FunctionConfig"]["Runtime"] == "cloudfront-js-2.0"
    config = _distribution(synth)
    assert config["DefaultCacheBehavior"]["FunctionAssociations"] == [
        {"EventType": "viewer-request", "FunctionARN": {"Fn::GetAtt": [function_id, "FunctionARN"]}}
    ]
    assert "FunctionAssociations" not in config["CacheBehaviors"][0]


def test_the_fallback_function_serves_the_app_for_paths_that_name_no_file() -> None:
    """Runs the function's own code in Node.js (which the CDK needs anyway); the CloudFront JS 2.0
    runtime runs the same ECMAScript."""
    uris = ["/", "/console", "/console/", "/console/memory/abc", "/console/index.html", "/console/assets/index-1a.js"]
    script = _SPA_FALLBACK + (
        f"console.log(JSON.stringify({json.dumps(uris)}.map(u => handler({{request: {{uri: u}}}}).uri)));"
    )
    result = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(result.stdout) == [
        "/console/index.html",
        "/console/index.html",
        "/console/index.html",
        "/console/index.html",
        "/console/index.html",
        "/console/assets/index-1a.js",
    ]


def _deployments(synth: Synth) -> dict[str, dict[str, Any]]:
    return {
        props["DestinationBucketKeyPrefix"]: props
        for props in (r["Properties"] for r in synth.resources("Custom::CDKBucketDeployment").values())
    }


def test_the_build_is_deployed_with_a_config_json_that_names_the_distribution(synth: Synth) -> None:
    deployments = _deployments(synth)
    assert set(deployments) == {"console/", "console/assets/"}
    bucket_id = _one(synth, "AWS::S3::Bucket", "ConsoleAssets")[0]
    distribution_id = _one(synth, "AWS::CloudFront::Distribution")[0]
    for deployment in deployments.values():
        assert deployment["DestinationBucketName"] == {"Ref": bucket_id}
    app = deployments["console/"]
    # config.json's apiBaseUrl is a deploy-time value: the distribution's own domain.
    markers = json.dumps(app["SourceMarkers"])
    assert distribution_id in markers and "DomainName" in markers
    assert app["SystemMetadata"] == {"cache-control": "no-cache"}
    assert app["Exclude"] == ["assets/*"]  # its prune must not delete the other deployment's assets
    assert app["DistributionId"] == {"Ref": distribution_id}
    assert f"/console/{CONFIG_FILE}" in app["DistributionPaths"]
    assets = deployments["console/assets/"]
    assert assets["SystemMetadata"] == {"cache-control": "public, max-age=31536000, immutable"}
    assert assets["Prune"] is False


def test_the_config_json_asset_holds_the_api_base_url_the_deployment_fills_in(synth: Synth) -> None:
    app = _deployments(synth)["console/"]
    (marker,) = (m for m in app["SourceMarkers"] if m)
    ((key, value),) = marker.items()
    # What the deployment substitutes at deploy time, with a made-up domain for the GetAtt.
    parts = value["Fn::Join"][1]
    filled = "".join(p if isinstance(p, str) else "d1234.cloudfront.net" for p in parts)
    found = []
    for zip_name in app["SourceObjectKeys"]:
        path = synth.outdir / f"asset.{zip_name.removesuffix('.zip')}" / CONFIG_FILE
        if path.is_file():
            found.append(json.loads(path.read_text(encoding="utf-8").replace(key, filled)))
    assert found == [{"apiBaseUrl": "https://d1234.cloudfront.net"}]


def test_the_console_url_is_an_output(synth: Synth) -> None:
    output = synth.json["Outputs"]["ConsoleUrl"]["Value"]
    assert "DomainName" in json.dumps(output) and "/console/" in json.dumps(output)


def test_an_unbuilt_console_stops_synth_and_says_how_to_build_it(asset_tree: Path, tmp_path: Path) -> None:
    with pytest.raises(InfraConfigError, match=r"make console"):
        build_app(
            {
                "functions_root": str(asset_tree / "functions"),
                "layer_dir": str(asset_tree / "layer"),
                "console_dir": str(tmp_path / "no-dist"),
            },
            outdir=str(tmp_path / "out"),
        )
