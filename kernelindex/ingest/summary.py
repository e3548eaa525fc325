"""What an ingest did: the one summary every way in returns (`ingest runs`, `ingest kernelbench`, the
source imports `ingest kernelindex-export` and `ingest liger`, `submitRuns`, the fleet worker, the seed),
and the one way it is told.

Every part of the input a way in found is counted once, in exactly one outcome:

    found = inserted + unchanged + superseded + failed + skipped + rejected

- inserted: runs stored under a natural key not stored before;
- unchanged: runs already stored with the same content;
- superseded: runs stored with other content than the live run of their natural key, which they replace;
- failed: entries where the source recorded no timing, stored as failed runs (a KernelBench null entry);
- skipped: entries not imported, each with its reason (counts by reason, a few examples each);
- rejected: entries refused, each with its problem (the first MAX_KEPT_PROBLEMS kept, the rest counted).

`check()` raises AssertionError when the outcomes do not add up to what was found: an internal error,
never the input's. The field `inserted` counts every run written (the merge's count, superseding ones
included: what `submitRuns` returns and a record file's table says as "runs inserted"); the identity's
"inserted" term is `new`, those of them that replaced nothing (and so is "runs inserted" in a table
under a found row, whose rows add up to it).

What is found is the way in's unit: a line of a file of run records (catalogue lines that took effect
are not runs and are not counted), a record handed to the writer (`submitRuns`, the worker, the seed),
an entry of a KernelBench timing file, and for a source file a run part the adapter read or a line it
skipped or refused (its lines by table are accounted apart: `lines = read + skipped + refused`).

The writer fills one per batch (kernelindex.ingest.writer); a caller merges its batches' summaries
into one (`add_part`), keeping only the first problems (`add_problems`), and the CLI tells it
(kernelindex.cli.ingest.report) with its closing table (`table`) and its identity (`identity`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from kernelindex.ingest.errors import InputProblem

# Problems kept (and so printable) per ingest; the rest are counted.
MAX_KEPT_PROBLEMS = 1000
# Examples kept per reason an entry was skipped.
MAX_SKIP_EXAMPLES = 10

# A dry run writes nothing: its table says what the real run would do.
DRY_RUN_LABELS = {
    "runs inserted": "runs that would be inserted", "runs superseded": "runs that would be superseded",
    "runs rejected": "runs that would be rejected",
}


@dataclass
class IngestSummary:
    # What the way in calls an entry in the identity and its table ("timing entries"); None: a record of
    # the run-record format (a file's line, a submitted record), whose table is the runs table alone.
    unit: str | None = None
    # -- the identity
    found: int = 0
    inserted: int = 0  # every run written, superseding ones included (see the module)
    unchanged: int = 0
    superseded: int = 0  # of `inserted`, those that replaced the live run of their natural key
    failed: int = 0
    rejected: int = 0
    skipped: Counter[str] = field(default_factory=Counter)  # reason → entries
    skipped_examples: dict[str, list[str]] = field(default_factory=dict)
    problems: list[InputProblem] = field(default_factory=list)
    # Problems counted but not kept in `problems` (a file of a million bad lines keeps the first ones).
    problems_not_kept: int = 0
    warnings: list[str] = field(default_factory=list)
    # -- what the runs name
    workloads: set[int] = field(default_factory=set)
    implementations: set[int] = field(default_factory=set)
    environments: set[int] = field(default_factory=set)
    inserted_run_ids: list[int] = field(default_factory=list)
    # -- an import that writes a catalogue (KernelBench, a source file)
    imported: str | None = None  # what was imported, in words ("… at revision 423217d, observed …")
    notes: list[str] = field(default_factory=list)  # what it says before its table (upstream changes, …)
    catalogue: bool = False  # it writes workloads: their tallies are told
    workloads_inserted: int = 0
    workloads_new_revision: int = 0
    workloads_unchanged: int = 0
    outdated: bool = False  # a newer snapshot of every source it names is stored already
    runs_by_source: Counter[str] = field(default_factory=Counter)
    # -- a source file's lines by table: every line read (turned into parts), skipped (a table the index
    # does not model) or refused
    lines: Counter[str] = field(default_factory=Counter)
    lines_read: Counter[str] = field(default_factory=Counter)
    lines_skipped: Counter[str] = field(default_factory=Counter)
    lines_refused: Counter[str] = field(default_factory=Counter)
    # -- a KernelBench checkout: its problem files and their traces
    traced: bool = False  # problem files were traced: their tallies are told
    untraced: list[str] = field(default_factory=list)
    configured_from_constants: list[str] = field(default_factory=list)  # untraced, configuration read unrun
    unconfigured: list[str] = field(default_factory=list)  # untraced, configuration unreadable: timings skipped
    missing_modules: set[str] = field(default_factory=set)  # what failed traces could not import
    traces_reused: int = 0  # problems unchanged since this tracer last traced them
    traces_fresh: int = 0  # problems sent to the sandbox to be traced by this import
    changes: list[str] = field(default_factory=list)  # problems upstream replaced, renamed, removed or added
    refused_files: list[InputProblem] = field(default_factory=list)  # problem files not read: "path: file: why"
    contradictions: list[InputProblem] = field(default_factory=list)  # timing files whose entries' hardware is not their folder's

    # -- counting

    def merge(self, other: IngestSummary) -> None:
        """Another summary's counts and problems (all of them) into this one."""
        self.found += other.found
        self.inserted += other.inserted
        self.unchanged += other.unchanged
        self.superseded += other.superseded
        self.failed += other.failed
        self.rejected += other.rejected
        for reason, count in other.skipped.items():
            self.skip(reason, *other.skipped_examples.get(reason, []), count=count)
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

    def reject(self, problems: list[InputProblem]) -> None:
        """One entry found and rejected, with its problems (an entry may have several)."""
        self.found += 1
        self.rejected += 1
        self.add_problems(problems)

    def skip(self, reason: str, *examples: str, count: int = 1) -> None:
        """`count` entries skipped for this reason (counted found by the caller), a few examples kept."""
        self.skipped[reason] += count
        kept = self.skipped_examples.setdefault(reason, [])
        kept += list(examples[: max(MAX_SKIP_EXAMPLES - len(kept), 0)])

    def add_part(self, part: IngestSummary, *, counted: bool = False, failed: bool = False, keep_run_ids: bool = False) -> None:
        """A batch's summary into a long ingest's: its counts, and its problems under the cap. The
        run ids are not kept unless asked (keep_run_ids: a caller that answers with them, as
        submitRuns; a command does not tell them, and a list as long as the file would be its
        memory). counted: its entries were counted found as they were read (a KernelBench
        timing file), not again here. failed: its runs are entries the source timed nothing for,
        stored as failed runs: `failed`, whether written now or already stored."""
        problems, part.problems = part.problems, []
        if not keep_run_ids:
            part.inserted_run_ids = []
        if counted:
            part.found = 0
        if failed:
            part.failed += part.inserted + part.unchanged
            part.inserted = part.unchanged = part.superseded = 0
        self.merge(part)
        self.add_problems(problems)

    # -- the identity

    @property
    def new(self) -> int:
        """Runs inserted that replaced nothing: the identity's "inserted"."""
        return self.inserted - self.superseded

    @property
    def skipped_count(self) -> int:
        return sum(self.skipped.values())

    @property
    def accounted(self) -> int:
        return self.new + self.unchanged + self.superseded + self.failed + self.skipped_count + self.rejected

    @property
    def problem_count(self) -> int:
        return len(self.problems) + self.problems_not_kept

    def check(self) -> IngestSummary:
        """AssertionError unless every entry found is accounted for once (a way in's own error, never the
        input's); else the summary itself."""
        if self.accounted != self.found or self.new < 0:
            raise AssertionError(f"{self.unit or 'records'}: {self.found:,} found but {self.accounted:,} accounted for "
                                 f"({self.identity()})")
        lines = sum(self.lines.values())
        told = sum(self.lines_read.values()) + sum(self.lines_skipped.values()) + sum(self.lines_refused.values())
        if lines != told:
            raise AssertionError(f"lines: {lines:,} found but {told:,} accounted for")
        return self

    def identity(self) -> str:
        return (f"{self.unit or 'records'}: {self.found:,} found = {self.new:,} inserted + {self.unchanged:,} unchanged"
                f" + {self.superseded:,} superseded + {self.failed:,} failed + {self.skipped_count:,} skipped"
                f" + {self.rejected:,} rejected")

    def lines_identity(self) -> str | None:
        """A source file's lines: every line read, skipped or refused (None for the other ways in)."""
        if not self.lines:
            return None
        return (f"lines: {sum(self.lines.values()):,} = {sum(self.lines_read.values()):,} read + "
                f"{sum(self.lines_skipped.values()):,} skipped + {sum(self.lines_refused.values()):,} refused")

    # -- the closing table

    def table(self, *, dry_run: bool = False) -> list[tuple[str, int]]:
        """The closing table, the sections a way in fills: a source file's lines by table; the workloads
        of an import that writes them; a checkout's problem files; then the entries found, by outcome.
        A record file's (or a submission's) is the runs table alone. A dry run's says what would
        happen (DRY_RUN_LABELS)."""
        rows: list[tuple[str, int]] = []
        for table, count in sorted(self.lines.items()):
            rows.append((f"lines of {table}", count))
        rows += [(f"  skipped ({table}: not modelled)", count) for table, count in sorted(self.lines_skipped.items())]
        rows += [(f"  refused ({table})", count) for table, count in sorted(self.lines_refused.items())]
        if self.catalogue:
            rows += [
                ("workloads inserted", self.workloads_inserted),
                ("workloads with a new revision", self.workloads_new_revision),
                ("workloads unchanged", self.workloads_unchanged),
            ]
        if self.traced:
            rows += [
                ("workloads without semantics", len(self.untraced)),
                ("  configuration read from constants", len(self.configured_from_constants)),
                ("  configuration unknown", len(self.unconfigured)),
                ("problem files refused", len(self.refused_files)),
            ]
        dimensions = [("implementations", len(self.implementations)), ("environments", len(self.environments))]
        if self.unit is None:
            rows += [("workloads", len(self.workloads)), *dimensions]
            runs = [("runs inserted", self.inserted), ("runs unchanged", self.unchanged),
                    ("runs superseded", self.superseded), ("runs rejected", self.rejected)]
        else:
            runs = [
                (self.unit, self.found),
                # the identity's terms, which add up to what was found: here "inserted" is `new`
                ("  runs inserted", self.new), ("  runs unchanged", self.unchanged),
                ("  runs superseded", self.superseded), ("  failed (no timing recorded)", self.failed),
                ("  skipped", self.skipped_count),
                *((f"    {reason}", count) for reason, count in sorted(self.skipped.items())),
                ("  rejected", self.rejected),
            ]
        rows += runs
        if self.unit is not None and self.catalogue:  # (a file known unchanged, unread, names none it can count)
            rows += dimensions
        rows += [(f"  runs from {source}", count) for source, count in sorted(self.runs_by_source.items())]
        if not dry_run:
            return rows
        return [(label[: len(label) - len(label.lstrip())] + DRY_RUN_LABELS.get(label.strip(), label.strip()), value)
                for label, value in rows]


@dataclass(slots=True)
class Refused:
    """A record refused, with its index in its batch: a batch's problems are told in input order."""

    index: int
    problem: InputProblem
