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


# Longer than any ID this API writes (a WorkloadRecords ID of _MAX_HARDWARE_IDS ids is about 1.3 kB of base64).
_MAX_GLOBAL_ID_CHARS = 2048
# Digits of the largest bigint: a decimal id is 1 to 19 ASCII digits.
_MAX_ID_DIGITS = 19


def _malformed(global_id: str) -> UserInputError:
    return UserInputError(f"malformed ID {global_id[:40]!r}: pass an id this API returned")


def _decoded(global_id: str) -> str:
    """The text inside a global ID, which must be exactly as to_global_id writes it: URL-safe base64
    with its padding, of UTF-8. Python's decoder would otherwise skip characters outside the alphabet
    and ignore missing padding, so that many spellings named one object."""
    if not global_id.isascii() or len(global_id) > _MAX_GLOBAL_ID_CHARS:
        raise _malformed(global_id)
    try:
        raw = base64.b64decode(global_id.encode(), altchars=b"-_", validate=True)
        text = raw.decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise _malformed(global_id) from None
    if base64.urlsafe_b64encode(raw).decode() != global_id:
        raise _malformed(global_id)
    return text


def global_id_type(global_id: str) -> str:
    """The type an ID names (any of NODE_TYPES or WorkloadRecords)."""
    type_name, colon, _ = _decoded(global_id).partition(":")
    if not colon:
        raise _malformed(global_id)
    if type_name not in NODE_TYPES and type_name != WORKLOAD_RECORDS:
        raise UserInputError(f"ID {global_id[:40]!r} names no known type")
    return type_name


def decimal_id(raw: str) -> int | None:
    """The number `raw` spells as this API writes ids (1 to 19 ASCII digits, no sign, spaces, underscores
    or leading zero), or None. Not str.isdigit, which takes '²' and other digits int() refuses."""
    if 0 < len(raw) <= _MAX_ID_DIGITS and raw.isascii() and raw.isdigit() and raw[0] != "0":
        return int(raw)
    return None


def _database_id(global_id: str, type_name: str, raw: str) -> int:
    database_id = decimal_id(raw)
    if database_id is None or database_id > _MAX_DATABASE_ID.get(type_name, _MAX_INTEGER):
        # Past the range of the id column: PostgreSQL would refuse the comparison outright.
        raise _malformed(global_id)
    return database_id


def from_global_id(global_id: str) -> tuple[str, int]:
    type_name = global_id_type(global_id)
    if type_name == WORKLOAD_RECORDS:
        raise UserInputError(f"ID {global_id[:40]!r} is a WorkloadRecords ID: refetch it with node(id:)")
    raw = _decoded(global_id).split(":", 1)[1]
    return type_name, _database_id(global_id, type_name, raw)


def database_id_of(raw: str, type_name: str) -> int:
    """The database id an argument documented as "the global ID or the database id" of a `type_name`
    names: a global ID of that type, or the decimal id itself within its column's range. Anything
    else is BAD_USER_INPUT."""
    number = decimal_id(raw)
    if number is not None:
        if number > _MAX_DATABASE_ID.get(type_name, _MAX_INTEGER):
            raise UserInputError(f"id {raw[:40]!r} is past the range of {type_name} ids")
        return number
    if raw.isascii() and raw.isdigit():
        raise UserInputError(f"id {raw[:40]!r}{'…' if len(raw) > 40 else ''} is not a {type_name} id: "
                             "1 to 19 digits without a leading zero, or its global ID")
    found, database_id = from_global_id(raw)
    if found != type_name:
        raise UserInputError(f"ID {raw[:40]!r} is not a {type_name}'s")
    return database_id


def workload_records_id(workload_id: int, hardware_ids: frozenset[int]) -> strawberry.ID:
    hardware = ".".join(str(i) for i in sorted(hardware_ids))
    return strawberry.ID(base64.urlsafe_b64encode(f"{WORKLOAD_RECORDS}:{workload_id}:{hardware}".encode()).decode())


def from_workload_records_id(global_id: str) -> tuple[int, frozenset[int]]:
    """The workload id and hardware ids of a WorkloadRecords ID."""
    if global_id_type(global_id) != WORKLOAD_RECORDS:
        raise UserInputError(f"ID {global_id[:40]!r} is not a WorkloadRecords ID")
    parts = _decoded(global_id).split(":")
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
