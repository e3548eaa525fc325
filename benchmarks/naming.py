"""Workload slugs and the level/number/name of a KernelBench problem path (torch-free).

The one rule for a workload's slug, shared by the importer (kernelindex.ingest.workloads.workload_slug
delegates here) and the runner (`kernelindex bench --file …/levelN/NN_Name.py`), so a run measured
from a checkout's file names the workload the importer stored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

PROBLEM_FILE = re.compile(r"^(\d+)_(.+)\.py$")
LEVEL_FOLDER = re.compile(r"^level(\d+)$")


def workload_slug(suite: str, level: int, problem: int, name: str) -> str:
    """kernelbench-l3-p9-resnet18: lower case, '_' and other separators as '-'."""
    cleaned = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return f"{suite}-l{level}-p{problem}-{cleaned}"


@dataclass(frozen=True)
class ProblemName:
    """Where a problem file sits in a checkout: ``…/level3/9_ResNet18.py`` is level 3, problem 9, ResNet18."""

    level: int
    number: int
    name: str
    suite: str = "kernelbench"

    @property
    def slug(self) -> str:
        return workload_slug(self.suite, self.level, self.number, self.name)


def level_number(text: str) -> int | None:
    """3 for "level3" (a checkout's folder, a timing file's key); None for anything else."""
    match = LEVEL_FOLDER.match(text)
    return int(match.group(1)) if match else None


def problem_name(path: str | PurePath) -> ProblemName | None:
    """The level, number and name of a path shaped ``…/levelN/NN_Name.py``; None for any other path."""
    path = PurePath(path)
    file_match = PROBLEM_FILE.match(path.name)
    level = level_number(path.parent.name)
    if not file_match or level is None:
        return None
    return ProblemName(level, int(file_match.group(1)), file_match.group(2))


def slug_for_path(path: str | PurePath) -> str | None:
    """The importer's slug for a checkout's problem file; None when the path is not ``…/levelN/NN_Name.py``."""
    found = problem_name(path)
    return found.slug if found else None
