"""GraphQL object types, one module per area: the catalogue, runs, holds, records, history, headroom,
the workload and its page, compare-v1 and the policy."""
