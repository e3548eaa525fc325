"""kernelindex.ingest.progress: a bar with count, rate and ETA on a terminal; plain lines with the same
facts every few seconds anywhere else."""

from __future__ import annotations

import io
import re
import threading

from kernelindex.ingest.progress import Progress


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_every_few_seconds_with_rate_and_eta():
    clock, out = _Clock(), io.StringIO()
    bar = Progress("tracing problems", total=100, stream=out, every_s=2.0, clock=clock)
    for _ in range(8):  # 8 items in 1 s: no line yet
        clock.now += 0.125
        bar.advance(1, "a.py")
    assert out.getvalue() == ""
    clock.now += 1.0  # 2 s in, 9 done: 4.5/s, 91 left
    bar.advance(1, "b.py")
    assert out.getvalue() == "tracing problems: 9/100 (9%), 4.5/s, ETA 20 s b.py\n"
    clock.now += 0.5
    bar.advance(1)  # within 2 s of the last line: nothing
    assert out.getvalue().count("\n") == 1
    clock.now += 98.5
    bar.advance(90, "last.py")  # done: always a line, with the total time
    assert out.getvalue().splitlines()[-1] == "tracing problems: 100/100 (100%), in 1:41, 1.0/s last.py"
    bar.close()  # the end is already said
    assert out.getvalue().count("\n") == 2


def test_close_says_where_it_stopped_and_minutes_read_as_such():
    clock, out = _Clock(), io.StringIO()
    bar = Progress("ingest runs (bytes)", total=10_000_000, stream=out, clock=clock)
    clock.now += 150.0
    bar.advance(2_500_000)  # 150 s for a quarter: 450 s to go
    assert out.getvalue() == "ingest runs (bytes): 2,500,000/10,000,000 (25%), 16,667/s, ETA 7:30\n"
    bar.close()
    bar.advance(1)  # after close: ignored
    assert out.getvalue().count("\n") == 1
    unknown = io.StringIO()
    open_ended = Progress("ingest", stream=unknown, clock=clock)
    clock.now += 4.0
    open_ended.advance(20)
    open_ended.close()
    assert unknown.getvalue() == "ingest: 20, 5.0/s\n"


def test_a_terminal_gets_a_bar_with_count_rate_and_eta():
    out = _Terminal()
    bar = Progress("tracing problems", total=8, stream=out)
    workers = [threading.Thread(target=bar.advance_one, args=(f"{i}.py",)) for i in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    bar.close()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())  # the terminal's escape codes
    final = [line for line in text.splitlines() if "tracing problems" in line][-1]
    assert "3/8" in final and "/s" in final and "ETA" in final, text
    assert bar.done == 3
    assert "━" in final  # the bar itself
