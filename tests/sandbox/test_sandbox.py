"""Hostile problem files against the tracer's sandbox (benchmarks.sandbox via trace_problems_isolated).

Each fixture below is a valid KernelBench problem that first tries one escape. When the escape is
blocked it raises, so its trace fails; when the escape works it defines ``ESCAPED = 1`` and traces,
so the assertion on its outcome fails. The good problems between them must trace exactly as alone.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

from benchmarks import sandbox
from kernelindex.ingest.problem_trace import ProblemTraceError, trace_problems_isolated

CHECKOUT = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench_checkout" / "KernelBench"
RELU = (CHECKOUT / "level1" / "2_ReLU.py").read_text()
MLP = (CHECKOUT / "level3" / "1_MLP.py").read_text()
NAMESPACES = sys.platform.startswith("linux") and os.geteuid() == 0

TAIL = """
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return x

def get_inputs():
    return [torch.randn(2, 3)]

def get_init_inputs():
    return []
"""


def hostile(attempt: str) -> str:
    """A problem whose import runs ``attempt`` (which sets ``escaped`` true on success)."""
    body = "\n".join("    " + line for line in attempt.strip().splitlines())
    return f"escaped = False\ntry:\n{body}\nexcept Exception as exc:\n    raise RuntimeError(f'blocked: {{exc!r}}')\n" \
           f"if not escaped:\n    raise RuntimeError('blocked')\nESCAPED = 1\n{TAIL}"


def failed(result) -> bool:
    return isinstance(result, ProblemTraceError)


@pytest.fixture
def world_writable(tmp_path):
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o777)
    tmp_path.chmod(0o777)
    return folder


def _sandbox_processes(token: str) -> list[int]:
    """Processes left by a job: the daemons name themselves with token (other tests' sandboxes may run now)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if token.encode() in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


@pytest.mark.skipif(not NAMESPACES, reason="the namespaces level needs root on Linux; see test_rlimits_level_says_what_it_lacks")
def test_hostile_problems_fail_alone_and_the_others_trace(tmp_path, world_writable, pg_url, monkeypatch):
    token = f"ki{os.getpid()}x{time.monotonic_ns() % 10**9}"
    monkeypatch.setenv("KERNELINDEX_DATABASE_URL", pg_url)
    monkeypatch.setenv("KERNELINDEX_API_TOKEN", f"secret-{token}")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    write_targets = [str(world_writable / "w"), str(tmp_path / "w"), f"/tmp/{token}", f"/var/tmp/{token}", f"/dev/shm/{token}"]
    marker = world_writable / "daemon-marker"
    me, my_group = os.getpid(), os.getpgid(0)

    cases = {
        "patch_tracer.py": """
import benchmarks.problems as problems
import kernelindex.ingest.problem_trace as tracer
import torch
fake = lambda *a, **k: {"batch_size": 31337}
problems.configuration_bindings = tracer.configuration_bindings = fake
torch.nn.Module.__call__ = lambda self, *a, **k: torch.zeros(31337)
escaped = False
""",
        "write_outside.py": f"""
for target in {write_targets!r}:
    try:
        with open(target, "w") as handle:
            handle.write("escaped")
    except OSError:
        pass
""",  # inside, /tmp is the job's own tmpfs, so some writes may succeed there: the test looks outside
        "tcp.py": f"""
import socket
socket.create_connection(("127.0.0.1", {port}), timeout=2)
escaped = True
""",
        "database.py": f"""
import asyncio, glob, socket
for path in glob.glob("/tmp/kernelindex-*/**/.s.PGSQL.*", recursive=True):
    if not path.endswith(".lock"):
        try:
            socket.socket(socket.AF_UNIX).connect(path)
            escaped = True
        except OSError:
            pass
import asyncpg
async def read():
    connection = await asyncpg.connect({pg_url!r}, timeout=3)
    return await connection.fetch("SELECT * FROM api_tokens")
asyncio.run(read())
escaped = True
""",
        "environment.py": f"""
import os, glob
escaped = any("KERNELINDEX" in k or {token!r} in v or "postgresql" in v for k, v in os.environ.items())
for path in glob.glob("/proc/*/environ"):
    try:
        escaped = escaped or {token!r}.encode() in open(path, "rb").read()
    except OSError:
        pass
""",
        "daemon.py": f"""
import os, time
for kind in ("marker", "sleeper"):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            if kind == "sleeper":
                os.execv("/bin/sleep", [{token!r}, "97"])
            os.execv("/bin/sh", [{token!r}, "-c", "sleep 3; echo escaped > {marker}"])
        os._exit(0)
time.sleep(0.3)
raise RuntimeError("daemons started")
""",
        "fork_bomb.py": """
import os, time
children = 0
while children < 10000:
    try:
        pid = os.fork()
    except OSError:
        raise RuntimeError(f"fork refused after {children}")
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    children += 1
escaped = True
""",
        "memory.py": "blob = bytearray(64 * 1024**3)\nescaped = True\n",
        "burns_cpu.py": "while True:\n    pass\n",
        "big_file.py": """
chunk = b"x" * 2**20
with open("big", "wb") as handle:
    for _ in range(2048):
        handle.write(chunk)
escaped = True
""",
        "kills.py": f"""
import os, signal
for target in (os.getppid(), {me}, -{my_group}):
    try:
        os.kill(target, signal.SIGKILL)
    except OSError:
        pass
os.kill(-1, signal.SIGKILL)
""",
    }
    items = [(hostile(source), name) for name, source in cases.items()]
    # After the patching problem, and at the end: good problems, in the same sandbox, one job at a time.
    items.insert(1, (RELU, "2_ReLU.py"))
    items += [(RELU, "2_ReLU.py"), (MLP, "1_MLP.py")]
    lines: list[str] = []
    started = time.monotonic()
    results = trace_problems_isolated(items, timeout_s=4, workers=1, report=lines.append)
    assert time.monotonic() - started < 90

    assert lines == [sandbox.Sandbox.describe_level(sandbox.LEVEL_NAMESPACES, [])]
    by_name = {}
    for (_, name), result in zip(items, results):
        assert result.filename == name
        by_name.setdefault(name, []).append(result)
    for name in cases:
        (result,) = by_name[name]
        assert failed(result), f"{name} escaped: {result}"
    assert all(not failed(r) and r.bindings == {"batch_size": 16, "dim": 128} for r in by_name["2_ReLU.py"])
    assert not failed(by_name["1_MLP.py"][0])
    assert by_name["burns_cpu.py"][0].stage == "timeout"
    assert by_name["memory.py"][0].message.startswith("RuntimeError: blocked: MemoryError")
    assert "fork refused after" in by_name["fork_bomb.py"][0].message
    count = int(by_name["fork_bomb.py"][0].message.rsplit("after ", 1)[1].split()[0].strip("'\")"))
    assert count < sandbox.Limits().processes
    assert "Network is unreachable" in by_name["tcp.py"][0].message
    with pytest.raises(BlockingIOError):
        listener.accept()
    for target in write_targets:
        assert not os.path.exists(target), target
    time.sleep(3.5)  # past the daemon's 3 s
    assert not marker.exists()
    assert _sandbox_processes(token) == []
    assert not list(Path("/tmp").glob("sandbox-*"))


def test_forged_and_oversized_results_are_classified(tmp_path):
    forged = """
import os
fds = [int(fd) for fd in os.listdir("/proc/self/fd") if int(fd) > 2]
for fd in fds:
    try:
        os.write(fd, b'{"ok": {"trace": {"filename": "x", "bindings": {"batch_size": 31337}}}}')
    except OSError:
        pass
os._exit(0)
"""
    flood = """
import os
for fd in [int(fd) for fd in os.listdir("/proc/self/fd") if int(fd) > 2]:
    try:
        while True:
            os.write(fd, b"x" * 65536)
    except OSError:
        pass
"""
    results = trace_problems_isolated([(forged, "forged.py"), (flood, "flood.py"), (RELU, "2_ReLU.py")], timeout_s=10)
    assert [r.stage if failed(r) else "ok" for r in results] == ["crash", "crash", "ok"]
    assert "malformed trace" in results[0].message
    assert "result over" in results[1].message
    assert results[2].bindings == {"batch_size": 16, "dim": 128}


def test_rlimits_level_says_what_it_lacks():
    with sandbox.Sandbox(level=sandbox.LEVEL_RLIMITS, limits=sandbox.Limits(wall_s=5)) as box:
        assert box.level == sandbox.LEVEL_RLIMITS
        assert "NOT guaranteed" in box.describe() and "network isolation" in box.describe()
        outcomes = box.map("os:getcwd", [None]), box.map("os:getenv", ["KERNELINDEX_DATABASE_URL", "PATH"])
    # os.getcwd(None) raises: the job's exception is its outcome, not the sandbox's
    assert outcomes[0][0].status == "raised"
    assert [o.status for o in outcomes[1]] == ["ok", "ok"]
    assert outcomes[1][0].value is None and outcomes[1][1].value == "/usr/bin:/bin"


def test_result_parsing_is_strict():
    assert sandbox.parse_result('{"ok": [1, 2]}').value == [1, 2]
    assert sandbox.parse_result('{"raised": "ValueError: x"}').status == "raised"
    for text in ('{"ok": NaN}', '[1]', '{"ok": 1, "raised": "x"}', "garbage", '{"ok": "' + "x" * 100 + '"}'):
        assert sandbox.parse_result(text, result_bytes=64).status == "bad-result", text


@pytest.mark.skipif(not NAMESPACES, reason="the namespaces level needs root on Linux")
def test_a_dead_zygote_is_replaced():
    box = sandbox.Sandbox(limits=sandbox.Limits(wall_s=30))
    zygote = box._process
    assert zygote is not None
    os.kill(zygote.pid, signal.SIGKILL)  # the zygote dies; the next job starts a new one
    zygote.wait()
    outcome = box.run("os:getenv", "PATH")
    assert box._process is not None and box._process.pid != zygote.pid
    box.close()
    assert outcome.status == "ok" and outcome.value == "/usr/bin:/bin"


@pytest.mark.parametrize("level", ["auto", sandbox.LEVEL_RLIMITS])
def test_a_job_knows_its_user_name_and_temporary_folder(level):
    # torch.compile names its cache folder after getpass.getuser(), which asks the passwd database when the
    # environment names no user: the job's uid has no entry there, so every inductor job failed on a GPU.
    with sandbox.Sandbox(level=level, limits=sandbox.Limits(wall_s=30)) as box:
        outcome = box.run("builtins:eval", "[__import__('getpass').getuser(), __import__('tempfile').gettempdir(),"
                                           " __import__('os').path.expanduser('~')]")
    assert outcome.status == "ok", outcome.detail
    user, temporary, home = outcome.value
    assert user == sandbox.SANDBOX_USER
    assert temporary == home != "/nonexistent"  # the job's own scratch folder


def test_jobs_run_at_once_up_to_the_workers_and_results_keep_input_order():
    with sandbox.Sandbox(workers=2, limits=sandbox.Limits(wall_s=30)) as box:
        finished: list[int] = []
        started = time.monotonic()
        outcomes = box.map("time:sleep", [1.5, 0.3, 0.3, 0.3], on_done=lambda index, _: finished.append(index))
        wall = time.monotonic() - started
    assert [o.status for o in outcomes] == ["ok"] * 4
    assert sorted(finished) == [0, 1, 2, 3] and finished[-1] == 0  # the long first job finished last
    assert wall < 2.2, f"{wall:.2f} s: one at a time would take 2.4 s of sleeping alone"


def test_parallel_traces_come_back_in_input_order_whichever_finished_first():
    # The first problem takes longest; each problem's own dim says which one a result is.
    items = [(f"import time\ntime.sleep({delay})\n" + RELU.replace("dim = 128", f"dim = {dim}"), f"{dim}_ReLU.py")
             for dim, delay in ((101, 1.5), (102, 0), (103, 0), (104, 0.2), (105, 0))]
    finished: list[str] = []
    parallel = trace_problems_isolated(items, timeout_s=30, workers=2, on_traced=finished.append)
    one_at_a_time = trace_problems_isolated(items, timeout_s=30, workers=1)
    assert [r.filename for r in parallel] == [name for _, name in items]
    assert [r.bindings["dim"] for r in parallel] == [101, 102, 103, 104, 105]
    assert sorted(finished) == sorted(name for _, name in items) and finished[-1] == "101_ReLU.py"
    assert [r.to_json() for r in parallel] == [r.to_json() for r in one_at_a_time]


def test_a_job_imports_from_a_checkout_under_tmp_that_the_zygote_never_loaded(tmp_path, monkeypatch):
    # A clean clone in /tmp (CI's) keeps its code and venv there, under the mount the job's private /tmp
    # covers: those import folders are put back read-only, so a lazy import inside a job still works,
    # and the rest of /tmp stays hidden.
    package = tmp_path / "checkout" / "lazy_probe_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "late.py").write_text(
        "import os\n\ndef look(path):\n    return [os.path.exists(path), __file__]\n", encoding="utf-8")
    secret = tmp_path / "beside-the-checkout.txt"
    secret.write_text("not for the job", encoding="utf-8")
    os.chmod(tmp_path, 0o755)
    monkeypatch.syspath_prepend(str(tmp_path / "checkout"))
    with sandbox.Sandbox(limits=sandbox.Limits(wall_s=30)) as box:
        outcome = box.run("lazy_probe_pkg.late:look", str(secret))
        level = box.level
    assert outcome.status == "ok", outcome.detail
    exists, where = outcome.value
    assert where.startswith(str(tmp_path / "checkout"))
    if level == sandbox.LEVEL_NAMESPACES:
        assert exists is False  # only the import folder came back, not its neighbours


@pytest.mark.parametrize("level", ["auto", sandbox.LEVEL_RLIMITS])
def test_a_running_job_is_stopped_on_request_and_the_sandbox_goes_on(level):
    """Sandbox.stop_running (a fleet job cancelled while it runs): from another thread, the job and what it
    started are killed at once and it ends 'cancelled'; the zygote stays, and the next job runs as usual."""
    import threading

    with sandbox.Sandbox(level=level, limits=sandbox.Limits(wall_s=60)) as box:
        assert box.stop_running() == 0  # nothing running: nothing to stop
        zygote = box._process
        stopper = threading.Timer(0.5, box.stop_running)
        stopper.start()
        outcome = box.run("time:sleep", 50)  # would be "ok" after 50 s if it were not stopped
        stopper.join()
        assert outcome.status == "cancelled" and not outcome.ok, outcome
        assert sandbox.describe_sandbox_failure(outcome) == "cancelled: stopped while it ran"
        assert box.stop_running() == 0  # a stop that comes late reaches no later job
        assert box.run("os:getenv", "PATH") == sandbox.Outcome("ok", "/usr/bin:/bin", "")
        assert box._process is zygote
