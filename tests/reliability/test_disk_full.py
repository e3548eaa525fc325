"""A database server that runs short of a resource (its disk full, above all) is an outage with a
cause: the API answers 503 saying what is wrong, never INTERNAL, and a command prints one line and
exits 2, never a traceback.

PostgreSQL is made to fail for real: a trigger raises SQLSTATE 53100 (disk_full) with the message a
full disk gives, on the insert the request or command makes.
"""

from __future__ import annotations

import asyncio
import errno
import subprocess
import sys

import asyncpg
import pytest

from kernelindex.db.errors import describe_failure, is_unavailable, refusal_reason, shortage, unavailable_message
from kernelindex.db.urls import to_libpq_url
from tests.api.helpers import synthetic_records
from tests.ingest.conftest import execute
from tests.reliability.helpers import make_token, table_counts
from tests.serving import free_port

SUBMIT = "mutation($records: [JSON!]!) { submitRuns(records: $records) { ok inserted problems { index key reason } } }"
RETRACT = "mutation($id: ID!, $reason: String!) { retractRun(id: $id, reason: $reason) { ok error } }"
PG_DISK_FULL = 'could not extend file "base/16384/16402": No space left on device'


async def make_disk_full(db_url: str, table: str, *, at_commit: bool = False) -> None:
    """Every insert into `table` fails as on a full disk: at once, or (at_commit) when the
    transaction commits, as a WAL write would."""
    function = f"""
        CREATE FUNCTION test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION '{PG_DISK_FULL}' USING ERRCODE = 'disk_full', HINT = 'Check free disk space.';
        END $$"""
    if at_commit:
        trigger = (f"CREATE CONSTRAINT TRIGGER test_disk_full AFTER INSERT OR UPDATE ON {table} "
                   "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION test_disk_full()")
    else:
        trigger = f"CREATE TRIGGER test_disk_full BEFORE INSERT OR UPDATE ON {table} FOR EACH ROW EXECUTE FUNCTION test_disk_full()"
    await execute(db_url, function, trigger)


async def caught(db_url: str, sqlstate: str) -> BaseException:
    """The exception SQLAlchemy raises when PostgreSQL raises `sqlstate`."""
    from sqlalchemy import text

    from kernelindex.db.engine import in_own_transaction

    async def work(session):
        await session.execute(text(f"DO $$ BEGIN RAISE EXCEPTION 'test' USING ERRCODE = '{sqlstate}'; END $$"))

    try:
        await in_own_transaction(db_url, work)
    except Exception as exc:
        return exc
    raise AssertionError("no error")


# -- the classifier -----------------------------------------------------------------------------


@pytest.mark.parametrize(("sqlstate", "words"), [
    ("53100", "the database server's disk is full"),
    ("53200", "the database server is out of memory"),
    ("53300", "the database server has too many connections"),
])
async def test_insufficient_resources_are_an_outage_with_their_cause(db_url, sqlstate, words):
    exc = await caught(db_url, sqlstate)
    assert is_unavailable(exc)
    assert refusal_reason(exc) is None  # not the input's fault: an ingest must not reject records for it
    assert shortage(exc) == words
    assert describe_failure(exc) == f"{words}: test"
    assert unavailable_message(exc).startswith(words[0].upper() + words[1:])


async def test_other_database_errors_are_not_outages(db_url):
    exc = await caught(db_url, "42P01")  # undefined_table: a bug, stays internal
    assert not is_unavailable(exc) and shortage(exc) is None and unavailable_message(exc) is None


def test_a_full_local_disk_is_an_outage_with_its_cause():
    full = OSError(errno.ENOSPC, "No space left on device")
    assert is_unavailable(full) and shortage(full) == "the disk is full"
    assert describe_failure(OSError(errno.ENOSPC, "No space left on device", "/data/out.jsonl")) == \
        "cannot write /data/out.jsonl: the disk is full"
    assert describe_failure(PermissionError(errno.EACCES, "Permission denied", "/data/runs.jsonl")) == \
        "/data/runs.jsonl: Permission denied"


