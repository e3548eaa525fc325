"""Holds as API types: the plausibility flags that keep a run out of records until a review approves it."""

from __future__ import annotations

import strawberry

from kernelindex.graphql.enums import RunFlagCode, of_rules
from kernelindex.rules.plausibility import Flag


@strawberry.type(description="A plausibility flag on a run: it is kept out of records until a review approves it.")
class RunFlag:
    code: RunFlagCode = strawberry.field(description="Which plausibility rule raised it.")
    words: str = strawberry.field(description="The flag in words.")
    reason: str = strawberry.field(description="The figures behind it.")

    @staticmethod
    def of(flag: Flag) -> RunFlag:
        return RunFlag(code=of_rules(RunFlagCode, flag.code), words=flag.words, reason=flag.detail)
