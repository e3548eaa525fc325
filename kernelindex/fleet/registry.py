"""The fleet's registered workers: the identity under which a worker stores its measurements.

A worker registers when an operator starts `kernelindex worker`, with the database's own
credentials: no API route writes `fleet_workers`, so no token can mint an identity. The runs a
worker stores name it (runs.fleet_worker_id, runs.fleet_machine_id; kernelindex.ingest.writer), and
only such runs climb the trust ladder (kernelindex.rules.trust_ladder): Verified needs one,
Replicated two from distinct registered machines.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from kernelindex.db.models import FleetWorker

MAX_MACHINE_ID = 64  # the column's check (ck_fleet_workers_machine_id_bounded)


@dataclass(frozen=True)
class Registration:
    """What a worker's runs are stored under."""

    worker_id: int
    machine_id: str

    @property
    def writer_identity(self) -> tuple[int, str]:
        """RunWriter's ``fleet_worker``."""
        return (self.worker_id, self.machine_id)


async def register_worker(session: AsyncSession, *, name: str, machine_id: str, hardware: str, now: datetime) -> Registration:
    """Register the worker (or find it again: the same name, machine and hardware is the same
    identity, its start time moved on). In the caller's transaction."""
    if not 1 <= len(machine_id) <= MAX_MACHINE_ID:
        raise ValueError(f"a machine id is 1 to {MAX_MACHINE_ID} characters, got {len(machine_id)}")
    statement = (
        insert(FleetWorker)
        .values(name=name, machine_id=machine_id, hardware=hardware, registered_at=now, last_started_at=now)
        .on_conflict_do_update(index_elements=["name", "machine_id", "hardware"], set_={"last_started_at": now})
        .returning(FleetWorker.id)
    )
    worker_id = (await session.execute(statement)).scalar_one()
    return Registration(worker_id=worker_id, machine_id=machine_id)
