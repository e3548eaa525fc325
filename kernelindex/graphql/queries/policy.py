"""The written policy that decides records."""

from __future__ import annotations

import strawberry

from kernelindex.graphql.types.policy import Policy


@strawberry.type
class PolicyQueries:
    @strawberry.field(description="The written policy that decides records.")
    def policy(self) -> Policy:
        return Policy()
