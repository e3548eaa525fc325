"""Which KernelBench an import takes, and what it refuses (the truth issue's points 1, 2, 9 and 10):

- the revision comes from git only when PATH is the top level of a git checkout; a snapshot lying inside
  another repository needs --revision and --observed, and nothing is written without them;
- every summary and dry run states the revision, its date and where they came from;
- a folder without KernelBench's layout, the inner KernelBench/ folder, or --levels matching nothing is a
  fatal error (exit 2) saying what was expected and what was found;
- `ingest runs` handed another source's file names it and the command to use (exit 2), writing nothing;
- `serve` on a busy port says so before it announces anything (exit 2).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess

import pytest

from kernelindex.ingest.formats import foreign_format
from tests.ingest.conftest import SHARED_TIMING, counts, entry, write_timing

ARGS = ("--revision", "abc1234", "--observed", "2026-01-15")


def _git(cwd, *args):
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@e", "GIT_AUTHOR_DATE": "2001-02-03T04:05:06Z",
                        "GIT_COMMITTER_DATE": "2001-02-03T04:05:06Z", "PATH": "/usr/bin:/bin"})


@pytest.fixture
def nested(tmp_path, checkout):
    """The checkout as a plain folder inside some other git repository (a project keeping a snapshot)."""
    outer = tmp_path / "project"
    outer.mkdir()
    inner = outer / "vendor" / "kernelbench"
    inner.parent.mkdir()
    shutil.move(str(checkout), inner)
    _git(outer, "init", "-q")
    _git(outer, "add", "-A")
    _git(outer, "commit", "-q", "-m", "snapshot")
    return inner


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@needs_git
def test_folder_inside_another_repository_needs_flags(cli, db_url, nested, capsys):
    before = counts(db_url)
    assert cli("ingest", "kernelbench", str(nested)) == 2
    err = capsys.readouterr().err
    assert "lies inside the git repository at" in err and "pass --revision and --observed" in err
    assert counts(db_url) == before  # the enclosing repository's commit was never taken as KernelBench's


@needs_git
def test_top_level_checkout_takes_git_and_says_so(cli, db_url, checkout, capsys):
    _git(checkout, "init", "-q")
    _git(checkout, "add", "-A")
    _git(checkout, "commit", "-q", "-m", "upstream")
    head = subprocess.run(["git", "-C", str(checkout), "log", "-1", "--format=%h", "--abbrev=7"],
                          capture_output=True, text=True, check=True).stdout.strip()
    assert cli("ingest", "kernelbench", str(checkout), "--levels", "1", "--dry-run") == 0
    err = capsys.readouterr().err
    assert f"would import KernelBench baseline timings (https://github.com/ScalingIntelligence/KernelBench) at revision {head}, " \
           "observed 2001-02-03 (from git HEAD of PATH and the date of git HEAD)" in err


def test_summary_states_revision_date_and_source(cli, checkout, capsys):
    write_timing(checkout, "H100_Modal", "torch", {"level1": {"2_ReLU.py": entry(0.05)}})
    assert cli("ingest", "kernelbench", str(checkout), *ARGS, "--levels", "1") == 0
    assert "imported KernelBench baseline timings (https://github.com/ScalingIntelligence/KernelBench) at revision abc1234, " \
           "observed 2026-01-15 (from --revision and --observed)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("make", "args", "expected"),
    [
        (lambda root: root / "missing", (), "no such folder"),
        (lambda root: root / "KernelBench", (), "this is the KernelBench/ folder inside a checkout; pass the checkout itself"),
        (lambda root: root.parent, (), "not a KernelBench checkout: expected KernelBench/level1 … level4 (and results/timing/), found"),
        (lambda root: root, ("--levels", "5"), "--levels 5: KernelBench has levels 1, 2, 3, 4"),
        (lambda root: root, ("--levels", "x"), "expected comma-separated level numbers"),
        (lambda root: root, ("--observed", "yesterday", "--revision", "abc"), "--observed: not a date (YYYY-MM-DD): 'yesterday'"),
    ],
    ids=["missing", "inner folder", "unrelated folder", "unknown level", "bad levels", "bad date"],
)
def test_wrong_folders_and_filters_are_fatal(cli, db_url, checkout, capsys, make, args, expected):
    before = counts(db_url)
    flags = args if "--observed" in args else (*ARGS, *args)
    assert cli("ingest", "kernelbench", str(make(checkout)), *flags) == 2
    assert expected in capsys.readouterr().err
    assert counts(db_url) == before


def test_levels_present_but_none_asked_for_is_fatal(cli, checkout, capsys):
    shutil.rmtree(checkout / "KernelBench" / "level4")
    assert cli("ingest", "kernelbench", str(checkout), *ARGS, "--levels", "4") == 2
    assert "--levels 4: none of them is in" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("head", "named"),
    [
        (b'{\n    "level1": {\n        "1_Square_matrix_multiplication_.py": {\n            "mean": 2.66', "ingest kernelbench CHECKOUT"),
        (b'{"level3": {"9_ResNet18.py": {"mean": 1.1}}}', "ingest kernelbench CHECKOUT"),
        (b"\x28\xb5\x2f\xfd\x00\x00", "zstd-compressed"),
        (b"\x28\xb5\x2f\xfd\x00\x00", "kernelindex ingest kernelindex-export FILE"),
        (b'{"table": "sources", "row": {"id": "gpu-mode"}}\n{"table": "x", "row": {}}', "kernelindex.com catalogue export"),
        (b'{"table": "sources", "row": {"id": "gpu-mode"}}\n{"table": "x", "row": {}}', "kernelindex ingest kernelindex-export FILE"),
        (b"kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,x_value,y_value_50\n",
         "Liger-Kernel's benchmark results"),
        (b"kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,x_value,y_value_50\n",
         "kernelindex ingest liger FILE --revision REV --observed"),
    ],
    ids=["timing pretty", "timing one line", "zstd", "zstd command", "catalogue lines", "catalogue command", "liger csv",
         "liger command"],
)
def test_foreign_formats_are_named(head, named):
    found = foreign_format(head)
    assert found is not None and named in found.message("f")


def test_run_records_are_not_foreign():
    from kernelindex.ingest.seed import SEEDS_DIR

    assert foreign_format((SEEDS_DIR / "runs.jsonl").read_bytes()[:65536]) is None
    assert foreign_format(b"") is None and foreign_format(b"not json\n") is None


def test_ingest_runs_refuses_a_timing_file_naming_the_command(cli, db_url, tmp_path, capsys):
    timing = tmp_path / "baseline_time_torch.json"
    source = next(SHARED_TIMING.glob("*/baseline_time_torch.json"), None) if SHARED_TIMING.is_dir() else None
    timing.write_text(source.read_text() if source else json.dumps({"level1": {"2_ReLU.py": entry(0.05)}}, indent=4))
    before = counts(db_url)
    assert cli("ingest", "runs", str(timing)) == 2
    err = capsys.readouterr().err
    assert "a KernelBench baseline timing file" in err and "kernelindex ingest kernelbench CHECKOUT" in err
    assert err.count("\n") < 10  # one refusal, not a JSON error per line
    assert counts(db_url) == before


def test_missing_file_is_fatal(cli, tmp_path, capsys):
    assert cli("ingest", "runs", str(tmp_path / "nope.jsonl")) == 2
    assert "no such file" in capsys.readouterr().err


def test_serve_on_a_busy_port_is_refused_before_announcing(cli, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert cli("serve", "--port", str(port)) == 2
    err = capsys.readouterr().err
    assert f"port {port} is in use on 127.0.0.1" in err
    assert "serving on" not in err
