"""Global object identification: every refetchable object implements Node with an opaque ID."""

from __future__ import annotations

import base64
import binascii

import strawberry

from kernelindex.graphql.errors import UserInputError

NODE_TYPES = ("Workload", "Run", "Implementation", "Hardware", "Environment", "Job")
# The id columns are integer, runs.id is bigint.
_MAX_INTEGER = 2**31 - 1
_MAX_DATABASE_ID = {"Run": 2**63 - 1, "Job": 2**63 - 1}


def to_global_id(type_name: str, database_id: int) -> strawberry.ID:
    return strawberry.ID(base64.urlsafe_b64encode(f"{type_name}:{database_id}".encode()).decode())


def from_global_id(global_id: str) -> tuple[str, int]:
    try:
        type_name, raw = base64.urlsafe_b64decode(global_id.encode()).decode().split(":", 1)
        database_id = int(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise UserInputError(f"malformed ID {global_id[:40]!r}: pass an id this API returned") from None
    if type_name not in NODE_TYPES:
        raise UserInputError(f"ID {global_id[:40]!r} names no known type")
    if not 1 <= database_id <= _MAX_DATABASE_ID.get(type_name, _MAX_INTEGER):
        # Past the range of the id column: PostgreSQL would refuse the comparison outright.
        raise UserInputError(f"malformed ID {global_id[:40]!r}: pass an id this API returned")
    return type_name, database_id


@strawberry.interface(description="An object with a global ID that `Query.node(id:)` can refetch.")
class Node:
    @strawberry.field(description="Opaque global ID.")
    def id(self) -> strawberry.ID:
        raise NotImplementedError
