"""Problems that cannot be traced, restarts and interrupts (the truth issue's points 3, 6 and 7):

- a problem whose trace fails keeps its timing entries, at the configuration its constants state (read
  without running it); its page says why it has no semantics and the summary names the module to install;
- a failed trace is not tried again until the file, the tracer or the installed modules change; traced then,
  the problem ends as in a database that traced it at once;
- `seed` between imports changes nothing an unchanged re-import then redoes: it traces nothing, adds no row;
- Ctrl+C stops an import within 2 s with every finished trace kept, and the re-run traces only the rest.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

from tests.ingest.conftest import counts, entry, fetch, snapshot, write_timing

ARGS = ("--revision", "abc1234", "--observed", "2026-01-15")
MISSING = "kernelindex_test_module_that_is_not_installed"
UNTRACEABLE = f'''
import torch
import {MISSING}

class Model(torch.nn.Module):
    def forward(self, x):
        return {MISSING}.mix(x)

batch_size = 8
seq_len = 64 * 2
hidden = seq_len // 4
name = "tiny"

def get_inputs():
    return [torch.randn(batch_size, seq_len, hidden)]

def get_init_inputs():
    return []
'''


def _traced(err: str) -> tuple[int, int]:
    line = next(line for line in err.splitlines() if "problems on the meta device" in line)
    match = re.search(r"tracing (\d+) problems on the meta device(?: \((\d+) unchanged)?", line)
    assert match, err
    return int(match[1]), int(match[2] or 0)


def _untraceable_checkout(checkout):
    (checkout / "KernelBench" / "level3" / "50_Untraceable.py").write_text(UNTRACEABLE)
    write_timing(checkout, "H100_Modal", "torch", {"level3": {"50_Untraceable.py": entry(1.5), "9_ResNet18.py": entry(1.0)}})
    return checkout


def test_a_failed_trace_keeps_its_timings_at_the_stated_configuration(cli, db_url, checkout, capsys):
    _untraceable_checkout(checkout)
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    err = capsys.readouterr().err
    assert f"`pip install {MISSING}` where the importer runs" in err
    revision = fetch(db_url, "SELECT r.semantics, r.semantics_error, r.canonical_bindings, r.canonical_dtype FROM workload_revisions r "
                             "JOIN workloads w ON w.id = r.workload_id WHERE w.slug = 'kernelbench-l3-p50-untraceable'")[0]
    assert revision["semantics"] is None
    assert f"No module named '{MISSING}'" in revision["semantics_error"] and f"pip install {MISSING}" in revision["semantics_error"]
    # The constants as written: 64 * 2 and seq_len // 4 evaluated, the string left out.
    import json

    assert json.loads(revision["canonical_bindings"]) == {"batch_size": 8, "seq_len": 128, "hidden": 32}
    assert revision["canonical_dtype"] == "fp32"
    runs = fetch(db_url, "SELECT r.mean_ms FROM runs r JOIN workloads w ON w.id = r.workload_id "
                         "WHERE w.slug = 'kernelbench-l3-p50-untraceable'")
    assert [r["mean_ms"] for r in runs] == [1.5]

    # Its run is eligible: it counts like any other (the level's medians need it).
    from tests.ingest.test_revisions import _graphql

    data = _graphql(db_url, '{ workload(slug: "kernelbench-l3-p50-untraceable") { eligibleRunCount semanticsError } }')
    assert data["workload"]["eligibleRunCount"] == 1
    assert "pip install" in data["workload"]["semanticsError"]


def test_a_failed_trace_is_retried_only_when_the_modules_change(cli, db_url, checkout, capsys, monkeypatch):
    _untraceable_checkout(checkout)
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    problems, _ = _traced(capsys.readouterr().err)
    before = snapshot(db_url)
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    assert _traced(capsys.readouterr().err) == (0, problems)  # the failure is kept, not traced again
    assert snapshot(db_url) == before

    from kernelindex.ingest import trace_cache

    monkeypatch.setattr(trace_cache, "modules_fingerprint", lambda: "something was installed")
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    assert _traced(capsys.readouterr().err) == (1, problems - 1)  # only the failed one


def _state(db_url: str) -> dict[str, list]:
    """What an import decided, without ids or times: the revisions' semantics and configurations, the live
    runs, the records and the record history."""
    return {
        "revisions": fetch(db_url, "SELECT w.slug, r.semantics, r.semantics_error IS NULL AS explained, r.identity_sha256, "
                                   "r.canonical_bindings, r.canonical_configuration_key FROM workload_revisions r "
                                   "JOIN workloads w ON w.id = r.workload_id ORDER BY w.slug, r.id"),
        "runs": fetch(db_url, "SELECT w.slug, r.configuration_key, r.mean_ms, r.content_sha256 FROM runs r "
                              "JOIN workloads w ON w.id = r.workload_id WHERE r.superseded_at IS NULL ORDER BY 1, 2, 3, 4"),
        "bests": fetch(db_url, "SELECT w.slug, b.configuration_key, b.figure, b.run_count FROM cohort_bests b "
                               "JOIN workloads w ON w.id = b.workload_id ORDER BY 1, 2, 3"),
        "events": fetch(db_url, "SELECT w.slug, e.kind, e.configuration_key FROM record_events e "
                                "JOIN workloads w ON w.id = e.workload_id ORDER BY 1, 2, 3"),
    }


def test_a_problem_traced_only_at_a_later_import_ends_as_if_traced_at_once(db_url, second_db_url, checkout, tmp_path, monkeypatch):
    """The path a new tracer revision takes for a problem the old one could not trace (problem-trace/2 traces the
    Swin models problem-trace/1 failed on; any newly installed module does the same): traced at a later import, it
    gains its semantics, and the index ends as in a database that traced it at once. Both orders: failed then
    traced, and traced at once (a database of its own)."""
    from kernelindex.ingest import trace_cache
    from kernelindex.ingest.kernelbench import import_kernelbench

    _untraceable_checkout(checkout)
    module = tmp_path / "modules"
    module.mkdir()

    def run(url):
        import_kernelbench(url, checkout, revision=ARGS[1], observed=ARGS[3], progress=False)

    run(db_url)  # the module absent: no semantics, the timings at the stated configuration
    (untraced,) = [r for r in _state(db_url)["revisions"] if r["slug"] == "kernelbench-l3-p50-untraceable"]
    assert untraced["semantics"] is None and not untraced["explained"]
    (module / f"{MISSING}.py").write_text("def mix(x):\n    return x * 2\n")
    monkeypatch.syspath_prepend(str(module))
    monkeypatch.setattr(trace_cache, "modules_fingerprint", lambda: "the module was installed")
    run(db_url)
    later = _state(db_url)
    (traced,) = [r for r in later["revisions"] if r["slug"] == "kernelbench-l3-p50-untraceable"]
    assert traced["semantics"] is not None and traced["explained"]

    run(second_db_url)  # the module there from the start: traced at once
    assert _state(second_db_url) == later


def test_seed_between_imports_changes_nothing_a_reimport_redoes(cli, db_url, checkout, capsys):
    _untraceable_checkout(checkout)
    assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
    problems, _ = _traced(capsys.readouterr().err)
    for _ in range(2):
        assert cli("seed") == 0
        before = counts(db_url)
        events = fetch(db_url, "SELECT count(*) AS n FROM record_events")[0]["n"]
        assert cli("ingest", "kernelbench", str(checkout), *ARGS) == 0
        err = capsys.readouterr().err
        assert _traced(err) == (0, problems)
        assert counts(db_url) == before
        assert fetch(db_url, "SELECT count(*) AS n FROM record_events")[0]["n"] == events


def test_a_dry_run_keeps_no_trace(cli, db_url, checkout, capsys):
    assert cli("ingest", "kernelbench", str(checkout), *ARGS, "--dry-run") == 0
    assert fetch(db_url, "SELECT count(*) AS n FROM problem_traces")[0]["n"] == 0


SLOW = '''
import time
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2

dim = {dim}

def get_inputs():
    time.sleep({sleep})
    return [torch.randn(dim)]

def get_init_inputs():
    return []
'''


def test_ctrl_c_stops_within_two_seconds_keeping_finished_traces(db_url, checkout, tmp_path):
    # Problems that take a while each (get_inputs sleeps), traced one at a time, interrupted mid-way.
    level1 = checkout / "KernelBench" / "level1"
    for number in range(10, 16):
        (level1 / f"{number}_Slow{number}.py").write_text(SLOW.format(dim=number, sleep=1.5))
    env = {**os.environ, "KERNELINDEX_DATABASE_URL": db_url}
    cmd = [sys.executable, "-m", "kernelindex.cli", "ingest", "kernelbench", str(checkout), *ARGS, "--levels", "1"]
    taskset = ["taskset", "-c", "0"] if sys.platform == "linux" and subprocess.run(["which", "taskset"], capture_output=True).returncode == 0 else []
    proc = subprocess.Popen([*taskset, *cmd], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if fetch(db_url, "SELECT count(*) AS n FROM problem_traces")[0]["n"] >= 2:
            break
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    else:
        proc.kill()
        raise AssertionError("no trace finished in 180 s")
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    stopped_in = time.monotonic() - sent
    assert proc.returncode == 130, err
    assert stopped_in < 2.0, f"stopped {stopped_in:.2f} s after Ctrl+C"
    kept = fetch(db_url, "SELECT count(*) AS n FROM problem_traces")[0]["n"]
    assert kept >= 2
    assert fetch(db_url, "SELECT count(*) AS n FROM workloads WHERE slug LIKE 'kernelbench-l1-p1_-slow%'")[0]["n"] == 0  # nothing half-written
    # The re-run traces only what was not finished.
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    problems, reused = _traced(done.stderr)
    assert reused == kept and problems + reused == 8  # six slow problems and the fixture's two in level 1
