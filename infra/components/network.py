"""Network: a VPC whose Lambdas reach AWS services through endpoints, not the internet.

With Aurora every dependency is an AWS service, so the subnets are isolated (no NAT gateway to
pay for or to exfiltrate through). An external CockroachDB cluster is on the internet, so that
mode adds egress through one NAT gateway.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config import DatabaseMode

DB_PORT = 5432
VPC_CIDR = "10.40.0.0/16"


class Network(Construct):
    """VPC, endpoints, flow logs and the two security groups (Lambda clients, database)."""

    def __init__(self, scope: Construct, construct_id: str, *, mode: DatabaseMode, log_retention: logs.RetentionDays):
        super().__init__(scope, construct_id)
        needs_egress = mode is DatabaseMode.COCKROACH
        subnets = [
            ec2.SubnetConfiguration(
                name="private",
                subnet_type=(ec2.SubnetType.PRIVATE_WITH_EGRESS if needs_egress else ec2.SubnetType.PRIVATE_ISOLATED),
                cidr_mask=22,
            )
        ]
        if needs_egress:
            subnets.insert(0, ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=26))

        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(VPC_CIDR),
            max_azs=2,
            nat_gateways=1 if needs_egress else 0,
            subnet_configuration=subnets,
            restrict_default_security_group=True,
        )
        self.private_subnets = ec2.SubnetSelection(
            subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS if needs_egress else ec2.SubnetType.PRIVATE_ISOLATED
        )

        flow_logs = logs.LogGroup(
            self,
            "FlowLogs",
            retention=log_retention,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs),
            traffic_type=ec2.FlowLogTrafficType.REJECT,
        )

        self.lambda_sg = ec2.SecurityGroup(
            self,
            "LambdaClients",
            vpc=self.vpc,
            description="ContextOS Lambda functions (clients of the database and the endpoints)",
            allow_all_outbound=True,
        )
        self.database_sg = ec2.SecurityGroup(
            self,
            "Database",
            vpc=self.vpc,
            description="ContextOS database and RDS Proxy: PostgreSQL from the Lambda clients only",
            allow_all_outbound=False,
        )
        self.database_sg.add_ingress_rule(
            self.lambda_sg, ec2.Port.tcp(DB_PORT), "PostgreSQL from ContextOS Lambda functions"
        )
        # RDS Proxy and the cluster share this group: the proxy opens connections to the cluster.
        self.database_sg.add_ingress_rule(self.database_sg, ec2.Port.tcp(DB_PORT), "RDS Proxy to Aurora")
        self.database_sg.add_egress_rule(self.database_sg, ec2.Port.tcp(DB_PORT), "RDS Proxy to Aurora")

        endpoint_sg = ec2.SecurityGroup(
            self,
            "Endpoints",
            vpc=self.vpc,
            description="Interface VPC endpoints: HTTPS from inside the VPC",
            allow_all_outbound=False,
        )
        # The VPC CIDR (not only the Lambda group) so the managed secret-rotation function works too;
        # a literal, not the CIDR token, so cdk-nag can evaluate the rule.
        endpoint_sg.add_ingress_rule(ec2.Peer.ipv4(VPC_CIDR), ec2.Port.tcp(443), "HTTPS from the VPC")

        self.vpc.add_gateway_endpoint("S3", service=ec2.GatewayVpcEndpointAwsService.S3)
        for name, service in (
            ("Sqs", ec2.InterfaceVpcEndpointAwsService.SQS),
            ("SecretsManager", ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER),
            ("BedrockRuntime", ec2.InterfaceVpcEndpointAwsService.BEDROCK_RUNTIME),
        ):
            self.vpc.add_interface_endpoint(
                name,
                service=service,
                subnets=self.private_subnets,
                security_groups=[endpoint_sg],
                private_dns_enabled=True,
                open=False,
            )
