"""Enums for filters and sorting. Unknown values are refused by GraphQL validation with a message
that names the value and the enum."""

from __future__ import annotations

from enum import Enum

import strawberry


@strawberry.enum(description="What a workload is.")
class WorkloadKind(Enum):
    MODEL = "model"
    OPERATOR = "operator"
    FUSION = "fusion"


@strawberry.enum(description="Where a figure comes from.")
class Evidence(Enum):
    REPORTED = "reported"
    MEASURED = "measured"


@strawberry.enum(description="Run outcome.")
class RunStatus(Enum):
    PASSED = "passed"
    FAILED = "failed"


@strawberry.enum(description="Order of a workload list.")
class WorkloadOrder(Enum):
    SUITE_LEVEL_PROBLEM = "suite_level_problem"
    NAME = "name"
    SLUG = "slug"


@strawberry.enum(description="Order of a run list.")
class RunOrder(Enum):
    NEWEST = "newest"
    FASTEST = "fastest"
    RECENTLY_OBSERVED = "recently_observed"


@strawberry.enum(description="Where a fleet job is: queued → running → passed, failed (with its reason) or cancelled.")
class JobState(Enum):
    QUEUED = "queued"
    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    CANCELLED = "cancelled"


@strawberry.enum(description="Why a fleet job exists: a submitted implementation, or one of KernelIndex's own sweeps.")
class JobKind(Enum):
    SUBMISSION = "submission"
    SWEEP = "sweep"
