"""The HTTP API (S11): one Powertools resolver, one router per resource, one error shape."""
