"""ContextOS: a persistent, decaying, governed memory layer for AI agents."""
