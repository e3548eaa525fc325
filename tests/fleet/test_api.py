"""The fleet through GraphQL: submitImplementation needs its scope and words its refusals; jobs are
followed with job/jobs/node and are never served from the response cache."""

from __future__ import annotations

from tests.api.helpers import make_token
from tests.fleet.conftest import candidate

SUBMIT = """
mutation ($input: SubmitImplementationInput!) {
  submitImplementation(input: $input) {
    ok created problems { key reason }
    job { id databaseId state kind hardware attempts maxAttempts reason implementationSlug
          workload { slug } submission { sourceSha256 filename } implementation { slug title } run { databaseId } }
  }
}"""
JOB = "query ($id: ID!) { job(id: $id) { databaseId state reason worker } }"


def _input(slug: str, **change) -> dict:
    return {"workload": slug, "source": candidate("honest"), "title": "fair relu", "hardware": "cpu",
            "filename": "honest.py", "licence": "MIT"} | change


async def test_submitting_needs_the_implementations_submit_scope(client, db_url, tiny_workload):
    body = (await client.post("/graphql", json={"query": SUBMIT, "variables": {"input": _input(tiny_workload)}})).json()
    assert body["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    runs_token = await make_token(db_url, "runs:write")
    body = (await client.post("/graphql", json={"query": SUBMIT, "variables": {"input": _input(tiny_workload)}},
                              headers={"Authorization": f"Bearer {runs_token}"})).json()
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert "implementations:submit" in body["errors"][0]["message"]


async def test_a_submission_is_a_job_that_can_be_followed_and_a_repeat_is_the_same_job(client, db_url, tiny_workload):
    token = await make_token(db_url, "implementations:submit")
    headers = {"Authorization": f"Bearer {token}"}
    first = (await client.post("/graphql", json={"query": SUBMIT, "variables": {"input": _input(tiny_workload)}}, headers=headers)).json()
    result = first["data"]["submitImplementation"]
    assert result["ok"] and result["created"] and result["problems"] == []
    job = result["job"]
    assert (job["state"], job["kind"], job["hardware"], job["attempts"], job["run"]) == ("QUEUED", "SUBMISSION", "cpu", 0, None)
    assert job["workload"]["slug"] == tiny_workload and job["submission"]["filename"] == "honest.py"
    assert job["implementation"] == {"slug": job["implementationSlug"], "title": "fair relu"}

    again = (await client.post("/graphql", json={"query": SUBMIT, "variables": {"input": _input(tiny_workload, title="x")}},
                               headers=headers)).json()["data"]["submitImplementation"]
    assert again["ok"] and not again["created"] and again["job"]["databaseId"] == job["databaseId"]

    by_id = (await client.post("/graphql", json={"query": JOB, "variables": {"id": job["id"]}})).json()["data"]["job"]
    assert by_id == {"databaseId": job["databaseId"], "state": "QUEUED", "reason": None, "worker": None}
    node = (await client.post("/graphql", json={"query": "query ($id: ID!) { node(id: $id) { ... on Job { state } } }",
                                                "variables": {"id": job["id"]}})).json()["data"]["node"]
    assert node == {"state": "QUEUED"}
    listed = (await client.post("/graphql", json={"query": "{ jobs(filter: {states: [QUEUED], hardware: \"cpu\"}) { nodes { databaseId } } }"})).json()
    assert listed["data"]["jobs"]["nodes"] == [{"databaseId": job["databaseId"]}]
    none = (await client.post("/graphql", json={"query": "{ jobs(filter: {states: [PASSED]}) { nodes { databaseId } } }"})).json()
    assert none["data"]["jobs"]["nodes"] == []


async def test_refusals_name_the_field(client, db_url, tiny_workload):
    token = await make_token(db_url, "implementations:submit")
    headers = {"Authorization": f"Bearer {token}"}
    for change, key, words in [
        ({"source": "class Model: pass\n"}, "FILE", "defines no ModelNew"),
        ({"hardware": "TPU v9"}, "HARDWARE", "no hardware 'TPU v9'"),
        ({"workload": "nope"}, "WORKLOAD", "no workload 'nope'"),
        ({"bindings": [1, 2]}, "BINDINGS", "must be an object"),
    ]:
        body = (await client.post("/graphql", json={"query": SUBMIT, "variables": {"input": _input(tiny_workload, **change)}},
                                  headers=headers)).json()
        result = body["data"]["submitImplementation"]
        assert not result["ok"] and result["job"] is None
        assert result["problems"][0]["key"] == key and words in result["problems"][0]["reason"], result
    listed = (await client.post("/graphql", json={"query": "{ jobs { nodes { databaseId } } }"})).json()
    assert listed["data"]["jobs"]["nodes"] == []


async def test_job_answers_are_never_cached_so_a_state_change_shows_at_once(client, db_url, tiny_workload):
    import asyncpg

    from kernelindex.db.urls import to_libpq_url

    token = await make_token(db_url, "implementations:submit")
    created = (await client.post("/graphql", json={"query": SUBMIT, "variables": {"input": _input(tiny_workload)}},
                                 headers={"Authorization": f"Bearer {token}"})).json()["data"]["submitImplementation"]["job"]
    query = {"query": JOB, "variables": {"id": created["id"]}}
    first = await client.post("/graphql", json=query)
    assert first.json()["data"]["job"]["state"] == "QUEUED"
    # A worker's update moves no data version (the fleet's tables carry no change-log triggers) …
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        before = await conn.fetchval("SELECT version FROM data_version")
        await conn.execute("UPDATE fleet_jobs SET state = 'running', worker = 'w1' WHERE id = $1", created["databaseId"])
        assert await conn.fetchval("SELECT version FROM data_version") == before
    finally:
        await conn.close()
    # … so only never storing the answer keeps it right.
    second = await client.post("/graphql", json=query)
    assert second.headers.get("x-cache") != "hit"
    assert second.json()["data"]["job"] == {"databaseId": created["databaseId"], "state": "RUNNING", "reason": None, "worker": "w1"}


CANCEL = """mutation ($id: ID!, $reason: String) { cancelJob(id: $id, reason: $reason) {
  ok alreadyCancelled wasRunning error job { databaseId state reason } } }"""


async def test_cancel_job_needs_a_scope_and_a_submitter_cancels_only_its_own_jobs(client, db_url, tiny_workload):
    import asyncpg

    from kernelindex.db.urls import to_libpq_url

    async def call(token: str | None, job_id, reason: str | None = None) -> dict:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return (await client.post("/graphql", json={"query": CANCEL, "variables": {"id": job_id, "reason": reason}},
                                  headers=headers)).json()

    submitter = await make_token(db_url, "implementations:submit", name="alice")
    other_submitter = await make_token(db_url, "implementations:submit", name="bob")
    operator = await make_token(db_url, "jobs:cancel", name="ops")
    runs_token = await make_token(db_url, "runs:write")
    job = (await client.post("/graphql", json={"query": SUBMIT, "variables": {"input": _input(tiny_workload)}},
                             headers={"Authorization": f"Bearer {submitter}"})).json()["data"]["submitImplementation"]["job"]
    second = (await client.post("/graphql", json={"query": SUBMIT, "variables": {"input": _input(
        tiny_workload, source=candidate("honest_too"), filename="honest_too.py")}},
        headers={"Authorization": f"Bearer {submitter}"})).json()["data"]["submitImplementation"]["job"]

    assert (await call(None, job["id"]))["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    refused = (await call(runs_token, job["id"]))["errors"][0]
    assert refused["extensions"]["code"] == "FORBIDDEN"
    assert refused["message"] == "this token lacks the jobs:cancel or the implementations:submit scope"
    not_theirs = (await call(other_submitter, job["id"]))["errors"][0]
    assert not_theirs["extensions"]["code"] == "FORBIDDEN" and "was not queued by this token" in not_theirs["message"]
    assert (await client.post("/graphql", json={"query": JOB, "variables": {"id": job["id"]}})).json()["data"]["job"]["state"] == "QUEUED"

    mine = (await call(submitter, job["id"], "a better one is coming"))["data"]["cancelJob"]
    assert (mine["ok"], mine["alreadyCancelled"], mine["wasRunning"], mine["error"]) == (True, False, False, None)
    assert mine["job"]["state"] == "CANCELLED" and mine["job"]["reason"].endswith("(alice): a better one is coming")
    assert mine["job"]["reason"].startswith("cancelled by token ")
    again = (await call(operator, str(job["databaseId"])))["data"]["cancelJob"]  # by its database id too
    assert (again["ok"], again["alreadyCancelled"]) == (False, True) and "already cancelled" in again["error"]
    assert again["job"]["reason"] == mine["job"]["reason"]  # the first cancellation stands

    # The operator's scope cancels any job; one that finished stays as it finished.
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        await conn.execute("UPDATE fleet_jobs SET state = 'failed', reason = 'incorrect output' WHERE id = $1", second["databaseId"])
    finally:
        await conn.close()
    late = (await call(operator, second["id"]))["data"]["cancelJob"]
    assert (late["ok"], late["alreadyCancelled"], late["job"]["state"]) == (False, False, "FAILED")
    assert late["error"] == f"job {second['databaseId']} already failed: a finished job cannot be cancelled"
    missing = (await call(operator, "987654"))["data"]["cancelJob"]
    assert (missing["ok"], missing["job"]) == (False, None) and "no job 987654" in missing["error"]
    bad = (await call(operator, job["id"], "x" * 501))["errors"][0]
    assert bad["extensions"]["code"] == "BAD_USER_INPUT" and "at most 500" in bad["message"]


async def test_the_operator_scope_cancels_a_sweep_no_token_queued(client, db_url, tiny_workload, engine):
    from kernelindex.db.engine import make_sessionmaker
    from kernelindex.fleet import jobs
    from kernelindex.graphql.node import to_global_id

    async with make_sessionmaker(engine)() as session, session.begin():
        (made,) = await jobs.enqueue_sweep(session, workload_slugs=[tiny_workload], level=None, everything=False,
                                           implementations=["torch_eager"], hardware=["cpu"])
    submitter = await make_token(db_url, "implementations:submit")
    operator = await make_token(db_url, "jobs:cancel", name="")
    variables = {"id": to_global_id("Job", made.job.id)}
    body = (await client.post("/graphql", json={"query": CANCEL, "variables": variables},
                              headers={"Authorization": f"Bearer {submitter}"})).json()
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    done = (await client.post("/graphql", json={"query": CANCEL, "variables": variables},
                              headers={"Authorization": f"Bearer {operator}"})).json()["data"]["cancelJob"]
    assert done["ok"] and done["job"]["state"] == "CANCELLED" and done["job"]["reason"].startswith("cancelled by token ")
