"""The MCP server (S11): ContextOS as tools and resources for agents, over stdio or streamable HTTP,
against the local store or a deployed API."""
