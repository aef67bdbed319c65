"""Versioned prompts of the Bedrock judge, each with its response model beside it."""
