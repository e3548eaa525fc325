"""The HTTP server: the Starlette application, its middleware, the response cache, JSON twins and exports."""
