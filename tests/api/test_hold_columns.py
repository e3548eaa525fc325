"""A run's holds read as columns of its own statement (holds.hold_columns, decided by holds.held_of: the
workload page's runs) say what with_holds says of the same run (load_holds' statement), whatever its
flags, reviews and stored correctness."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from sqlalchemy import any_, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY, BIGINT

from kernelindex.db.engine import in_own_transaction
from kernelindex.rules import plausibility
from kernelindex.services.facts import RUN_ID_COLUMN, FactsBuilder, run_columns_statement
from kernelindex.services.holds import held_of, hold_columns, holding_codes, with_holds

FLAGS = [(), ("below_floor", "plausibility-v2"), ("below_floor", "plausibility-v1"), ("implausible_speedup", "plausibility-v2")]
CORRECTNESS = [None, '{"passed": true}', '{"passed": "true"}', '{"passed": false}', '{"passed": "false"}',
               '{"passed": 1}', '{"passed": null}', '{"other": true}', '[true]', '"passed"']
REVIEWS = [(), (("approved", "2026-01-02"),), (("rejected", "2026-01-02"),),
           (("approved", "2026-01-02"), ("rejected", "2026-01-01")), (("rejected", "2026-01-02"), ("approved", "2026-01-02"))]


async def test_hold_columns_decide_as_with_holds(db_url):
    async def check(session):
        ids = [row[0] for row in (await session.execute(text("SELECT id FROM runs ORDER BY id"))).all()]
        cases = list(itertools.product(FLAGS, CORRECTNESS, REVIEWS))
        statement = run_columns_statement().add_columns(*hold_columns()).where(
            RUN_ID_COLUMN == any_(bindparam("ids", type_=ARRAY(BIGINT)))).order_by(RUN_ID_COLUMN)
        width = len(run_columns_statement().selected_columns)
        held = compared = 0
        for start in range(0, len(cases), len(ids)):  # one case a run, the runs' holds undone after each batch
            savepoint = await session.begin_nested()
            for run_id, (flag, correctness, reviews) in zip(ids, cases[start:start + len(ids)], strict=False):
                await session.execute(text("UPDATE runs SET correctness = CAST(:c AS jsonb) WHERE id = :id"),
                                      {"c": correctness, "id": run_id})
                if flag:
                    await session.execute(text("INSERT INTO run_flags (run_id, code, reason, rule_version) "
                                               "VALUES (:id, :code, 'x', :v)"), {"id": run_id, "code": flag[0], "v": flag[1]})
                for decision, at in reviews:
                    await session.execute(text("INSERT INTO run_reviews (run_id, decision, reviewer, created_at) "
                                               "VALUES (:id, :d, 'me', :at)"),
                                          {"id": run_id, "d": decision, "at": datetime.fromisoformat(at).replace(tzinfo=UTC)})
            rows = (await session.execute(statement, {"ids": ids})).all()
            builder = FactsBuilder()
            by_columns = [held_of(builder.run_of_columns(row), row[width:]) for row in rows]
            by_statement = await with_holds(session, [builder.run_of_columns(row) for row in rows])
            assert [(f.id, f.held_for_review) for f in by_columns] == [(f.id, f.held_for_review) for f in by_statement]
            assert by_columns == by_statement
            # held_runs_of (the page's held runs) decides from the run's own facts (its correctness as the facts read it): the same again
            by_facts = [bool(holding_codes(facts, row[width:], facts.correctness_passed)) and row[width + 2] != plausibility.APPROVED
                        for facts, row in ((builder.run_of_columns(row), row) for row in rows)]
            assert by_facts == [f.held_for_review for f in by_statement]
            held += sum(f.held_for_review for f in by_columns)
            compared += len(by_columns)
            await savepoint.rollback()
        assert compared >= len(cases) and 0 < held < compared  # every case compared; both answers occur

    await in_own_transaction(db_url, check)
