"""Writes only with an API token: the token commands, submitRuns and retractRun."""

from __future__ import annotations

import copy
import hashlib
import json
import re

import asyncpg
import pytest

from kernelindex.db.urls import to_libpq_url
from tests.api.helpers import make_token, synthetic_records
from tests.conftest import FIXED_NOW

RESNET18 = "kernelbench-l3-p9-resnet18"

SUBMIT = """
mutation Submit($records: [JSON!]!) {
  submitRuns(records: $records) {
    ok inserted unchanged superseded runIds runDatabaseIds warnings
    problems { index key reason }
  }
}
"""

RETRACT = """
mutation Retract($id: ID!, $reason: String!) {
  retractRun(id: $id, reason: $reason) { ok runId alreadyRetracted retractedAt reason error }
}
"""


# -- helpers ------------------------------------------------------------------------------------


async def fetch(db_url: str, query: str, *args) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        return await conn.fetch(query, *args)
    finally:
        await conn.close()


async def run_count(db_url: str) -> int:
    return (await fetch(db_url, "SELECT count(*) AS n FROM runs"))[0]["n"]


@pytest.fixture
def post(client):
    async def send(query: str, variables: dict, token: str | None = None, authorization: str | None = None):
        headers = {}
        if authorization is not None:
            headers["Authorization"] = authorization
        elif token is not None:
            headers["Authorization"] = f"Bearer {token}"
        response = await client.post("/graphql", json={"query": query, "variables": variables}, headers=headers)
        assert response.status_code == 200, response.text
        return response.json()

    return send


async def page(client) -> dict:
    response = await client.get(f"/workloads/{RESNET18}.json")
    assert response.status_code == 200
    return response.json()


def only_error(body: dict) -> dict:
    assert body.get("data") is None, body
    assert len(body["errors"]) == 1, body["errors"]
    return body["errors"][0]


async def record_holder_id(db_url: str) -> int:
    """The ResNet18 record holder: PyTorch eager on H100 PCIe (Lambda Labs), 1.39 ms."""
    rows = await fetch(
        db_url,
        """
        SELECT r.id FROM runs r
        JOIN workloads w ON w.id = r.workload_id
        JOIN implementations i ON i.id = r.implementation_id
        JOIN environments e ON e.id = r.environment_id
        JOIN hardware h ON h.id = e.hardware_id
        WHERE w.slug = $1 AND i.slug = 'torch_eager' AND 'NVIDIA H100 PCIe' = ANY(h.driver_product_names || h.sku)
          AND r.mean_ms = 1.39 AND r.superseded_at IS NULL
        """,
        RESNET18,
    )
    assert len(rows) == 1, rows
    return rows[0]["id"]


# -- the token commands -------------------------------------------------------------------------


@pytest.fixture
def cli_env(db_url, monkeypatch):
    from kernelindex.settings import get_settings

    monkeypatch.setenv("KERNELINDEX_DATABASE_URL", db_url)
    get_settings.cache_clear()
    yield db_url
    get_settings.cache_clear()


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    from kernelindex.cli.main import main

    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def table_rows(db_url: str) -> list[dict]:
    import asyncio

    return [dict(r) for r in asyncio.run(fetch(db_url, "SELECT * FROM api_tokens ORDER BY id"))]


def test_token_create_prints_the_token_once_and_stores_only_its_hash(cli_env, capsys):
    code, out, err = run_cli(capsys, "token", "create", "--scope", "runs:write", "--scope", "runs:retract", "--name", "ci")
    assert code == 0
    token = out.strip()
    assert out.count("\n") == 1 and out == token + "\n"
    assert token.startswith("ki_") and len(token) == 3 + 43
    assert "will not be shown again" in err
    assert token not in err

    rows = table_rows(cli_env)
    assert len(rows) == 1
    row = rows[0]
    assert row["name"] == "ci"
    assert row["scopes"] == ["runs:write", "runs:retract"]
    assert row["token_sha256"] == hashlib.sha256(token.encode()).hexdigest()
    assert row["display_prefix"] == token[:10]
    assert row["revoked_at"] is None and row["last_used_at"] is None
    # The token text is nowhere in the table, and neither is its secret part.
    assert token not in repr(rows)
    assert token[10:] not in repr(rows)

    # A second token is another secret.
    code, out2, _ = run_cli(capsys, "token", "create", "--scope", "runs:write")
    assert code == 0 and out2.strip() != token and out2.strip().startswith("ki_")


