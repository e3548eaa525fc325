"""Do the runner and the importer agree on every problem of a KernelBench checkout?

For each ``…/levelN/NN_Name.py``, the configuration the runner records for a canonical run
(benchmarks.problems.problem_bindings, what ``instantiate`` records) is compared with the canonical
configuration the importer stores (the tracer's bindings, traced in isolated workers as
``ingest kernelbench`` does; for a problem that cannot be traced, the configuration its constants state,
benchmarks.problem_constants). Needs torch (the CPU build is enough).

    python -m perf.problem_agreement PATH [--workers N] [--timeout S]

Prints "N of M problems agree" and one line per disagreement; exits 1 when any disagree.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.naming import problem_name
from benchmarks.problem_constants import UnreadableConfiguration, static_configuration
from benchmarks.problems import problem_bindings


@dataclass
class Result:
    path: Path
    slug: str
    runner: dict[str, int] | str  # bindings, or why there are none
    importer: dict[str, int] | str

    @property
    def agrees(self) -> bool:
        return isinstance(self.runner, dict) and self.runner == self.importer


@dataclass
class Report:
    results: list[Result] = field(default_factory=list)

    @property
    def disagreements(self) -> list[Result]:
        return [r for r in self.results if not r.agrees]

    def summary(self) -> str:
        return f"{len(self.results) - len(self.disagreements)} of {len(self.results)} problems agree"

    def text(self) -> str:
        lines = [self.summary()]
        for r in self.disagreements:
            lines.append(f"  {r.slug} ({r.path.parent.name}/{r.path.name}): runner {r.runner} importer {r.importer}")
        return "\n".join(lines)


def problem_files(root: Path) -> list[Path]:
    """Every levelN/NN_Name.py under root (a checkout's root or its KernelBench folder), by level and number."""
    base = root / "KernelBench" if (root / "KernelBench").is_dir() else root
    found = [(name, p) for p in base.glob("level*/*.py") if (name := problem_name(p))]
    return [p for _, p in sorted(found, key=lambda item: (item[0].level, item[0].number, item[1].name))]


def compare_checkout(root: Path, workers: int = 4, timeout_s: float = 120) -> Report:
    from kernelindex.ingest.problem_trace import ProblemTraceError, trace_problems_isolated

    paths = problem_files(root)
    sources = [p.read_text(encoding="utf-8", errors="replace") for p in paths]
    traces = trace_problems_isolated([(s, p.name) for s, p in zip(sources, paths)], timeout_s, workers)
    report = Report()
    for path, source, trace in zip(paths, sources, traces):
        name = problem_name(path)
        assert name is not None
        importer: dict[str, int] | str
        if isinstance(trace, ProblemTraceError):
            # What the importer stores for a problem it cannot trace: the configuration its constants state.
            try:
                importer = dict(static_configuration(source).bindings)
            except UnreadableConfiguration as exc:
                importer = f"untraced ({trace.stage}: {trace.message}) and unreadable ({exc})"
        else:
            importer = dict(trace.bindings)
        try:
            runner: dict[str, int] | str = problem_bindings(source, path.name)
        except (Exception, SystemExit) as exc:
            runner = f"failed ({type(exc).__name__}: {exc})"
        report.results.append(Result(path, name.slug, runner, importer))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path, help="a KernelBench checkout (or its KernelBench folder)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=120, help="seconds per problem for the importer's trace")
    args = parser.parse_args(argv)
    report = compare_checkout(args.path, args.workers, args.timeout)
    print(report.text())
    return 1 if report.disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
