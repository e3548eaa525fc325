"""perf.loadgen: where a response ends, and the three modes against a live server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from perf.loadgen import _complete_response
from tests.serving import free_port

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("raw, expected", [
    (b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello", "200"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhell", None),
    (b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n", None),
    (b"HTTP/1.1 304 Not Modified\r\netag: \"x\"\r\n\r\n", "304"),
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "200"),
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n", None),
    (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhel", None),
    (b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 2\r\n\r\n{}", "503"),
])
def test_a_response_is_complete_only_when_its_last_byte_is_in(raw, expected):
    assert _complete_response(bytearray(raw)) == expected


def loadgen(url: str, tmp_path: Path, *mode: str) -> tuple[dict, list[list[str]]]:
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps([
        {"name": "page", "weight": 3, "method": "POST", "path": "/graphql",
         "body": {"query": '{ workload(slug: "kernelbench-l3-p9-resnet18") { title } }'}},
        {"name": "twin", "weight": 1, "method": "GET", "path": "/workloads/kernelbench-l3-p9-resnet18.json", "body": None},
        {"name": "csv", "weight": 1, "method": "GET", "path": "/exports/runs.csv", "body": None},
    ]))
    out = tmp_path / "out.csv"
    done = subprocess.run([sys.executable, "-m", "perf.loadgen", url, "--mix", str(mix), *mode, "--out", str(out)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), [line.split(",") for line in out.read_text().splitlines()]


@pytest.fixture
def roomy_server(db_url):
    """The app served as live_server serves it, with room for every export the open loop sends at
    once: the default four slots answer a fifth concurrent runs.csv with 503 (as they should), and on
    a slow machine 100 requests a second, a fifth of them exports, overlap five (CI failed so). This
    test is about the load generator's modes, not the server's shedding (tests/reliability/test_web_bounds.py)."""
    from kernelindex.settings import Settings
    from kernelindex.web.app import create_app
    from tests.conftest import FIXED_NOW
    from tests.serving import serve_in_thread

    settings = Settings(export_concurrency=32)
    with serve_in_thread(create_app(settings, database_url=db_url, clock=lambda: FIXED_NOW)) as url:
        yield url


def test_sequential_closed_and_open_loop_against_the_server(roomy_server, tmp_path):
    live_server = roomy_server
    summary, rows = loadgen(live_server, tmp_path, "--sequential", "30")
    assert summary["completed"] == summary["ok"] == len(rows) == 30
    assert {row[2] for row in rows} <= {"0", "1", "2"} and all(row[3] == "200" for row in rows)

    summary, rows = loadgen(live_server, tmp_path, "--closed", "4", "--seconds", "1")
    assert summary["errors"] == 0 and summary["rate"] > 0 and summary["connections"] == 4, summary

    summary, rows = loadgen(live_server, tmp_path, "--rate", "100", "--seconds", "1.5")
    assert summary["errors"] == summary["dropped"] == 0, summary
    assert summary["completed"] == summary["scheduled"] == len(rows)
    assert 75 <= summary["scheduled"] <= 230  # Poisson with mean 150
    assert all(0 < float(row[1]) < 10 for row in rows)


def test_a_server_that_is_not_there_is_an_error_not_a_hang(tmp_path):
    port = free_port()
    mix = tmp_path / "mix.json"
    mix.write_text(json.dumps([{"name": "x", "weight": 1, "method": "GET", "path": "/", "body": None}]))
    done = subprocess.run([sys.executable, "-m", "perf.loadgen", f"http://127.0.0.1:{port}", "--mix", str(mix),
                           "--sequential", "3"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode != 0
    assert "Connect" in done.stderr or "refused" in done.stderr.lower()


def serve_badly(behaviour: str):
    """A TCP server on a free port that reads each request and then closes the connection
    ("close") or never answers ("silent"); yields its URL."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(65536)
            if behaviour == "close":
                conn.close()
            else:
                held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    return listener, f"http://127.0.0.1:{listener.getsockname()[1]}"


@pytest.mark.parametrize("behaviour, mode", [
    ("close", ("--closed", "2", "--seconds", "1")),
    ("close", ("--sequential", "5")),
    ("silent", ("--closed", "2", "--seconds", "0.5", "--timeout", "0.5")),
    ("silent", ("--rate", "20", "--seconds", "0.5", "--timeout", "0.5")),
])
def test_a_server_that_drops_or_ignores_requests_gives_errors_not_a_hang(tmp_path, behaviour, mode):
    listener, url = serve_badly(behaviour)
    try:
        mix = tmp_path / "mix.json"
        mix.write_text(json.dumps([{"name": "x", "weight": 1, "method": "GET", "path": "/", "body": None}]))
        done = subprocess.run([sys.executable, "-m", "perf.loadgen", url, "--mix", str(mix), *mode],
                              capture_output=True, text=True, cwd=REPO, timeout=100)
    finally:
        listener.close()
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["ok"] == 0 and summary["errors"] > 0
    if "scheduled" in summary:  # the open loop: every request it sent is accounted for
        assert summary["completed"] + summary["dropped"] == summary["scheduled"]
