"""kernelindex.db.arrays.id_array: the one bigint[] parameter of ids the read paths bind for `= ANY(...)`
(the page's revisions and runs, the holds' runs): one parameter whatever the count, so a statement's
text never depends on how many ids it is given, and ids past 32 bits go through."""

from __future__ import annotations

import asyncio

from sqlalchemy import BigInteger, any_, column, func, select, table
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import ARRAY

from kernelindex.db.arrays import id_array
from kernelindex.db.engine import in_own_transaction

_RUNS = table("runs", column("id", BigInteger))


def _sql(statement) -> str:
    return str(statement.compile(dialect=postgresql.asyncpg.dialect()))


def test_the_statement_text_is_the_same_for_any_number_of_ids():
    one = select(_RUNS.c.id).where(_RUNS.c.id == any_(id_array("run_ids", [1])))
    many = select(_RUNS.c.id).where(_RUNS.c.id == any_(id_array("run_ids", range(1000))))
    given_later = select(_RUNS.c.id).where(_RUNS.c.id == any_(id_array("run_ids")))
    assert _sql(one) == _sql(many) == _sql(given_later)
    assert _sql(one).count("$") == 1  # one parameter, not one a value (an expanding IN list)
    parameter = id_array("run_ids", (5, 6))
    assert parameter.value == [5, 6] and isinstance(parameter.type, ARRAY) and isinstance(parameter.type.item_type, BigInteger)
    assert id_array("revision_ids").key == "revision_ids"


def test_ids_bound_or_given_at_execution_select_the_same_rows(db_url):
    big = 2**40

    async def work(session):
        subquery = func.unnest(id_array("all_ids", [1, 2, 3, big])).table_valued(column("v", BigInteger)).render_derived()
        bound = select(subquery.c.v).where(subquery.c.v == any_(id_array("wanted", [2, big]))).order_by(subquery.c.v)
        later = select(subquery.c.v).where(subquery.c.v == any_(id_array("wanted"))).order_by(subquery.c.v)
        return (list((await session.execute(bound)).scalars()),
                list((await session.execute(later, {"wanted": [3, big]})).scalars()))

    bound, later = asyncio.run(in_own_transaction(db_url, work))
    assert bound == [2, big]
    assert later == [3, big]
