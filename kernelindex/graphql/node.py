"""Global object identification: every refetchable object implements Node with an opaque ID."""

from __future__ import annotations

import base64
import binascii

import strawberry

from kernelindex.graphql.errors import UserInputError

# Types whose ID names one row by its database id; `node(id:)` refetches each (queries.node).
NODE_TYPES = (
    "Workload", "Run", "Implementation", "Hardware", "Environment", "Job", "Protocol", "Source", "WorkloadRevision",
    "RecordEvent", "Submission",
)
# A workload's records on some hardware: its ID names the workload and the hardware ids the name matched.
WORKLOAD_RECORDS = "WorkloadRecords"
# The id columns are integer; runs, fleet_jobs and record_events are bigint.
_MAX_INTEGER = 2**31 - 1
_MAX_DATABASE_ID = {"Run": 2**63 - 1, "Job": 2**63 - 1, "RecordEvent": 2**63 - 1}
# More hardware ids than a name can match (a family has a few SKUs): a longer ID is not ours.
_MAX_HARDWARE_IDS = 64


def to_global_id(type_name: str, database_id: int) -> strawberry.ID:
    return strawberry.ID(base64.urlsafe_b64encode(f"{type_name}:{database_id}".encode()).decode())


def _malformed(global_id: str) -> UserInputError:
    return UserInputError(f"malformed ID {global_id[:40]!r}: pass an id this API returned")


def global_id_type(global_id: str) -> str:
    """The type an ID names (any of NODE_TYPES or WorkloadRecords)."""
    try:
        type_name, _ = base64.urlsafe_b64decode(global_id.encode()).decode().split(":", 1)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise _malformed(global_id) from None
    if type_name not in NODE_TYPES and type_name != WORKLOAD_RECORDS:
        raise UserInputError(f"ID {global_id[:40]!r} names no known type")
    return type_name


def _database_id(global_id: str, type_name: str, raw: str) -> int:
    try:
        database_id = int(raw)
    except ValueError:
        raise _malformed(global_id) from None
    if not 1 <= database_id <= _MAX_DATABASE_ID.get(type_name, _MAX_INTEGER):
        # Past the range of the id column: PostgreSQL would refuse the comparison outright.
        raise _malformed(global_id)
    return database_id


def from_global_id(global_id: str) -> tuple[str, int]:
    type_name = global_id_type(global_id)
    if type_name == WORKLOAD_RECORDS:
        raise UserInputError(f"ID {global_id[:40]!r} is a WorkloadRecords ID: refetch it with node(id:)")
    raw = base64.urlsafe_b64decode(global_id.encode()).decode().split(":", 1)[1]
    return type_name, _database_id(global_id, type_name, raw)


def workload_records_id(workload_id: int, hardware_ids: frozenset[int]) -> strawberry.ID:
    hardware = ".".join(str(i) for i in sorted(hardware_ids))
    return strawberry.ID(base64.urlsafe_b64encode(f"{WORKLOAD_RECORDS}:{workload_id}:{hardware}".encode()).decode())


def from_workload_records_id(global_id: str) -> tuple[int, frozenset[int]]:
    """The workload id and hardware ids of a WorkloadRecords ID."""
    if global_id_type(global_id) != WORKLOAD_RECORDS:
        raise UserInputError(f"ID {global_id[:40]!r} is not a WorkloadRecords ID")
    parts = base64.urlsafe_b64decode(global_id.encode()).decode().split(":")
    if len(parts) != 3:
        raise _malformed(global_id)
    hardware = parts[2].split(".") if parts[2] else []
    if len(hardware) > _MAX_HARDWARE_IDS:
        raise _malformed(global_id)
    return (_database_id(global_id, "Workload", parts[1]),
            frozenset(_database_id(global_id, "Hardware", h) for h in hardware))


@strawberry.interface(description="An object with a global ID that `Query.node(id:)` can refetch.")
class Node:
    @strawberry.field(description="Opaque global ID.")
    def id(self) -> strawberry.ID:
        raise NotImplementedError
