"""The written policy that decides records."""

from __future__ import annotations

import strawberry

from kernelindex.rules import POLICY_VERSION


@strawberry.type(description="The written policy that decides records, and its version.")
class Policy:
    @strawberry.field(description="'How records are decided'.")
    def title(self) -> str:
        return "How records are decided"

    @strawberry.field(description="Versions of the rules in force.")
    def version(self) -> str:
        return POLICY_VERSION

    @strawberry.field(description="Where to read it (path on this server).")
    def url(self) -> str:
        return "/policy"
