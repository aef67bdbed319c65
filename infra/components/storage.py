"""Storage: the customer KMS key and the S3 buckets (upload, raw documents, cold memories, logs).

Raw documents get their own bucket rather than a `raw/` prefix in the upload bucket: the upload
bucket is a drop zone whose objects expire and whose write rights are handed out through
presigned URLs, while raw text is the durable copy of record that only ingestion writes. Separate
buckets keep those lifecycles, policies and blast radii apart and make a notification loop on
the upload bucket impossible.
"""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.components.buckets import private_bucket
from infra.nag import acknowledge


class Storage(Construct):
    """The data key plus four buckets, all TLS-only, private and access-logged."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        upload_prefix: str,
        cold_archive_after_days: int,
        upload_expire_after_days: int,
    ):
        super().__init__(scope, construct_id)
        self.key = kms.Key(
            self,
            "DataKey",
            description="ContextOS data at rest: buckets, database, secrets",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,
        )

        # Server access logs cannot be delivered to an SSE-KMS bucket, hence S3-managed keys here.
        self.access_logs = private_bucket(
            self,
            "AccessLogs",
            lifecycle_rules=[s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(365))],
        )
        acknowledge(
            self.access_logs,
            "S1",
            "This is the server-access-log target bucket; logging it into itself would loop.",
        )

        self.upload = self._bucket(
            "Upload",
            "upload",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-processed-uploads",
                    prefix=upload_prefix,
                    # Ingestion copies what it keeps into the raw bucket; uploads are a drop zone.
                    expiration=Duration.days(upload_expire_after_days),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
        )
        self.raw = self._bucket("Raw", "raw", versioned=True)
        self.cold = self._bucket(
            "Cold",
            "cold",
            versioned=True,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="archive-cold-memories",
                    # Instant Retrieval, not Deep Archive: a cold memory that matches a query is
                    # reactivated on the read path (S5) and cannot wait hours for a restore.
                    transitions=[
                        s3.Transition(
                            storage_class=s3.StorageClass.GLACIER_INSTANT_RETRIEVAL,
                            transition_after=Duration.days(cold_archive_after_days),
                        )
                    ],
                    noncurrent_version_expiration=Duration.days(90),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
        )

    def _bucket(
        self,
        construct_id: str,
        log_prefix: str,
        *,
        versioned: bool = False,
        lifecycle_rules: list[s3.LifecycleRule] | None = None,
    ) -> s3.Bucket:
        """A private bucket under the data key, access-logged."""
        return private_bucket(
            self,
            construct_id,
            key=self.key,
            access_logs=self.access_logs,
            log_prefix=log_prefix,
            versioned=versioned,
            lifecycle_rules=lifecycle_rules,
        )