# -- the API ------------------------------------------------------------------------------------


async def test_submit_runs_on_a_full_disk_is_a_503_that_says_so(client, db_url):
    token = await make_token(db_url, "runs:write")
    before = await table_counts(db_url)
    await make_disk_full(db_url, "runs")
    response = await client.post("/graphql", json={"query": SUBMIT, "variables": {"records": synthetic_records(2)}},
                                 headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["data"] is None
    [error] = body["errors"]
    assert error["extensions"]["code"] == "SERVICE_UNAVAILABLE"
    assert error["extensions"]["request_id"] == response.headers["x-request-id"]
    assert error["message"].startswith("The database server's disk is full"), error["message"]
    assert "Unexpected error" not in response.text and "INTERNAL" not in response.text
    assert await table_counts(db_url) == before  # nothing of the call was written


async def test_a_full_disk_at_commit_is_a_503_not_a_500(client, db_url):
    """The write itself succeeds and the commit (at response start) fails, as a WAL write on a full
    disk does: the middleware's commit path must call that an outage too."""
    token = await make_token(db_url, "runs:retract")
    before = await table_counts(db_url)
    await make_disk_full(db_url, "runs", at_commit=True)
    response = await client.post("/graphql", json={"query": RETRACT, "variables": {"id": "1", "reason": "disk full"}},
                                 headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 503, response.text
    assert [e["extensions"]["code"] for e in response.json()["errors"]] == ["SERVICE_UNAVAILABLE"]
    assert "disk is full" in response.json()["errors"][0]["message"]  # the cause, as on the resolver path
    assert await table_counts(db_url) == before


# -- the commands -------------------------------------------------------------------------------


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("kernelindex: error:")]


def test_token_create_on_a_full_disk_is_one_line_and_exit_2(cli, db_url, capsys):
    asyncio.run(make_disk_full(db_url, "api_tokens"))
    code = cli("token", "create", "--scope", "runs:write", "--name", "ci")
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""  # no token is shown for a token that was not stored
    assert "Traceback" not in err
    assert error_lines(err) == [f"kernelindex: error: the database server's disk is full: {PG_DISK_FULL}"]
    assert asyncio.run(table_counts(db_url, ("api_tokens",)))["api_tokens"] == 0


@pytest.mark.parametrize("command", [
    ("token", "create", "--scope", "runs:write"),
    ("token", "list"),
    ("token", "revoke", "1"),
    ("seed",),
    ("migrate",),
    ("bench", "--workload", "kernelbench-l3-p9-resnet18", "--device", "cpu"),
], ids=lambda c: " ".join(c[:2]))
def test_commands_without_a_database_say_so_in_one_line(cli, monkeypatch, capsys, command):
    from kernelindex.settings import get_settings

    monkeypatch.setenv("KERNELINDEX_DATABASE_URL", f"postgresql://postgres@127.0.0.1:{free_port()}/kernelindex")
    get_settings.cache_clear()
    code = cli(*command)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert "Traceback" not in err and out == ""
    [line] = error_lines(err)
    assert "cannot reach PostgreSQL" in line, line


def test_a_full_disk_under_stdout_is_one_line_and_exit_2():
    """`kernelindex export-schema > file` on a full disk (/dev/full answers every write with ENOSPC)."""
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "kernelindex.cli", "export-schema"], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == ["kernelindex: error: cannot write standard output: the disk is full"]


