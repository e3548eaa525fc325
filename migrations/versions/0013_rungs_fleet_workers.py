"""rungs come from the fleet alone: registered fleet workers; runs name the worker that stored them

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02

Until now a run's `evidence` was whatever its record said, so a `runs:write` token (submitRuns) or
a file (`kernelindex ingest runs`) saying "measured" gave the run the Verified rung, and two such
records naming two invented environments made both Replicated.

`fleet_workers`: a worker of the fleet, registered when an operator starts `kernelindex worker`
(with the database's credentials; no API route writes here). `runs.fleet_worker_id` names the
worker that stored a run, and `runs.fleet_machine_id` its machine (copied, held equal to the
worker's by a composite foreign key, so the trust ladder reads it without a join). A run may be
'measured' only with a worker (ck_runs_measured_by_fleet). A record from outside that says
"measured" is stored 'reported' with `claimed_evidence` 'measured': the source's claim, kept and
shown as such (ck_runs_claimed_evidence_known: a claim is kept only where it is not what is stored).

No change-log triggers on fleet_workers (like fleet_jobs, 0011): no cached response reads it. The
runs updated below move the data version through runs' own triggers (0007), so cached pages whose
rungs change are evicted.

Existing data: each (worker, machine, hardware) that fleet jobs name is registered; the runs those
jobs stored (fleet_jobs.run_id, baseline_run_id) are linked to it and stay 'measured'. Every other
'measured' run becomes 'reported' with the claim 'measured'. The cohort bests whose kinds of
evidence said 'measured' are recomputed from their cohort's live passed runs. Downgrade drops the
claims with their column and leaves those runs 'reported'.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

REGISTER_JOB_WORKERS = """
INSERT INTO fleet_workers (name, machine_id, hardware, registered_at, last_started_at)
SELECT j.worker, j.machine_id, j.hardware, min(coalesce(j.started_at, j.created_at)), max(coalesce(j.started_at, j.created_at))
  FROM fleet_jobs j
 WHERE j.worker IS NOT NULL AND length(j.machine_id) BETWEEN 1 AND 64
   AND (j.run_id IS NOT NULL OR j.baseline_run_id IS NOT NULL)
 GROUP BY j.worker, j.machine_id, j.hardware
"""
LINK_JOB_RUNS = """
UPDATE runs r SET fleet_worker_id = w.id, fleet_machine_id = w.machine_id
  FROM fleet_jobs j
  JOIN fleet_workers w ON w.name = j.worker AND w.machine_id = j.machine_id AND w.hardware = j.hardware
 WHERE r.id IN (j.run_id, j.baseline_run_id) AND r.evidence = 'measured'
"""
DEMOTE_OUTSIDE_CLAIMS = """
UPDATE runs SET evidence = 'reported', claimed_evidence = 'measured'
 WHERE evidence = 'measured' AND fleet_worker_id IS NULL
"""
# cohort_bests.evidence_kinds is derived (kernelindex.services.records: the kinds among an
# implementation's eligible runs in the cohort); only rows that named the kind that changed are
# recomputed, from the same cohort's live, passed, unretracted runs of that implementation.
# Rows whose kinds come out the same are not written (a write that changes nothing must move no data
# version: the change log of 0007).
RECOMPUTE_KINDS = """
UPDATE cohort_bests b SET evidence_kinds = k.kinds
  FROM (SELECT c.workload_revision_id, c.configuration_key, c.protocol_id, c.environment_id, c.implementation_id,
               ARRAY(SELECT DISTINCT r.evidence FROM runs r
                      WHERE r.workload_revision_id = c.workload_revision_id AND r.configuration_key = c.configuration_key
                        AND r.protocol_id = c.protocol_id AND r.environment_id = c.environment_id
                        AND r.implementation_id = c.implementation_id
                        AND r.superseded_at IS NULL AND r.retracted_at IS NULL AND r.status = 'passed'
                      ORDER BY 1) AS kinds
          FROM cohort_bests c WHERE :kind = ANY(c.evidence_kinds)) k
 WHERE (b.workload_revision_id, b.configuration_key, b.protocol_id, b.environment_id, b.implementation_id)
     = (k.workload_revision_id, k.configuration_key, k.protocol_id, k.environment_id, k.implementation_id)
   AND b.evidence_kinds IS DISTINCT FROM k.kinds AND cardinality(k.kinds) > 0
"""


def upgrade() -> None:
    op.create_table(
        'fleet_workers',
        sa.Column('id', sa.BigInteger(), nullable=False),
        sa.Column('name', sa.Text(), nullable=False),
        sa.Column('machine_id', sa.Text(), nullable=False),
        sa.Column('hardware', sa.Text(), nullable=False),
        sa.Column('registered_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.Column('last_started_at', sa.DateTime(timezone=True), server_default=sa.text('now()'), nullable=False),
        sa.CheckConstraint('length(machine_id) BETWEEN 1 AND 64', name=op.f('ck_fleet_workers_machine_id_bounded')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_fleet_workers')),
        sa.UniqueConstraint('id', 'machine_id', name=op.f('uq_fleet_workers_id_machine_id')),
        sa.UniqueConstraint('name', 'machine_id', 'hardware', name=op.f('uq_fleet_workers_name_machine_id_hardware')),
    )
    op.add_column('runs', sa.Column('claimed_evidence', sa.Text(), nullable=True))
    op.add_column('runs', sa.Column('fleet_worker_id', sa.BigInteger(), nullable=True))
    op.add_column('runs', sa.Column('fleet_machine_id', sa.Text(), nullable=True))
    op.execute(REGISTER_JOB_WORKERS)
    op.execute(LINK_JOB_RUNS)
    op.execute(DEMOTE_OUTSIDE_CLAIMS)
    op.execute(sa.text(RECOMPUTE_KINDS).bindparams(kind='measured'))
    op.create_foreign_key(
        op.f('fk_runs_fleet_worker_id_fleet_workers'), 'runs', 'fleet_workers',
        ['fleet_worker_id', 'fleet_machine_id'], ['id', 'machine_id'],
    )
    op.create_check_constraint(
        op.f('ck_runs_claimed_evidence_known'), 'runs',
        "claimed_evidence IS NULL OR (claimed_evidence = 'measured' AND evidence = 'reported')",
    )
    op.create_check_constraint(op.f('ck_runs_measured_by_fleet'), 'runs', "evidence = 'reported' OR fleet_worker_id IS NOT NULL")
    op.create_check_constraint(
        op.f('ck_runs_fleet_machine_with_worker'), 'runs', "(fleet_worker_id IS NULL) = (fleet_machine_id IS NULL)"
    )


def downgrade() -> None:
    op.drop_constraint(op.f('ck_runs_fleet_machine_with_worker'), 'runs', type_='check')
    op.drop_constraint(op.f('ck_runs_measured_by_fleet'), 'runs', type_='check')
    op.drop_constraint(op.f('ck_runs_claimed_evidence_known'), 'runs', type_='check')
    op.drop_constraint(op.f('fk_runs_fleet_worker_id_fleet_workers'), 'runs', type_='foreignkey')
    # The claims go with their column; the runs stay 'reported'. Rolling the schema back must not
    # hand a claim from outside the rung it never earned (and changes no row, so no data version).
    op.drop_column('runs', 'fleet_machine_id')
    op.drop_column('runs', 'fleet_worker_id')
    op.drop_column('runs', 'claimed_evidence')
    op.drop_table('fleet_workers')
