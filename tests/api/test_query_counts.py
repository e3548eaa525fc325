"""The number of SQL statements per request does not grow with the number of runs (no N+1)."""

from __future__ import annotations

from kernelindex.web.twins import WORKLOAD_PAGE_QUERY
from tests.api.helpers import synthetic_records, write_records

LIST_QUERY = """
{ workloads(first: 10) { totalCount edges { node { slug eligibleRunCount
    headline { label latencyDisplay implementation { title } }
    records { label latencyDisplay runCount implementation { slug } } } } } }
"""


async def _count(app, graphql, count_statements, query, variables=None) -> int:
    with count_statements(app.state.engine) as statements:
        await graphql(query, variables)
    return len(statements)


async def test_workload_page_statements_constant(app, db_url, graphql, count_statements):
    variables = {"slug": "kernelbench-l3-p9-resnet18"}
    before = await _count(app, graphql, count_statements, WORKLOAD_PAGE_QUERY, variables)
    await write_records(db_url, synthetic_records(60))
    after = await _count(app, graphql, count_statements, WORKLOAD_PAGE_QUERY, variables)
    page = (await graphql(WORKLOAD_PAGE_QUERY, variables))["workload"]
    assert page["eligibleRunCount"] == 64
    assert len(page["records"]) == 62
    assert before == after
    assert after <= 11  # 10, and notMeasured's read of the held runs (a SKU with only held runs was measured)


async def test_workload_list_statements_constant(app, db_url, graphql, count_statements):
    before = await _count(app, graphql, count_statements, LIST_QUERY)
    await write_records(db_url, synthetic_records(30) + synthetic_records(30, "kernelbench-l3-p12-vgg19", batch=10))
    after = await _count(app, graphql, count_statements, LIST_QUERY)
    assert before == after
    data = await graphql(LIST_QUERY)
    counts = {e["node"]["slug"]: e["node"]["eligibleRunCount"] for e in data["workloads"]["edges"]}
    assert counts == {"kernelbench-l3-p9-resnet18": 34, "kernelbench-l3-p12-vgg19": 34}
