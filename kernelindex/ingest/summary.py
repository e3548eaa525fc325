"""What an ingest did: the one summary every way in (`ingest runs`, `ingest kernelbench`,
`submitRuns`, the fleet worker, the seed) returns for its run records.

The writer fills one per batch (kernelindex.ingest.writer); a caller merges its batches' summaries
into one (`merge`), keeping only the first problems (`add_problems`: a file of a million bad lines
keeps the first ones and counts the rest), and the CLI prints its closing table (`table`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelindex.ingest.errors import InputProblem

# Problems kept (and so printable) per ingest; the rest are counted.
MAX_KEPT_PROBLEMS = 1000

# A dry run writes nothing: its table says what the real run would do.
DRY_RUN_LABELS = {
    "runs inserted": "runs that would be inserted", "runs superseded": "runs that would be superseded",
    "runs rejected": "runs that would be rejected",
}


@dataclass
class IngestSummary:
    inserted: int = 0
    unchanged: int = 0
    superseded: int = 0
    rejected: int = 0
    workloads: set[int] = field(default_factory=set)
    implementations: set[int] = field(default_factory=set)
    environments: set[int] = field(default_factory=set)
    problems: list[InputProblem] = field(default_factory=list)
    # Problems counted but not kept in `problems` (a file of a million bad lines keeps the first ones).
    problems_not_kept: int = 0
    warnings: list[str] = field(default_factory=list)
    inserted_run_ids: list[int] = field(default_factory=list)

    def merge(self, other: IngestSummary) -> None:
        self.inserted += other.inserted
        self.unchanged += other.unchanged
        self.superseded += other.superseded
        self.rejected += other.rejected
        self.workloads |= other.workloads
        self.implementations |= other.implementations
        self.environments |= other.environments
        self.problems += other.problems
        self.problems_not_kept += other.problems_not_kept
        self.warnings += other.warnings
        self.inserted_run_ids += other.inserted_run_ids

    def add_problems(self, problems: list[InputProblem], *, keep: int = MAX_KEPT_PROBLEMS) -> None:
        """Problems found, the first `keep` of the whole ingest kept and the rest counted."""
        room = max(keep - len(self.problems), 0)
        self.problems += problems[:room]
        self.problems_not_kept += max(len(problems) - room, 0)

    def add_part(self, part: IngestSummary) -> None:
        """A batch's summary into a long ingest's: its counts, and its problems under the cap. The
        run ids are not kept (the command does not tell them; a list as long as the file would be
        its memory)."""
        problems, part.problems = part.problems, []
        part.inserted_run_ids = []
        self.merge(part)
        self.add_problems(problems)

    @property
    def problem_count(self) -> int:
        return len(self.problems) + self.problems_not_kept

    def table(self, *, dry_run: bool = False) -> list[tuple[str, int]]:
        """The closing table; a dry run's says what would happen (DRY_RUN_LABELS)."""
        rows = [
            ("workloads", len(self.workloads)),
            ("implementations", len(self.implementations)),
            ("environments", len(self.environments)),
            ("runs inserted", self.inserted),
            ("runs unchanged", self.unchanged),
            ("runs superseded", self.superseded),
            ("runs rejected", self.rejected),
        ]
        return [(DRY_RUN_LABELS.get(name, name), value) for name, value in rows] if dry_run else rows


@dataclass(slots=True)
class Refused:
    """A record refused, with its index in its batch: a batch's problems are told in input order."""

    index: int
    problem: InputProblem
