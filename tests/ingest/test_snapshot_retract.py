"""`kernelindex snapshot list|retract` and the retractSnapshot mutation (issue 26, point 1).

The case seen on the real tree: a KernelBench import under a wrong revision (the enclosing repository's
commit and date), then the import with the right flags: duplicate runs, comparison ranks 1, 1, 2, 2,
"last observed" the wrong date. After `snapshot retract kernelbench WRONG --reason …` the wrong
snapshot's runs stay stored and queryable, count for nothing, each workload's history says why, and
every page reads as in a database where only the right import happened."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from tests.conftest import FIXED_NOW, TEMPLATE_DB, _admin, _fresh_database, _with_database
from tests.ingest.conftest import entry, fetch, write_timing

RIGHT = ("--revision", "abc1234", "--observed", "2026-06-01")
WRONG = ("--revision", "0f0f0f0f0f0f", "--observed", "2026-11-20")  # the enclosing repository's HEAD
REASON = "imported under the enclosing repository's commit, not KernelBench's"
SLUGS = ("kernelbench-l1-p2-relu", "kernelbench-l1-p1-square-matrix-multiplication", "kernelbench-l3-p9-resnet18")
PAGE = """query($slug: String!) { workload(slug: $slug) {
  eligibleRunCount lastObserved inLatestSnapshot
  revisions { current snapshots { upstreamRevision revisionDate complete } }
  headline { label latencyMs }
  comparison { rows { rank implementation { slug } latencyMs } }
  recordHistory(first: 20) { nodes { kind reason words } }
} }"""
# Keys whose values are the database's own numbering (runs, events, snapshots): they differ between two
# databases holding the same facts.
_NUMBERING = re.compile(r"(^id$|Id$|Ids$|^databaseId$|cursor|^run$|^previousRun$)", re.IGNORECASE)


def _timings(root) -> None:
    write_timing(root, "H100_Modal", "torch", {
        "level1": {"2_ReLU.py": entry(0.05), "1_Square_matrix_multiplication_.py": entry(2.5)},
        "level3": {"9_ResNet18.py": entry(1.45)},
    })
    write_timing(root, "H100_Modal", "torch_compile_inductor_default", {
        "level1": {"2_ReLU.py": entry(0.04), "1_Square_matrix_multiplication_.py": entry(2.6)},
        "level3": {"9_ResNet18.py": entry(1.3)},
    })


def _without_numbering(value):
    if isinstance(value, dict):
        return {k: _without_numbering(v) for k, v in value.items() if not _NUMBERING.search(k)}
    if isinstance(value, list):
        return [_without_numbering(v) for v in value]
    return value


def _pages(db_url: str) -> dict:
    """Each workload's GraphQL page and JSON twin, as a reader gets them."""
    import httpx

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    async def read():
        app = create_app(Settings(), database_url=db_url, clock=lambda: FIXED_NOW)
        out = {}
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
                for slug in SLUGS:
                    body = (await client.post("/graphql", json={"query": PAGE, "variables": {"slug": slug}})).json()
                    assert "errors" not in body, body["errors"]
                    twin = await client.get(f"/workloads/{slug}.json")
                    assert twin.status_code == 200, twin.text
                    out[slug] = {"page": body["data"]["workload"], "twin": twin.json()}
        return out

    return asyncio.run(read())


