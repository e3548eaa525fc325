"""perf.server_cpu: a process tree's CPU time from /proc, on a made-up /proc and on this machine's."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perf.server_cpu import postmaster_of, server_cpu, spent, tree_cpu_ticks


def _stat(proc: Path, pid: int, name: str, ppid: int, utime: int, stime: int, cutime: int, cstime: int) -> None:
    # proc(5): pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime …
    (proc / str(pid)).mkdir(parents=True)
    fields = ["S", ppid, 1, 1, 0, -1, 0, 0, 0, 0, 0, utime, stime, cutime, cstime, 20, 0, 1]
    (proc / str(pid) / "stat").write_text(f"{pid} ({name}) " + " ".join(str(f) for f in fields) + "\n")


def test_the_tree_counts_its_own_its_reaped_and_its_live_children(tmp_path):
    _stat(tmp_path, 100, "postgres", 1, utime=10, stime=5, cutime=200, cstime=40)  # 200+40: backends gone
    _stat(tmp_path, 101, "postgres: checkpointer ", 100, utime=3, stime=2, cutime=999, cstime=999)  # a child's own children: not ours
    _stat(tmp_path, 102, "postgres: u db (idle) )x", 100, utime=7, stime=1, cutime=0, cstime=0)  # ')' in the name
    _stat(tmp_path, 103, "other", 1, utime=500, stime=500, cutime=0, cstime=0)  # not the server's
    (tmp_path / "self").mkdir()  # not a pid
    assert tree_cpu_ticks(100, tmp_path) == 10 + 5 + 200 + 40 + 3 + 2 + 7 + 1
    assert tree_cpu_ticks(104, tmp_path) is None
    tick = os.sysconf("SC_CLK_TCK")
    assert server_cpu(100, tmp_path)() == pytest.approx(268 / tick)
    assert server_cpu(None, tmp_path)() is None
    assert server_cpu(100, tmp_path / "absent")() is None


def test_spent():
    assert spent(1.0, 3.5) == 2.5
    assert spent(None, 3.5) is None
    assert spent(1.0, None) is None


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="no /proc here (Linux only)")
def test_a_real_child_that_burns_cpu_and_exits_is_counted():
    # This process is the parent: a child that spends ~0.3 s of CPU and is reaped shows in our tree's count.
    read = server_cpu(os.getpid())
    before = read()
    subprocess.run([sys.executable, "-c", "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass"],
                   check=True)
    time.sleep(0.05)
    used = spent(before, read())
    assert used is not None and used >= 0.25, used


def test_a_backend_names_its_server(tmp_path):
    _stat(tmp_path, 200, "postgres", 1, utime=1, stime=1, cutime=0, cstime=0)
    _stat(tmp_path, 201, "postgres: postgres kernelindex [local] idle", 200, utime=1, stime=1, cutime=0, cstime=0)
    assert postmaster_of(201, tmp_path) == 200
    assert postmaster_of(202, tmp_path) is None  # not on this machine (a server elsewhere)