def test_token_create_refuses_unknown_scopes(cli_env, capsys):
    code, out, err = run_cli(capsys, "token", "create", "--scope", "runs:write", "--scope", "admin")
    assert code == 2
    assert out == ""
    assert "unknown scope 'admin'" in err and "runs:write" in err and "runs:retract" in err
    assert table_rows(cli_env) == []
    with pytest.raises(SystemExit):  # --scope is required
        run_cli(capsys, "token", "create")


def test_token_list_and_revoke(cli_env, capsys):
    _, out, _ = run_cli(capsys, "token", "list")
    assert out.splitlines()[0].split()[:4] == ["id", "name", "prefix", "scopes"]
    assert len(out.splitlines()) == 1

    _, first, _ = run_cli(capsys, "token", "create", "--scope", "runs:write", "--name", "bench-bot")
    _, second, _ = run_cli(capsys, "token", "create", "--scope", "runs:retract", "--name", "moderator")
    first, second = first.strip(), second.strip()
    ids = [r["id"] for r in table_rows(cli_env)]

    code, out, _ = run_cli(capsys, "token", "list")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 3
    assert "revoked" in lines[0] and "created" in lines[0]
    assert lines[1].split()[:4] == [str(ids[0]), "bench-bot", first[:10] + "…", "runs:write"]
    assert lines[2].split()[:4] == [str(ids[1]), "moderator", second[:10] + "…", "runs:retract"]
    assert first not in out and second not in out
    columns = [re.split(r"\s{2,}", line.strip()) for line in lines]
    assert columns[0] == ["id", "name", "prefix", "scopes", "created", "revoked", "last used"]
    assert columns[1][5:] == ["-", "-"]  # neither revoked nor used

    code, _, err = run_cli(capsys, "token", "revoke", str(ids[0]))
    assert code == 0 and f"revoked token {ids[0]}" in err
    rows = table_rows(cli_env)
    assert rows[0]["revoked_at"] is not None and rows[1]["revoked_at"] is None

    code, _, err = run_cli(capsys, "token", "revoke", str(ids[0]))
    assert code == 0 and "already revoked" in err

    code, out, _ = run_cli(capsys, "token", "list")
    columns = [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ", columns[1][5])  # revoked
    assert columns[2][5] == "-"

    code, _, err = run_cli(capsys, "token", "revoke", "999999")
    assert code == 2 and "no token with id 999999" in err
    with pytest.raises(SystemExit):
        run_cli(capsys, "token", "revoke", "1; DROP TABLE api_tokens")
    assert len(table_rows(cli_env)) == 2


# -- authentication and scopes ------------------------------------------------------------------


async def test_submit_without_a_token_is_unauthenticated_and_writes_nothing(post, db_url):
    before = await run_count(db_url)
    body = await post(SUBMIT, {"records": synthetic_records(1)})
    error = only_error(body)
    assert error["extensions"]["code"] == "UNAUTHENTICATED"
    assert "Authorization: Bearer" in error["message"]
    assert await run_count(db_url) == before


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer ki_" + "A" * 43,  # well-formed, unknown
        "Bearer not-a-kernelindex-token",
        "Basic dXNlcjpwYXNz",
        "Bearer",
        "ki_" + "A" * 43,  # no scheme
        "Bearer ki_'; DROP TABLE api_tokens; --",
        "Bearer ki_' OR '1'='1",
        "Bearer ki_" + "x" * 100_000,
    ],
)
async def test_a_wrong_token_is_unauthenticated(post, db_url, authorization):
    await make_token(db_url, "runs:write")
    before = await run_count(db_url)
    body = await post(SUBMIT, {"records": synthetic_records(1)}, authorization=authorization)
    error = only_error(body)
    assert error["extensions"]["code"] == "UNAUTHENTICATED"
    assert error["message"] in ("invalid or revoked API token", "malformed Authorization header: expected 'Authorization: Bearer ki_…'")
    assert await run_count(db_url) == before
    assert len(await fetch(db_url, "SELECT id FROM api_tokens")) == 1


