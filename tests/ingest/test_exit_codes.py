"""Every exit status the README documents, one case each (the truth issue's point 9), and the README's list
held to the command's own constants. 130 and 143 (a signal while a command reads) and 141 (stdout's reader
gone) need a child process: tests/reliability/test_disk_full.py (test_interrupted_and_terminated_commands,
test_a_closed_stdout_is_quiet) and tests/ingest/test_untraced_problems.py (Ctrl+C during tracing)."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from kernelindex.cli import common
from kernelindex.ingest.seed import SEEDS_DIR
from tests.ingest.conftest import counts

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_lists_exactly_the_commands_codes():
    text = " ".join(README.read_text().split())
    sentence = text[text.index("Exit status: 0"):]
    sentence = sentence[:sentence.index("(`| head`)") + 10]
    documented = {int(code) for code in re.findall(r"(?:^|[;:] )(\d+) ", sentence.replace("Exit status: ", "; "))}
    constants = {common.EXIT_OK, common.EXIT_SOME_REJECTED, common.EXIT_FATAL, common.EXIT_NOTHING_WRITTEN,
                 common.EXIT_INTERRUPTED, common.EXIT_TERMINATED, common.EXIT_BROKEN_PIPE}
    assert documented == constants == {0, 1, 2, 3, 130, 141, 143}


def _records(tmp_path, bad: bool) -> Path:
    lines = (SEEDS_DIR / "runs.jsonl").read_text().splitlines()[:2]
    if bad:
        record = json.loads(lines[1])
        record["statistics"]["mean"] = -1
        lines[1] = json.dumps(record)
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_0_everything_landed(cli, tmp_path):
    assert cli("ingest", "runs", str(_records(tmp_path, bad=False))) == 0


def test_1_some_input_rejected_the_rest_landed(cli, db_url, tmp_path, capsys):
    assert cli("ingest", "runs", str(_records(tmp_path, bad=True))) == 1
    assert "line 2 [statistics.mean]" in capsys.readouterr().err


def test_3_strict_found_a_problem_nothing_written(cli, db_url, tmp_path):
    before = counts(db_url)
    assert cli("ingest", "runs", "--strict", str(_records(tmp_path, bad=True))) == 3
    assert counts(db_url) == before


@pytest.mark.parametrize(
    "case", ["missing file", "bad batch size", "missing checkout", "bad --observed", "unknown level", "busy port", "unknown argument"],
)
def test_2_a_fatal_error(cli, db_url, checkout, tmp_path, capsys, case):
    args = {
        "missing file": ("ingest", "runs", str(tmp_path / "none.jsonl")),
        "bad batch size": ("ingest", "runs", "--batch-size", "0", str(_records(tmp_path, bad=False))),
        "missing checkout": ("ingest", "kernelbench", str(tmp_path / "none"), "--revision", "a", "--observed", "2026-01-01"),
        "bad --observed": ("ingest", "kernelbench", str(checkout), "--revision", "a", "--observed", "2026-13-01"),
        "unknown level": ("ingest", "kernelbench", str(checkout), "--revision", "a", "--observed", "2026-01-01", "--levels", "9"),
        "unknown argument": ("ingest", "runs", "--colour", "x"),
    }
    before = counts(db_url)
    if case == "busy port":
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", 0))
            busy.listen()
            status = cli("serve", "--port", str(busy.getsockname()[1]))
    elif case == "unknown argument":
        with pytest.raises(SystemExit) as exited:  # argparse's own exit, in-process
            cli(*args[case])
        status = int(exited.value.code or 0)
    else:
        status = cli(*args[case])
    assert status == 2, capsys.readouterr().err
    assert counts(db_url) == before
