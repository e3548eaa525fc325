"""`kernelindex serve --workers N`: N processes behind one port, every one on the same database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil

from tests.serving import free_port

REPO = Path(__file__).resolve().parents[2]
PAGE = '{ workload(slug: "kernelbench-l3-p9-resnet18") { title eligibleRunCount } }'


def test_two_workers_serve_the_same_database(db_url, tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KERNELINDEX_")}
    env["KERNELINDEX_DATABASE_URL"] = db_url
    log = open(tmp_path / "serve.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "kernelindex.cli", "serve", "--port", str(port), "--workers", "2",
                             "--log-level", "warning"], env=env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        workers: list[psutil.Process] = []
        while time.monotonic() < deadline:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            # uvicorn's workers are multiprocessing children (its resource tracker is one too, not a worker).
            workers = [p for p in psutil.Process(proc.pid).children(recursive=True)
                       if any("spawn_main" in part for part in p.cmdline())]
            try:
                if len(workers) == 2 and httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        else:
            raise AssertionError(f"no two healthy workers in 90 s: {(tmp_path / 'serve.log').read_text()}")
        # Many connections, so that both workers answer some; each must give the same answer.
        answers = set()
        for _ in range(12):
            with httpx.Client(base_url=url, timeout=10) as client:
                body = client.post("/graphql", json={"query": PAGE}).json()
            assert "errors" not in body, body
            answers.add((body["data"]["workload"]["title"], body["data"]["workload"]["eligibleRunCount"]))
        assert len(answers) == 1
        assert len({w.pid for w in workers}) == 2
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_workers_must_be_positive(cli, capsys):
    assert cli("serve", "--workers", "0") != 0
    assert "--workers must be 1 or more, got 0" in capsys.readouterr().err
