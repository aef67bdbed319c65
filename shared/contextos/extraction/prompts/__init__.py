"""Prompts, one module per task, versioned, with the response model beside them (STYLE 9)."""
