"""`kernelindex submit`, `bench --enqueue` and `jobs`: one line per job, clear refusals, exit statuses."""

from __future__ import annotations

import json

import pytest

from tests.fleet.conftest import FIXTURES


def test_submit_queues_one_job_and_a_repeat_is_the_same_job(cli, tiny_workload, capsys):
    args = ("submit", "--workload", tiny_workload, "--file", str(FIXTURES / "honest.py"), "--hardware", "cpu",
            "--title", "fair relu", "--licence", "MIT", "--json")
    assert cli(*args) == 0
    out, err = capsys.readouterr()
    job = json.loads(out)
    assert (job["state"], job["hardware"], job["kind"], job["attempts"]) == ("queued", "cpu", "submission", 0)
    assert (job["workload"], job["title"]) == (tiny_workload, "fair relu")
    assert f"queued job {job['id']}  queued  {tiny_workload} × {job['implementation']} 'fair relu'  on cpu" in err
    assert "1 job(s) queued, 0 already asked for" in err
    assert cli(*args) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["id"] == job["id"] and "already asked: job" in err and "0 job(s) queued, 1 already asked for" in err


def test_submit_refuses_what_is_not_a_candidate_in_one_line(cli, tiny_workload, tmp_path, capsys):
    broken = tmp_path / "broken.py"
    broken.write_text("class ModelNew(:\n", encoding="utf-8")
    assert cli("submit", "--workload", tiny_workload, "--file", str(broken), "--hardware", "cpu") == 1  # the file's problem
    assert "error: broken.py, line 1: not valid Python" in capsys.readouterr().err
    assert cli("submit", "--workload", tiny_workload, "--file", str(tmp_path / "missing.py"), "--hardware", "cpu") == 2
    assert "error: no such file" in capsys.readouterr().err
    assert cli("submit", "--workload", tiny_workload, "--file", str(FIXTURES / "honest.py"), "--hardware", "NVIDIA Z1") == 2
    assert "no hardware 'NVIDIA Z1' in the catalogue" in capsys.readouterr().err
    assert cli("jobs", "--json") == 0
    out, err = capsys.readouterr()
    assert out == "" and "no jobs" in err


def test_bench_enqueue_fans_out_and_jobs_lists_them(cli, tiny_workload, capsys):
    args = ("bench", "--enqueue", "--workload", tiny_workload, "--impl", "torch_eager", "--impl", "torch_compile_inductor",
            "--hardware", "cpu", "--hardware", "H200")
    assert cli(*args) == 0
    assert "4 job(s) queued, 0 already asked for" in capsys.readouterr().err
    assert cli(*args) == 0
    assert "0 job(s) queued, 4 already asked for" in capsys.readouterr().err
    assert cli("jobs", "--json", "--hardware", "cpu") == 0
    out, err = capsys.readouterr()
    listed = [json.loads(line) for line in out.splitlines()]
    assert sorted(j["implementation"] for j in listed) == ["torch_compile_inductor", "torch_eager"]
    assert "2 job(s): 2 queued, 0 running, 0 passed, 0 failed, 0 cancelled; 0/2 finished" in err  # of the filter
    assert cli("jobs") == 0
    lines = capsys.readouterr().out.splitlines()
    # Each line names what it measures: the workload × the implementation, then where.
    assert sorted(line.split("  ")[1:4] for line in lines) == sorted(
        ["queued", f"{tiny_workload} × {impl}", f"on {hardware}"]
        for impl in ("torch_compile_inductor", "torch_eager") for hardware in ("NVIDIA H200 SXM 141GB", "cpu"))


def test_bench_hardware_without_enqueue_is_refused(cli, tiny_workload, capsys):
    assert cli("bench", "--workload", tiny_workload, "--hardware", "cpu") == 2
    assert "use it with --enqueue" in capsys.readouterr().err
    assert cli("bench", "--enqueue", "--workload", tiny_workload, "--impl", "my_kernel", "--hardware", "cpu") == 2
    assert "unknown implementation(s) my_kernel" in capsys.readouterr().err


def test_jobs_follow_shows_progress_until_nothing_is_queued_or_running(cli, db_url, tiny_workload, capsys):
    import asyncio
    import threading

    import asyncpg

    from kernelindex.db.urls import to_libpq_url

    assert cli("bench", "--enqueue", "--workload", tiny_workload, "--impl", "torch_eager", "--impl",
               "torch_compile_inductor", "--hardware", "cpu") == 0
    capsys.readouterr()

    async def finish_them() -> None:
        conn = await asyncpg.connect(to_libpq_url(db_url))
        try:
            for state in ("passed", "failed"):
                await asyncio.sleep(0.5)
                await conn.execute("UPDATE fleet_jobs SET state = $1 WHERE id = (SELECT min(id) FROM fleet_jobs "
                                   "WHERE state = 'queued')", state)
        finally:
            await conn.close()

    worker = threading.Thread(target=lambda: asyncio.run(finish_them()))
    worker.start()
    try:
        assert cli("jobs", "--follow", "--every", "0.2") == 0
    finally:
        worker.join()
    err = capsys.readouterr().err
    assert "jobs finished: 2/2 (100%)" in err and "all finished: 0 queued, 0 running, 1 passed, 1 failed" in err


def test_jobs_cancel_cancels_queued_jobs_once_and_refuses_finished_ones(cli, db_url, tiny_workload, capsys):
    import asyncio

    import asyncpg

    from kernelindex.db.urls import to_libpq_url

    assert cli("bench", "--enqueue", "--workload", tiny_workload, "--impl", "torch_eager", "--impl",
               "torch_compile_inductor", "--hardware", "cpu") == 0
    capsys.readouterr()
    assert cli("jobs", "--json") == 0
    queued, finished = sorted(json.loads(line)["id"] for line in capsys.readouterr().out.splitlines())

    assert cli("jobs", "cancel", str(queued), "--reason", "wrong configuration") == 0
    err = capsys.readouterr().err
    assert f"cancelled job {queued} (it was queued)" in err
    assert f"job {queued}  cancelled  {tiny_workload} × " in err and "— cancelled by " in err
    assert "(kernelindex jobs cancel): wrong configuration" in err

    assert cli("jobs", "cancel", str(queued)) == 0  # twice: the first one stands
    assert f"job {queued} was already cancelled (cancelled by " in capsys.readouterr().err

    async def finish() -> None:
        conn = await asyncpg.connect(to_libpq_url(db_url))
        try:
            await conn.execute("UPDATE fleet_jobs SET state = 'passed' WHERE id = $1", finished)
        finally:
            await conn.close()

    asyncio.run(finish())
    assert cli("jobs", "cancel", str(finished), str(queued)) == 1  # refused, as input is; the other stands
    err = capsys.readouterr().err
    assert f"error: job {finished} already passed: a finished job cannot be cancelled" in err
    assert cli("jobs", "cancel", "424242") == 2
    assert "no job 424242" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:  # argparse's own exit, in-process
        cli("jobs", "cancel", "nine")
    assert exited.value.code == 2 and "not a job id: 'nine'" in capsys.readouterr().err
    assert cli("jobs", "--json") == 0
    states = {j["id"]: (j["state"]) for j in map(json.loads, capsys.readouterr().out.splitlines())}
    assert states == {queued: "cancelled", finished: "passed"}
