"""A kernel submitted through the MCP server (stdio, the token in KERNELINDEX_TOKEN), measured by a CPU
worker, and followed through the MCP server over both transports until its run is there."""

from __future__ import annotations

from tests.api.helpers import make_token
from tests.fleet.conftest import candidate
from tests.mcp.clients import call, http_session, stdio_session


async def test_submit_then_a_cpu_worker_then_follow(db_url, tiny_workload, start_worker, live_server):
    token = await make_token(db_url, "implementations:submit")
    arguments = {"workload": tiny_workload, "source": candidate("honest"), "title": "fair relu", "hardware": "cpu",
                 "filename": "honest.py", "licence": "MIT"}
    async with stdio_session(db_url, token) as session:
        submitted = await call(session, "submit_kernel", arguments)
        assert submitted["ok"] and submitted["created"] and submitted["problems"] == []
        (job,) = submitted["jobs"]
        assert (job["state"], job["hardware"], job["workload"]) == ("QUEUED", "cpu", {"slug": tiny_workload})
        queued = await call(session, "follow_job", {"job_id": job["id"]})
        assert queued["state"] == "QUEUED" and queued["run"] is None and queued["attempts"] == 0
        again = await call(session, "submit_kernel", arguments)
        assert again["ok"] and not again["created"] and again["jobs"][0]["id"] == job["id"]

    worker = start_worker("--until-idle", "--job-timeout", "60", name="mcp-worker")
    out, _ = worker.communicate(timeout=240)
    assert worker.returncode == 0, out

    async with http_session(live_server) as session:
        done = await call(session, "follow_job", {"job_id": str(job["databaseId"])})
    async with stdio_session(db_url) as session:
        assert await call(session, "follow_job", {"job_id": job["id"]}) == done
    assert done["state"] == "PASSED" and done["reason"] is None and done["worker"] == "mcp-worker"
    run = done["run"]
    assert run["status"] == "PASSED" and run["evidence"] == "MEASURED" and run["trustLevel"] == "VERIFIED"
    assert run["meanMs"] > 0 and run["implementation"]["title"] == "fair relu" and run["implementation"]["licence"] == "MIT"
    assert run["environment"]["hardware"]["sku"] and run["configuration"]["display"]
    assert done["baselineRun"]["implementation"] == {"slug": "torch_eager"} and done["baselineRun"]["status"] == "PASSED"
