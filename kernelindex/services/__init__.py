"""Reading and keeping the data the API serves: facts from rows, holds, workload pages, the precomputed
records, run filters and API tokens. Nothing here knows about GraphQL or HTTP."""