async def test_a_revoked_token_is_unauthenticated_like_an_unknown_one(post, db_url):
    token = await make_token(db_url, "runs:write", "runs:retract", revoked=True)
    before = await run_count(db_url)
    body = await post(SUBMIT, {"records": synthetic_records(1)}, token=token)
    error = only_error(body)
    assert error["extensions"]["code"] == "UNAUTHENTICATED"
    assert error["message"] == "invalid or revoked API token"
    body = await post(RETRACT, {"id": str(await record_holder_id(db_url)), "reason": "bad"}, token=token)
    assert only_error(body)["message"] == "invalid or revoked API token"
    assert await run_count(db_url) == before
    assert (await fetch(db_url, "SELECT count(*) AS n FROM runs WHERE retracted_at IS NOT NULL"))[0]["n"] == 0


async def test_a_write_token_cannot_retract(post, db_url):
    token = await make_token(db_url, "runs:write")
    run_id = await record_holder_id(db_url)
    body = await post(RETRACT, {"id": str(run_id), "reason": "suspicious"}, token=token)
    error = only_error(body)
    assert error["extensions"]["code"] == "FORBIDDEN"
    assert error["message"] == "this token lacks the runs:retract scope"
    rows = await fetch(db_url, "SELECT retracted_at FROM runs WHERE id = $1", run_id)
    assert rows[0]["retracted_at"] is None


async def test_a_retract_token_cannot_submit(post, db_url):
    token = await make_token(db_url, "runs:retract")
    before = await run_count(db_url)
    error = only_error(await post(SUBMIT, {"records": synthetic_records(1)}, token=token))
    assert error["extensions"]["code"] == "FORBIDDEN"
    assert error["message"] == "this token lacks the runs:write scope"
    assert await run_count(db_url) == before


async def test_auth_errors_are_not_masked_in_production(db_url):
    import httpx

    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app

    token = await make_token(db_url, "runs:write")
    app = create_app(Settings(environment="production"), database_url=db_url, clock=lambda: FIXED_NOW)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
            no_token = (await client.post("/graphql", json={"query": SUBMIT, "variables": {"records": []}})).json()
            forbidden = (
                await client.post(
                    "/graphql",
                    json={"query": RETRACT, "variables": {"id": "1", "reason": "x"}},
                    headers={"Authorization": f"Bearer {token}"},
                )
            ).json()
    assert only_error(no_token)["extensions"]["code"] == "UNAUTHENTICATED"
    assert "Authorization: Bearer" in only_error(no_token)["message"]
    error = only_error(forbidden)
    assert error["message"] == "this token lacks the runs:retract scope"
    assert error["extensions"]["code"] == "FORBIDDEN"


