"""The MCP server: KernelIndex's questions as tools an agent calls, answered through the GraphQL schema."""