def test_a_closed_stdout_is_quiet():
    """`kernelindex export-schema | head -1`: the reader goes away; no error and no traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "kernelindex.cli", "export-schema"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read() if proc.stderr else ""
    assert proc.wait(timeout=60) in (0, 141), err  # 0 when the schema fitted in the pipe before it closed
    assert err == ""


def test_a_file_that_cannot_be_written_or_read_is_one_line(cli, db_url, tmp_path, capsys, monkeypatch):
    from pathlib import Path

    problem = tmp_path / "level1" / "1_Square_matrix_multiplication_.py"
    problem.parent.mkdir()
    problem.write_text("import torch\n")
    missing = tmp_path / "no-such-folder" / "runs.jsonl"
    assert cli("bench", "--file", str(problem), "--out", str(missing), "--device", "cpu") == 2
    out, err = capsys.readouterr()
    assert error_lines(err) == [f"kernelindex: error: cannot write run records to {missing}: No such file or directory"]
    assert "Traceback" not in err

    # Permission denied on a file (we may be root, for whom no mode denies it: the refusal is made here).
    records = tmp_path / "runs.jsonl"
    records.write_text("{}\n")
    real_open = Path.open

    def refusing_open(self, *args, **kwargs):
        if self == records:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refusing_open)
    assert cli("ingest", "runs", str(records)) == 2
    err = capsys.readouterr().err
    assert error_lines(err) == [f"kernelindex: error: {records}: cannot read it: Permission denied"]


def test_an_unexpected_error_is_one_line_and_debug_shows_the_traceback(cli, monkeypatch, capsys):
    from kernelindex.cli import tokens

    async def broken(session):
        raise RuntimeError("something we did not foresee")

    monkeypatch.setattr(tokens.auth, "list_tokens", broken)
    assert cli("token", "list") == 2
    err = capsys.readouterr().err
    assert error_lines(err) == ["kernelindex: error: unexpected RuntimeError: something we did not foresee "
                                "(run with --debug, or KERNELINDEX_TRACEBACK=1, to see where)"]
    monkeypatch.delenv("KERNELINDEX_TRACEBACK", raising=False)
    with pytest.raises(RuntimeError, match="something we did not foresee"):
        cli("--debug", "token", "list")


def test_interrupted_and_terminated_commands(db_url, tmp_path):
    """Ctrl+C (SIGINT) and SIGTERM during a command: one line, 130 and 143, no traceback, no spool
    file of stdin left behind."""
    import os
    import signal
    import time

    env = {**os.environ, "KERNELINDEX_DATABASE_URL": db_url, "TMPDIR": str(tmp_path)}
    for sig, code, line in [(signal.SIGINT, 130, "kernelindex: interrupted"),
                            (signal.SIGTERM, 143, "kernelindex: terminated (SIGTERM)")]:
        # `ingest runs -` waits on stdin, which stays open: the signal comes while it reads.
        proc = subprocess.Popen([sys.executable, "-m", "kernelindex.cli", "ingest", "runs", "-"], env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while not list(tmp_path.glob("*.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.05)  # the spool file exists once it is reading
        assert list(tmp_path.glob("*.jsonl")), "never started reading stdin"
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == code, err
        assert err.strip().splitlines() == [line]
        assert list(tmp_path.glob("*.jsonl")) == [], "the spool file of stdin was left behind"



def test_a_token_that_cannot_be_shown_says_how_to_undo_it(db_url):
    """`token create > file` on a full disk: the token is stored before it is shown, so the operator
    is told which one to revoke."""
    import os

    env = {**os.environ, "KERNELINDEX_DATABASE_URL": db_url}
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "kernelindex.cli", "token", "create", "--scope", "runs:write"],
                              env=env, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    rows = asyncio.run(fetch_tokens(db_url))
    assert len(rows) == 1
    assert error_lines(done.stderr) == [
        f"kernelindex: error: cannot write standard output: the disk is full: token {rows[0]} was created but cannot "
        f"be shown; revoke it (`kernelindex token revoke {rows[0]}`) and create another"]
    assert "Traceback" not in done.stderr


async def fetch_tokens(db_url: str) -> list[int]:
    conn = await asyncpg.connect(to_libpq_url(db_url))
    try:
        return [r["id"] for r in await conn.fetch("SELECT id FROM api_tokens")]
    finally:
        await conn.close()