async def test_mutations_are_not_allowed_over_get(client, db_url):
    token = await make_token(db_url, "runs:write")
    response = await client.get(
        "/graphql", params={"query": "mutation { retractRun(id: \"1\", reason: \"x\") { ok } }"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code in (400, 405)
    assert (await fetch(db_url, "SELECT count(*) AS n FROM runs WHERE retracted_at IS NOT NULL"))[0]["n"] == 0


def test_unknown_scopes_are_refused_by_the_library():
    from kernelindex.services import tokens as auth

    with pytest.raises(auth.UnknownScopeError, match="unknown scope 'runs:delete'"):
        auth.normalise_scopes(["runs:write", "runs:delete"])
    with pytest.raises(auth.UnknownScopeError, match="at least one scope"):
        auth.normalise_scopes([])
    assert auth.normalise_scopes(["runs:write", " runs:write", "runs:retract"]) == ["runs:write", "runs:retract"]
    token = auth.generate_token()
    assert token.startswith("ki_") and len(token) == 46 and token != auth.generate_token()
    assert auth.display_prefix(token) == token[:10]


# -- submitRuns ---------------------------------------------------------------------------------


async def test_submit_runs_lands_runs_that_the_page_shows_at_once(post, client, db_url):
    token = await make_token(db_url, "runs:write")
    before = await page(client)
    assert before["eligibleRunCount"] == 4

    records = synthetic_records(2)
    body = await post(SUBMIT, {"records": records}, token=token)
    assert "errors" not in body, body
    result = body["data"]["submitRuns"]
    assert result["ok"] is True
    assert (result["inserted"], result["unchanged"], result["superseded"]) == (2, 0, 0)
    assert result["problems"] == []
    assert len(result["runIds"]) == 2 and len(set(result["runIds"])) == 2
    stored = {r["id"] for r in await fetch(db_url, "SELECT id FROM runs WHERE id = ANY($1::bigint[])", result["runDatabaseIds"])}
    assert stored == set(result["runDatabaseIds"])

    after = await page(client)
    assert after["eligibleRunCount"] == 6

    # The token's use is recorded (the request's clock).
    rows = await fetch(db_url, "SELECT last_used_at FROM api_tokens")
    assert rows[0]["last_used_at"] == FIXED_NOW

    # Idempotent: the same records again are unchanged; a changed figure supersedes.
    again = (await post(SUBMIT, {"records": records}, token=token))["data"]["submitRuns"]
    assert (again["ok"], again["inserted"], again["unchanged"], again["superseded"], again["runIds"]) == (True, 0, 2, 0, [])
    changed = copy.deepcopy(records[0])
    changed["statistics"]["mean"] = 1.25
    changed["statistics"]["max"] = 1.26
    third = (await post(SUBMIT, {"records": [changed]}, token=token))["data"]["submitRuns"]
    assert (third["ok"], third["inserted"], third["unchanged"], third["superseded"]) == (True, 1, 0, 1)
    assert (await page(client))["eligibleRunCount"] == 6


async def test_submit_runs_accounts_for_every_record_it_was_given(post, db_url, monkeypatch):
    """submitRuns fills the one ingest summary (kernelindex.ingest.summary), checked to add up: every record
    submitted is inserted, unchanged or superseding (issue 24, point 1)."""
    from kernelindex.ingest.summary import IngestSummary

    checked: list[IngestSummary] = []
    check = IngestSummary.check
    monkeypatch.setattr(IngestSummary, "check", lambda self: checked.append(self) or check(self))
    token = await make_token(db_url, "runs:write")
    records = synthetic_records(3)
    assert (await post(SUBMIT, {"records": records[:2]}, token=token))["data"]["submitRuns"]["ok"] is True
    changed = copy.deepcopy(records[1])
    changed["statistics"].update(mean=1.25, max=1.26)
    checked.clear()
    result = (await post(SUBMIT, {"records": [records[0], changed, records[2]]}, token=token))["data"]["submitRuns"]
    assert (result["inserted"], result["unchanged"], result["superseded"]) == (2, 1, 1)
    (summary,) = checked
    assert (summary.found, summary.new, summary.unchanged, summary.superseded, summary.rejected) == (3, 1, 1, 1, 0)


async def test_submit_runs_with_one_bad_record_writes_nothing(post, client, db_url):
    token = await make_token(db_url, "runs:write")
    before = await run_count(db_url)
    records = synthetic_records(3)
    records[1]["statistics"]["mean"] = -1
    del records[2]["protocol"]
    body = await post(SUBMIT, {"records": records}, token=token)
    assert "errors" not in body, body
    result = body["data"]["submitRuns"]
    assert result["ok"] is False
    assert (result["inserted"], result["unchanged"], result["superseded"], result["runIds"]) == (0, 0, 0, [])
    by_index = {(p["index"], p["key"]) for p in result["problems"]}
    assert (1, "statistics.mean") in by_index
    assert any(p["index"] == 2 and "protocol" in p["reason"] for p in result["problems"])
    assert all(p["index"] in (1, 2) for p in result["problems"])
    mean_problem = next(p for p in result["problems"] if p["key"] == "statistics.mean")
    assert "-1" in mean_problem["reason"]
    assert await run_count(db_url) == before
    assert (await page(client))["eligibleRunCount"] == 4


async def test_a_problem_found_while_writing_rolls_back_the_whole_call(post, client, db_url):
    """An unknown workload passes the record checks and is found by the writer: the good record
    before it must not land either."""
    token = await make_token(db_url, "runs:write")
    before = await run_count(db_url)
    records = synthetic_records(2)
    records[1]["workload"] = {"slug": "no-such-workload"}
    result = (await post(SUBMIT, {"records": records}, token=token))["data"]["submitRuns"]
    assert result["ok"] is False
    assert [(p["index"], p["key"]) for p in result["problems"]] == [(1, "workload.slug")]
    assert "no-such-workload" in result["problems"][0]["reason"]
    assert await run_count(db_url) == before
    assert (await page(client))["eligibleRunCount"] == 4

    # The same natural key twice in one call.
    twice = synthetic_records(1) * 2
    result = (await post(SUBMIT, {"records": twice}, token=token))["data"]["submitRuns"]
    assert result["ok"] is False and [p["index"] for p in result["problems"]] == [1]
    assert "same natural key" in result["problems"][0]["reason"]
    assert await run_count(db_url) == before


async def test_submit_runs_refuses_what_postgres_cannot_store(client, db_url):
    """NaN (Python's JSON parser accepts it), NUL characters, huge integers: problems, never a 500."""
    token = await make_token(db_url, "runs:write")
    before = await run_count(db_url)
    records = synthetic_records(4)
    records[1]["implementation"]["title"] = "evil\x00title"
    records[2]["statistics"]["num_trials"] = 10**12
    records[3]["configuration"]["bindings"] = {"batch_size": 2**40}
    payload = json.dumps({"query": SUBMIT, "variables": {"records": records}})
    payload = payload.replace('"mean": 1.2', '"mean": NaN', 1)  # records[0]
    response = await client.post(
        "/graphql", content=payload, headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 200, response.text
    result = response.json()["data"]["submitRuns"]
    assert result["ok"] is False
    keys = {(p["index"], p["key"]) for p in result["problems"]}
    assert keys == {
        (0, "statistics.mean"),
        (1, "implementation.title"),
        (2, "statistics.num_trials"),
        (3, "configuration.bindings.batch_size"),
    }
    assert await run_count(db_url) == before


async def test_submit_runs_takes_at_most_1000_records(post, db_url):
    token = await make_token(db_url, "runs:write")
    error = only_error(await post(SUBMIT, {"records": [{}] * 1001}, token=token))
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "1,001 records" in error["message"] and "1,000" in error["message"]
    # Not-an-object records are problems of their own.
    # null is refused by the schema ([JSON!]!) before the resolver runs.
    assert "errors" in await post(SUBMIT, {"records": [1, None]}, token=token)
    result = (await post(SUBMIT, {"records": [1, "x", []]}, token=token))["data"]["submitRuns"]
    assert [(p["index"], p["key"]) for p in result["problems"]] == [(0, None), (1, None), (2, None)]


# -- retractRun ---------------------------------------------------------------------------------


async def test_retracting_the_record_holder_removes_it_from_records(post, client, db_url):
    from kernelindex.graphql.node import to_global_id

    token = await make_token(db_url, "runs:retract")
    before = await page(client)
    assert before["eligibleRunCount"] == 4
    assert before["headline"]["latencyDisplay"] == "1.39 ms"
    assert "1.39 ms" in [r["latencyDisplay"] for r in before["records"]]

    run_id = await record_holder_id(db_url)
    reason = "Timing excluded the first call; see issue 42."
    body = await post(RETRACT, {"id": to_global_id("Run", run_id), "reason": reason}, token=token)
    assert "errors" not in body, body
    result = body["data"]["retractRun"]
    assert result["ok"] is True and result["alreadyRetracted"] is False and result["error"] is None
    assert result["runId"] == to_global_id("Run", run_id)
    assert result["reason"] == reason
    assert result["retractedAt"].startswith("2026-11-29T12:00:00")

    after = await page(client)
    assert after["eligibleRunCount"] == 3
    latencies = [r["latencyDisplay"] for r in after["records"]]
    assert "1.39 ms" not in latencies
    assert after["headline"]["latencyDisplay"] != "1.39 ms"
    assert all(row["latencyDisplay"] != "1.39 ms" for row in after["comparison"]["rows"])

    rows = await fetch(db_url, "SELECT retracted_at, retraction_reason FROM runs WHERE id = $1", run_id)
    assert rows[0]["retracted_at"] == FIXED_NOW and rows[0]["retraction_reason"] == reason

    # Twice: the first retraction stands. The database id works as well as the global ID.
    again = (await post(RETRACT, {"id": str(run_id), "reason": "another reason"}, token=token))["data"]["retractRun"]
    assert again["ok"] is False and again["alreadyRetracted"] is True
    assert "already retracted" in again["error"]
    assert again["reason"] == reason
    rows = await fetch(db_url, "SELECT retraction_reason FROM runs WHERE id = $1", run_id)
    assert rows[0]["retraction_reason"] == reason


@pytest.mark.parametrize(
    "run_id",
    ["999999999", "0", "-1", "99999999999999999999999999", "abc", "V29ya2xvYWQ6MQ==", "UnVuOjk5OTk5OQ==",
     "1' OR '1'='1", "x" * 100_000],
)
async def test_retracting_a_missing_run_is_a_typed_result(post, db_url, run_id):
    token = await make_token(db_url, "runs:retract")
    body = await post(RETRACT, {"id": run_id, "reason": "gone"}, token=token)
    assert "errors" not in body, body
    result = body["data"]["retractRun"]
    assert result["ok"] is False and result["alreadyRetracted"] is False and result["runId"] is None
    assert result["error"].startswith("no run with id")
    assert len(result["error"]) < 200
    assert (await fetch(db_url, "SELECT count(*) AS n FROM runs WHERE retracted_at IS NOT NULL"))[0]["n"] == 0


async def test_retraction_reason_is_stored_verbatim_or_refused_clearly(post, client, db_url):
    token = await make_token(db_url, "runs:retract")
    run_id = await record_holder_id(db_url)

    for reason, message in [
        ("", "needs a reason"),
        ("   \n", "needs a reason"),
        ("x" * 100_000, "100,000 characters; the most is 2,000"),
        ("x" * 2001, "2,001 characters"),
        ("nul\x00byte", "NUL"),
    ]:
        error = only_error(await post(RETRACT, {"id": str(run_id), "reason": reason}, token=token))
        assert error["extensions"]["code"] == "BAD_USER_INPUT"
        assert message in error["message"]
    rows = await fetch(db_url, "SELECT retracted_at FROM runs WHERE id = $1", run_id)
    assert rows[0]["retracted_at"] is None

    nasty = "'); DROP TABLE runs; -- \\ % _ $1 \" ; SELECT pg_sleep(10); ünïcödé ✓ " + "y" * 1900
    assert len(nasty) <= 2000
    result = (await post(RETRACT, {"id": str(run_id), "reason": nasty}, token=token))["data"]["retractRun"]
    assert result["ok"] is True and result["reason"] == nasty
    rows = await fetch(db_url, "SELECT retraction_reason FROM runs WHERE id = $1", run_id)
    assert rows[0]["retraction_reason"] == nasty
    assert (await page(client))["eligibleRunCount"] == 3


async def test_an_unexpected_failure_while_writing_leaves_nothing_behind(post, client, db_url, monkeypatch):
    """The response of a failed resolver still has status 200 (the middleware commits): the writes
    sit in a savepoint that the failure rolls back."""
    from kernelindex.ingest import pipeline
    from kernelindex.ingest.writer import RunWriter

    class FailingWriter(RunWriter):
        async def write(self, session, records, **kwargs):
            await super().write(session, records, **kwargs)
            raise RuntimeError("disk on fire")

    # submitRuns writes through the ingest pipeline, which makes its writer.
    monkeypatch.setattr(pipeline, "RunWriter", FailingWriter)
    token = await make_token(db_url, "runs:write")
    before = await run_count(db_url)
    body = await post(SUBMIT, {"records": synthetic_records(2)}, token=token)
    assert body["data"] is None and body["errors"]
    assert await run_count(db_url) == before
    assert (await page(client))["eligibleRunCount"] == 4
