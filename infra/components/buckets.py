"""One way to declare a bucket: private, TLS-only, bucket-owner objects, retained on delete.

Buckets differ only in what they hold: their encryption (the data key, or S3-managed keys where
the reader cannot use a KMS key: access-log delivery, CloudFront's Origin Access Control), where
their access logs go, their versioning and lifecycle, and object ownership for a log target
that is written through ACLs.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct


def private_bucket(
    scope: Construct,
    construct_id: str,
    *,
    key: kms.IKey | None = None,
    access_logs: s3.IBucket | None = None,
    log_prefix: str | None = None,
    versioned: bool | None = None,
    lifecycle_rules: list[s3.LifecycleRule] | None = None,
    object_ownership: s3.ObjectOwnership = s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
) -> s3.Bucket:
    """A bucket encrypted with ``key`` (with an S3 bucket key) or S3-managed keys without one,
    logging into ``access_logs`` under ``log_prefix/`` when given."""
    encryption = (
        {"encryption": s3.BucketEncryption.KMS, "encryption_key": key, "bucket_key_enabled": True}
        if key is not None
        else {"encryption": s3.BucketEncryption.S3_MANAGED}
    )
    return s3.Bucket(
        scope,
        construct_id,
        **encryption,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=object_ownership,
        versioned=versioned,
        lifecycle_rules=lifecycle_rules,
        server_access_logs_bucket=access_logs,
        server_access_logs_prefix=f"{log_prefix}/" if log_prefix else None,
        removal_policy=RemovalPolicy.RETAIN,
    )
