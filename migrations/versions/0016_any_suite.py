"""any suite: workloads named by their suite's own name, sources with their terms, protocols with their
metric, runs with their headline figure

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-02

Issue 25 brings suites that are not KernelBench (kernelindex.com's catalogue exports, Liger-Kernel's
benchmark results). The schema assumed KernelBench:

- workloads: a workload is identified within its suite by the suite's own name (`suite_key`); level
  and problem number become optional (KernelBench keeps both, and its slugs do not change). A check
  holds that every workload is identified one way or the other. `family` is the operation family a
  suite states; `reference` says what the workload's reference is, in the source's words (a workload
  need not have a PyTorch module); `aliases` the other names the suite gives it. Semantics stated by a source are stored in the revision's
  `semantics` as stated (marked "stated"), never traced.
- sources: the source's own key (slug) and kind, its terms and attribution beside its licence.
- source_snapshots: the route a snapshot came through (an export's file name), beside its revision
  and date: a run's provenance is its upstream source and the route. `whole`: the snapshot is the
  source's entire catalogue at its date (a kernelindex.com export, a Liger-Kernel results file), so a
  run it no longer holds counts for nothing; `outdated` (derived, kernelindex.ingest.source_import):
  a whole snapshot with a newer one of the same source, whose runs stay stored and listed but are not
  eligible (eligibility-v2).
- implementations: authors, project, target architectures, the source artifact's digest and size,
  and the implementation's own version, as a source states them.
- protocols: the metric their figures are (latency, memory, a source's own score), the unit they are
  stored in, the harness, correctness comparator and comparability family as the source names them;
  `statistic` admits the statistics these sources state (a geometric mean, or none stated).
- runs: `figure`, the headline figure in its protocol's unit and statistic (a KernelBench run's mean
  latency; Liger's median; GPU MODE's score), with the spread the source states (`figure_low` and
  `figure_high` at the quantiles `low_quantile` and `high_quantile`, e.g. Liger's 20th and 80th
  percentiles, never stored as p5/p95), the source's own stated speedup and its own id of the run.
  Existing runs get figure = mean_ms (their protocols' statistic is the mean).

Downgrade drops the new columns; it refuses while a workload has no level (a non-KernelBench one).
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None

_FINITE_POSITIVE = "{col} IS NULL OR ({col} > 0 AND {col} < 'Infinity'::float8)"


def upgrade() -> None:
    op.alter_column('workloads', 'level', existing_type=sa.Integer(), nullable=True)
    op.alter_column('workloads', 'problem_number', existing_type=sa.Integer(), nullable=True)
    for column in ('suite_key', 'family', 'reference'):
        op.add_column('workloads', sa.Column(column, sa.Text(), nullable=True))
    op.add_column('workloads', sa.Column('aliases', postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'"), nullable=False))
    op.create_check_constraint(
        op.f('ck_workloads_identified_in_suite'), 'workloads',
        '(level IS NOT NULL AND problem_number IS NOT NULL) OR suite_key IS NOT NULL',
    )
    op.create_index('ux_workloads_suite_key', 'workloads', ['suite', 'suite_key'], unique=True,
                    postgresql_where=sa.text('suite_key IS NOT NULL'))

    for column in ('key', 'kind', 'terms', 'attribution'):
        op.add_column('sources', sa.Column(column, sa.Text(), nullable=True))
    op.create_index('ux_sources_key', 'sources', ['key'], unique=True, postgresql_where=sa.text('key IS NOT NULL'))
    op.add_column('source_snapshots', sa.Column('route', sa.Text(), nullable=True))
    op.add_column('source_snapshots', sa.Column('whole', sa.Boolean(), server_default=sa.text('false'), nullable=False))
    op.add_column('source_snapshots', sa.Column('outdated', sa.Boolean(), server_default=sa.text('false'), nullable=False))
    # The file's sha256 and what importing it found, kept so the very same bytes again are known unchanged
    # without reading them (kernelindex.ingest.source_import.known_file).
    op.add_column('source_snapshots', sa.Column('file_sha256', sa.Text(), nullable=True))
    op.add_column('source_snapshots', sa.Column('file_summary', postgresql.JSONB(astext_type=sa.Text()), nullable=True))
    op.add_column('implementations', sa.Column('authors', postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'"), nullable=False))
    op.add_column('implementations', sa.Column('target_architectures', postgresql.ARRAY(sa.Text()), server_default=sa.text("'{}'"), nullable=False))
    for column in ('project', 'artifact_sha256', 'version'):
        op.add_column('implementations', sa.Column(column, sa.Text(), nullable=True))
    op.add_column('implementations', sa.Column('artifact_bytes', sa.BigInteger(), nullable=True))

    op.add_column('protocols', sa.Column('metric', sa.Text(), server_default=sa.text("'latency'"), nullable=False))
    op.add_column('protocols', sa.Column('unit', sa.Text(), server_default=sa.text("'ms'"), nullable=False))
    for column in ('harness', 'comparator', 'family', 'notes'):
        op.add_column('protocols', sa.Column(column, sa.Text(), nullable=True))
    op.create_check_constraint(op.f('ck_protocols_metric_known'), 'protocols', "metric IN ('latency', 'memory', 'score')")
    op.create_check_constraint(
        op.f('ck_protocols_unit_of_metric'), 'protocols',
        "(metric = 'latency' AND unit = 'ms') OR (metric = 'memory' AND unit = 'MB') OR (metric = 'score' AND unit = 's')",
    )
    op.drop_constraint(op.f('ck_protocols_statistic_known'), 'protocols', type_='check')
    op.create_check_constraint(
        op.f('ck_protocols_statistic_known'), 'protocols',
        "statistic IN ('mean', 'median', 'min', 'geomean', 'unspecified')",
    )

    for column in ('figure', 'figure_low', 'figure_high', 'low_quantile', 'high_quantile', 'source_speedup'):
        op.add_column('runs', sa.Column(column, sa.Double(), nullable=True))
    op.add_column('runs', sa.Column('upstream_id', sa.Text(), server_default=sa.text("''"), nullable=False))
    # A source that names its runs may state two of one implementation on one case and machine
    # (FlashInfer-Bench's retries): the source's own id joins the natural key ('' for a run record).
    op.drop_index('uq_runs_natural_key_live', table_name='runs')
    op.create_index('uq_runs_natural_key_live', 'runs', ['workload_revision_id', 'configuration_key', 'implementation_id',
                    'environment_id', 'protocol_id', 'source_snapshot_id', 'upstream_id'], unique=True,
                    postgresql_where=sa.text('superseded_at IS NULL'))
    # Nothing shown changes (figure = mean_ms is what every page already ranks by), so the change-log
    # and data-version triggers (0004, 0007) are kept out of it: no cached response is invalidated.
    op.execute("ALTER TABLE runs DISABLE TRIGGER USER")
    op.execute("UPDATE runs SET figure = mean_ms WHERE mean_ms IS NOT NULL")
    op.execute("ALTER TABLE runs ENABLE TRIGGER USER")
    for column in ('figure', 'figure_low', 'figure_high'):
        op.create_check_constraint(op.f(f'ck_runs_{column}_finite_positive'), 'runs', _FINITE_POSITIVE.format(col=column))
    # As the source states it, beside ours: FlashInfer-Bench states 0.0 for some passed runs.
    op.create_check_constraint(op.f('ck_runs_source_speedup_finite'), 'runs',
                               "source_speedup IS NULL OR (source_speedup >= 0 AND source_speedup < 'Infinity'::float8)")
    op.create_check_constraint(op.f('ck_runs_passed_has_figure'), 'runs', "status = 'failed' OR figure IS NOT NULL")
    # A passed run needs a figure, no longer a mean and a trial count: Liger states a median, GPU MODE a
    # score, catalogue runs often no trial count. Run records (kernelindex.run/1) still carry both.
    op.drop_constraint(op.f('ck_runs_passed_has_stats'), 'runs', type_='check')
    # Ranking reads the figure (ranking-v1's order: figure, then earlier observation, then id).
    op.drop_index('ix_runs_fastest', table_name='runs')
    op.create_index('ix_runs_fastest', 'runs', ['workload_revision_id', 'configuration_key',
                    sa.text("coalesce(figure, 'Infinity'::float8)"), 'id'],
                    postgresql_where=sa.text("superseded_at IS NULL AND retracted_at IS NULL AND status = 'passed'"))
    op.drop_index('ix_runs_cohort_top', table_name='runs')
    op.create_index('ix_runs_cohort_top', 'runs', ['workload_revision_id', 'configuration_key', 'protocol_id', 'environment_id',
                    sa.text("least(greatest(figure, '1e-06'::double precision), '86400000'::double precision)"), 'observed_at', 'id'],
                    postgresql_where=sa.text("superseded_at IS NULL AND retracted_at IS NULL AND status = 'passed'"))
    op.alter_column('cohort_bests', 'mean_ms', new_column_name='figure')
    op.create_check_constraint(
        op.f('ck_runs_quantiles_in_order'), 'runs',
        '(low_quantile IS NULL AND high_quantile IS NULL) OR (0 <= low_quantile AND low_quantile < high_quantile AND high_quantile <= 1)',
    )


def downgrade() -> None:
    op.execute(
        "DO $$ BEGIN IF EXISTS (SELECT 1 FROM workloads WHERE level IS NULL OR problem_number IS NULL) THEN "
        "RAISE EXCEPTION 'workloads of suites other than KernelBench are stored: downgrade would lose their identity'; "
        "END IF; IF EXISTS (SELECT 1 FROM runs WHERE status = 'passed' AND (mean_ms IS NULL OR num_trials IS NULL)) THEN "
        "RAISE EXCEPTION 'runs without a mean latency and a trial count are stored: downgrade would refuse them'; "
        "END IF; END $$"
    )
    op.alter_column('cohort_bests', 'figure', new_column_name='mean_ms')
    op.drop_index('ix_runs_cohort_top', table_name='runs')
    op.create_index('ix_runs_cohort_top', 'runs', ['workload_revision_id', 'configuration_key', 'protocol_id', 'environment_id',
                    sa.text("least(greatest(mean_ms, '1e-06'::double precision), '86400000'::double precision)"), 'observed_at', 'id'],
                    postgresql_where=sa.text("superseded_at IS NULL AND retracted_at IS NULL AND status = 'passed'"))
    op.drop_index('ix_runs_fastest', table_name='runs')
    op.create_index('ix_runs_fastest', 'runs', ['workload_revision_id', 'configuration_key',
                    sa.text("coalesce(mean_ms, 'Infinity'::float8)"), 'id'],
                    postgresql_where=sa.text("superseded_at IS NULL AND retracted_at IS NULL AND status = 'passed'"))
    op.create_check_constraint(op.f('ck_runs_passed_has_stats'), 'runs',
                               "status = 'failed' OR (mean_ms IS NOT NULL AND num_trials IS NOT NULL)")
    for name in ('quantiles_in_order', 'passed_has_figure', 'figure_finite_positive', 'figure_low_finite_positive',
                 'figure_high_finite_positive', 'source_speedup_finite'):
        op.drop_constraint(op.f(f'ck_runs_{name}'), 'runs', type_='check')
    op.drop_index('uq_runs_natural_key_live', table_name='runs')
    op.create_index('uq_runs_natural_key_live', 'runs', ['workload_revision_id', 'configuration_key', 'implementation_id',
                    'environment_id', 'protocol_id', 'source_snapshot_id'], unique=True,
                    postgresql_where=sa.text('superseded_at IS NULL'))
    for column in ('upstream_id', 'source_speedup', 'high_quantile', 'low_quantile', 'figure_high', 'figure_low', 'figure'):
        op.drop_column('runs', column)
    op.execute("DELETE FROM protocols WHERE metric <> 'latency' OR statistic NOT IN ('mean', 'median', 'min')")
    op.drop_constraint(op.f('ck_protocols_statistic_known'), 'protocols', type_='check')
    op.create_check_constraint(op.f('ck_protocols_statistic_known'), 'protocols', "statistic IN ('mean', 'median', 'min')")
    op.drop_constraint(op.f('ck_protocols_unit_of_metric'), 'protocols', type_='check')
    op.drop_constraint(op.f('ck_protocols_metric_known'), 'protocols', type_='check')
    for column in ('notes', 'family', 'comparator', 'harness', 'unit', 'metric'):
        op.drop_column('protocols', column)
    for column in ('artifact_bytes', 'version', 'artifact_sha256', 'project', 'target_architectures', 'authors'):
        op.drop_column('implementations', column)
    for column in ('file_summary', 'file_sha256', 'outdated', 'whole', 'route'):
        op.drop_column('source_snapshots', column)
    op.drop_index('ux_sources_key', table_name='sources')
    for column in ('attribution', 'terms', 'kind', 'key'):
        op.drop_column('sources', column)
    op.drop_index('ux_workloads_suite_key', table_name='workloads')
    op.drop_constraint(op.f('ck_workloads_identified_in_suite'), 'workloads', type_='check')
    for column in ('aliases', 'reference', 'family', 'suite_key'):
        op.drop_column('workloads', column)
    op.alter_column('workloads', 'problem_number', existing_type=sa.Integer(), nullable=False)
    op.alter_column('workloads', 'level', existing_type=sa.Integer(), nullable=False)
