"""The GraphQL API: the schema, its per-request context and loaders, and the types and root fields by area."""
