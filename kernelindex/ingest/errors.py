"""Problems found in input, each naming where (file, line or key) and why."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class InputProblem:
    file: str
    where: str  # "line 12", "level3/9_ResNet18.py", ...
    reason: str
    key: str | None = None  # the field at fault, e.g. "statistics.mean"

    def __str__(self) -> str:
        key = f" [{self.key}]" if self.key else ""
        return f"{self.file}: {self.where}{key}: {self.reason}"


class IngestAborted(Exception):
    """--strict found problems: nothing was written. `total` counts problems beyond those kept."""

    def __init__(self, problems: list[InputProblem], total: int | None = None):
        self.problems = problems
        self.total = max(total or 0, len(problems))
        super().__init__(f"{self.total:,} problem(s) in the input; nothing written")


class IngestFatal(Exception):
    """The ingest cannot go on at all (no such file, no database): exit status 2."""
