"""Domain services: each handler calls exactly one of these."""
