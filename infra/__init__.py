"""The ContextOS CDK app: one stack composed of one construct per concern (SPEC S13)."""
