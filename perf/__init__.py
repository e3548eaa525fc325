"""The web stack's own performance tools and reliability drills: dev-only, never imported by the
service or by the runners in benchmarks/."""