@pytest.fixture
def right_only_url(pg_url, template_url):
    """A second database where only the right import happens."""
    name = _fresh_database(pg_url, TEMPLATE_DB)
    yield _with_database(pg_url, name)
    asyncio.run(_admin(pg_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _import_into(url: str, checkout, monkeypatch, *flags: str) -> int:
    from kernelindex.cli.main import main
    from kernelindex.settings import get_settings

    monkeypatch.setenv("KERNELINDEX_DATABASE_URL", url)
    get_settings.cache_clear()
    return main(["ingest", "kernelbench", str(checkout), *flags])


def _comparable(pages: dict) -> dict:
    """The pages less their record history (append-only: it keeps the retraction, and says why)."""
    out = {}
    for slug, both in pages.items():
        page = {k: v for k, v in both["page"].items() if k != "recordHistory"}
        twin = {k: v for k, v in both["twin"].items() if k != "recordHistory"}
        out[slug] = _without_numbering({"page": page, "twin": twin})
    return out


def _catalogue_snapshots(db_url: str) -> dict:
    """The upstream snapshots catalog.jsonl lists for each workload revision (what a re-import would rebuild)."""
    import httpx

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    async def read():
        app = create_app(Settings(), database_url=db_url, clock=lambda: FIXED_NOW)
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
                text = (await client.get("/exports/catalog.jsonl")).text
        lines = [json.loads(line) for line in text.splitlines()]
        return {(line["slug"], line["source_sha256"]): sorted(s["upstream_revision"] for s in line["snapshots"])
                for line in lines if line["format"] == "kernelindex.workload/1"}

    return asyncio.run(read())


def test_retracting_the_wrong_import_leaves_the_pages_of_the_right_one(
        cli, db_url, right_only_url, checkout, monkeypatch, capsys):
    _timings(checkout)
    assert _import_into(right_only_url, checkout, monkeypatch, *RIGHT) == 0
    expected = _pages(right_only_url)

    assert _import_into(db_url, checkout, monkeypatch, *WRONG) == 0
    assert _import_into(db_url, checkout, monkeypatch, *RIGHT) == 0
    before = _pages(db_url)
    relu = before["kernelbench-l1-p2-relu"]["page"]
    # The case as seen: every run twice, ranks 1, 1, 2, 2, last observed the wrong date.
    assert relu["eligibleRunCount"] == 4
    assert [r["rank"] for r in relu["comparison"]["rows"]] == [1, 1, 2, 2]
    assert relu["lastObserved"] == "2026-11-20"
    capsys.readouterr()

    assert cli("snapshot", "list") == 0
    listed = capsys.readouterr().out
    assert re.search(r"kernelbench\s+0f0f0f0f0f0f\s+2026-11-20\s+complete\s+\d+\s+\S+ \S+\s+-\n", listed), listed
    assert re.search(r"kernelbench\s+abc1234\s+2026-06-01\s+complete", listed), listed

    assert cli("snapshot", "retract", "kernelbench", "0f0f0f0", "--reason", REASON) == 0
    said = capsys.readouterr().err
    assert "retracted the kernelbench snapshot 0f0f0f0f0f0f" in said and "6 runs retracted" in said, said

    after = _pages(db_url)
    assert _comparable(after) == _comparable(expected)
    assert _catalogue_snapshots(db_url) == _catalogue_snapshots(right_only_url)  # the export does not revive it
    relu = after["kernelbench-l1-p2-relu"]["page"]
    assert relu["eligibleRunCount"] == 2 and relu["lastObserved"] == "2026-06-01"
    assert [r["rank"] for r in relu["comparison"]["rows"]] == [1, 2]
    # The history says why, newest first: the records restored after the event that explains them.
    history = relu["recordHistory"]["nodes"]
    (event,) = [e for e in history if e["kind"] == "SNAPSHOT_RETRACTED"]
    assert event["reason"] == f"kernelbench snapshot 0f0f0f0f0f0f retracted: {REASON}"
    assert event["words"].endswith(event["reason"])
    assert history.index(event) > 0 and history[0]["kind"] == "RESTORED"

    # Stored and queryable, counting for nothing; the snapshot listed as retracted, with why.
    rows = fetch(db_url, "SELECT r.retracted_at IS NOT NULL AS retracted, r.retraction_reason FROM runs r "
                         "JOIN source_snapshots s ON s.id = r.source_snapshot_id WHERE s.revision = '0f0f0f0f0f0f'")
    assert len(rows) == 6 and all(r["retracted"] for r in rows)
    assert {r["retraction_reason"] for r in rows} == {f"kernelbench snapshot 0f0f0f0f0f0f retracted: {REASON}"}
    assert cli("snapshot", "list") == 0
    listed = capsys.readouterr().out
    assert re.search(rf"kernelbench\s+0f0f0f0f0f0f\s+2026-11-20\s+complete.*retracted \S+ \S+: {re.escape(REASON)}", listed)
    assert re.search(rf"KernelBench baseline timings\s+0f0f0f0f0f0f\s+2026-11-20\s+6\s+0\s.*: {re.escape(REASON)}", listed), listed

    # Again: nothing changes, and it says so; an import under the retracted revision is refused.
    assert cli("snapshot", "retract", "kernelbench", "0f0f0f0f0f0f", "--reason", "again") == 0
    assert "was already retracted" in capsys.readouterr().err
    assert _import_into(db_url, checkout, monkeypatch, *WRONG) == 2
    assert "was retracted on" in capsys.readouterr().err
    assert _comparable(_pages(db_url)) == _comparable(expected)


def test_retract_refuses_what_it_cannot_name(cli, capsys):
    assert cli("snapshot", "retract", "nosuchsuite", "abc1234", "--reason", "x") == 2
    assert "no snapshot of suite 'nosuchsuite'; suites with snapshots: 'kernelbench'" in capsys.readouterr().err
    assert cli("snapshot", "retract", "kernelbench", "1234567", "--reason", "x") == 2
    err = capsys.readouterr().err
    assert "no 'kernelbench' snapshot at revision '1234567'; its snapshots: " in err
    assert cli("snapshot", "retract", "kernelbench", "1234567", "--reason", "  ") == 2
    assert "a retraction needs a reason" in capsys.readouterr().err


RETRACT_SNAPSHOT = """mutation($suite: String!, $revision: String!, $reason: String!) {
  retractSnapshot(suite: $suite, revision: $revision, reason: $reason) {
    ok alreadyRetracted suite revision reason sourceSnapshots runsRetracted workloadsTouched
  }
}"""


async def _token(db_url: str, scope: str) -> str:
    from kernelindex.db.engine import in_own_transaction
    from kernelindex.services.tokens import create_token

    async def work(session):
        return (await create_token(session, scopes=[scope], name="test"))[1]

    return await in_own_transaction(db_url, work)


async def _retracted_snapshots(db_url: str) -> int:
    import asyncpg

    from kernelindex.db.urls import to_libpq_url

    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        return await conn.fetchval("SELECT count(*) FROM suite_snapshots WHERE retracted_at IS NOT NULL")
    finally:
        await conn.close()


async def test_the_mutation_retracts_under_the_runs_retract_scope(db_url, client):
    async def send(token: str | None, **variables):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        response = await client.post("/graphql", json={"query": RETRACT_SNAPSHOT, "variables": variables}, headers=headers)
        return response.json()

    seed = {"suite": "kernelbench", "revision": "423217d", "reason": "the seed's figures are superseded by a checkout"}
    refused = await send(await _token(db_url, "runs:write"), **seed)
    assert "runs:retract" in refused["errors"][0]["message"]
    token = await _token(db_url, "runs:retract")
    unknown = await send(token, **{**seed, "revision": "7777777"})
    assert unknown["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert "no 'kernelbench' snapshot at revision '7777777'" in unknown["errors"][0]["message"]
    assert await _retracted_snapshots(db_url) == 0

    done = (await send(token, **seed))["data"]["retractSnapshot"]
    assert done["ok"] and not done["alreadyRetracted"] and done["reason"] == seed["reason"]
    assert done["revision"].startswith("423217d") and done["sourceSnapshots"] == ["KernelBench baseline timings 423217d"]
    assert done["runsRetracted"] == 8 and done["workloadsTouched"] == 2, done
    page = (await client.post("/graphql", json={"query": PAGE, "variables": {"slug": "kernelbench-l3-p9-resnet18"}})).json()
    workload = page["data"]["workload"]
    assert workload["eligibleRunCount"] == 0 and workload["headline"] is None
    assert [e["reason"] for e in workload["recordHistory"]["nodes"] if e["kind"] == "SNAPSHOT_RETRACTED"] == [
        f"kernelbench snapshot {done['revision']} retracted: {seed['reason']}"]
    runs = (await client.post("/graphql", json={"query": "{ runs(first: 50) { totalCount } }"})).json()
    assert runs["data"]["runs"]["totalCount"] == 8  # stored and queryable
    assert await _retracted_snapshots(db_url) == 1
    again = (await send(token, **seed))["data"]["retractSnapshot"]
    assert again["alreadyRetracted"] and not again["ok"] and again["runsRetracted"] == 0
