"""Infrastructure tests: CDK assertions, cdk-nag, cfn-lint and the layer build."""
